//! ssdcache-nbd: the NBD wire protocol, without I/O and without cache knowledge: constants, the fixed newstyle
//! negotiation as a state machine, request parsing and validation, reply
//! builders, and execution of a validated request against a
//! [`Backend`](ssdcache_block::Backend).
//!
//! Reference: the protocol document of the NetworkBlockDevice/nbd project
//! (`doc/proto.md`). Structured replies ([`structured`]), the
//! `base:allocation` metadata context ([`meta_context`]) with
//! `NBD_CMD_BLOCK_STATUS`, and `NBD_CMD_CACHE` are implemented. `NBD_OPT_STARTTLS` is negotiated here
//! (the TLS session itself is the server's). Extended headers
//! (`NBD_OPT_EXTENDED_HEADERS`, 64-bit lengths) and fast zeroes are too. Not
//! implemented: oldstyle negotiation, block status payloads, resize. Options and commands for them are answered with
//! `NBD_REP_ERR_UNSUP` / `EINVAL` as the spec asks.

pub mod consts;
pub mod handshake;
pub mod meta_context;
pub mod request;
pub mod structured;

pub use handshake::{ExportInfo, HandshakeError, Negotiation, Progress};
pub use request::{decide, direct, execute, parse_request_header, Command, Decision, ExportParams, RequestHeader};
pub use structured::Session;
