//! The NBD wire protocol, without I/O: constants, the fixed newstyle
//! negotiation as a state machine, request parsing and validation, reply
//! builders, and execution of a validated request against a
//! [`Backend`](crate::backend::Backend).
//!
//! Reference: the protocol document of the NetworkBlockDevice/nbd project
//! (`doc/proto.md`). Not implemented: oldstyle negotiation, TLS, structured
//! replies, metadata contexts / block status, extended headers, NBD_CMD_CACHE,
//! fast zero, resize. Options and commands for them are answered with
//! `NBD_REP_ERR_UNSUP` / `EINVAL` as the spec asks.

pub mod consts;
pub mod handshake;
pub mod request;

pub use handshake::{ExportInfo, HandshakeError, Negotiation, Progress};
pub use request::{decide, execute, parse_request_header, Command, Decision, ExportParams, RequestHeader};
