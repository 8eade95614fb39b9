//! Protocol constants of the NBD protocol (NetworkBlockDevice/nbd `doc/proto.md`).
//!
//! Everything on the wire is big-endian. Only the values this server speaks or
//! has to recognise are listed; the rest of the number space is answered as
//! "unsupported".

// --- magic numbers -----------------------------------------------------------

/// "NBDMAGIC": first 8 bytes the server sends.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// "IHAVEOPT": the newstyle magic, sent by the server after `NBDMAGIC` and by
/// the client in front of every option.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Magic in front of every option reply (fixed newstyle).
pub const OPTION_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Magic of a (compact) transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic of an extended-header request; the only valid one after
/// `NBD_OPT_EXTENDED_HEADERS`, and invalid before.
pub const EXTENDED_REQUEST_MAGIC: u32 = 0x21e4_1c71;
/// Magic of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// Magic of a structured reply chunk (after `NBD_OPT_STRUCTURED_REPLY`).
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;
/// Magic of an extended reply chunk (every reply after `NBD_OPT_EXTENDED_HEADERS`).
pub const EXTENDED_REPLY_MAGIC: u32 = 0x6e8a_278c;

// --- handshake flags (server, 16 bits) ----------------------------------------

pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
pub const FLAG_NO_ZEROES: u16 = 1 << 1;

// --- client flags (32 bits) ---------------------------------------------------

pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
pub const FLAG_C_NO_ZEROES: u32 = 1 << 1;

// --- transmission flags (16 bits) ---------------------------------------------

pub const FLAG_HAS_FLAGS: u16 = 1 << 0;
pub const FLAG_READ_ONLY: u16 = 1 << 1;
pub const FLAG_SEND_FLUSH: u16 = 1 << 2;
pub const FLAG_SEND_FUA: u16 = 1 << 3;
pub const FLAG_ROTATIONAL: u16 = 1 << 4;
pub const FLAG_SEND_TRIM: u16 = 1 << 5;
pub const FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const FLAG_SEND_DF: u16 = 1 << 7;
pub const FLAG_CAN_MULTI_CONN: u16 = 1 << 8;
pub const FLAG_SEND_CACHE: u16 = 1 << 10;
pub const FLAG_SEND_FAST_ZERO: u16 = 1 << 11;

// --- options ------------------------------------------------------------------

pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_STARTTLS: u32 = 5;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const OPT_STRUCTURED_REPLY: u32 = 8;
pub const OPT_LIST_META_CONTEXT: u32 = 9;
pub const OPT_SET_META_CONTEXT: u32 = 10;
pub const OPT_EXTENDED_HEADERS: u32 = 11;

// --- option reply types ---------------------------------------------------------

pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
pub const REP_META_CONTEXT: u32 = 4;
/// Error replies have bit 31 set.
pub const REP_FLAG_ERROR: u32 = 1 << 31;
pub const REP_ERR_UNSUP: u32 = REP_FLAG_ERROR | 1;
pub const REP_ERR_POLICY: u32 = REP_FLAG_ERROR | 2;
pub const REP_ERR_INVALID: u32 = REP_FLAG_ERROR | 3;
pub const REP_ERR_PLATFORM: u32 = REP_FLAG_ERROR | 4;
pub const REP_ERR_TLS_REQD: u32 = REP_FLAG_ERROR | 5;
pub const REP_ERR_UNKNOWN: u32 = REP_FLAG_ERROR | 6;
pub const REP_ERR_SHUTDOWN: u32 = REP_FLAG_ERROR | 7;
pub const REP_ERR_BLOCK_SIZE_REQD: u32 = REP_FLAG_ERROR | 8;
pub const REP_ERR_TOO_BIG: u32 = REP_FLAG_ERROR | 9;
pub const REP_ERR_EXT_HEADER_REQD: u32 = REP_FLAG_ERROR | 10;

// --- NBD_INFO_* (inside NBD_REP_INFO) ------------------------------------------

pub const INFO_EXPORT: u16 = 0;
pub const INFO_NAME: u16 = 1;
pub const INFO_DESCRIPTION: u16 = 2;
pub const INFO_BLOCK_SIZE: u16 = 3;

// --- transmission commands -------------------------------------------------------

pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_CACHE: u16 = 5;
pub const CMD_WRITE_ZEROES: u16 = 6;
pub const CMD_BLOCK_STATUS: u16 = 7;

// --- command flags -----------------------------------------------------------------

pub const CMD_FLAG_FUA: u16 = 1 << 0;
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;
pub const CMD_FLAG_DF: u16 = 1 << 2;
pub const CMD_FLAG_REQ_ONE: u16 = 1 << 3;
pub const CMD_FLAG_FAST_ZERO: u16 = 1 << 4;
/// With extended headers: the header's length is the length of a payload
/// that follows (only WRITE has one here; on anything else it is refused).
pub const CMD_FLAG_PAYLOAD_LEN: u16 = 1 << 5;

// --- structured replies ---------------------------------------------------------------

/// Structured reply flag: the last chunk of a reply.
pub const REPLY_FLAG_DONE: u16 = 1 << 0;
pub const REPLY_TYPE_NONE: u16 = 0;
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
pub const REPLY_TYPE_OFFSET_HOLE: u16 = 2;
pub const REPLY_TYPE_BLOCK_STATUS: u16 = 5;
/// Block status with 64-bit descriptors (extended headers only, and then always).
pub const REPLY_TYPE_BLOCK_STATUS_EXT: u16 = 6;
/// Error chunk types have bit 15 set.
pub const REPLY_TYPE_ERROR: u16 = (1 << 15) | 1;
pub const REPLY_TYPE_ERROR_OFFSET: u16 = (1 << 15) | 2;

// --- metadata contexts ---------------------------------------------------------------

/// The one metadata context this server offers.
pub const CONTEXT_BASE_ALLOCATION: &str = "base:allocation";
/// Its id in `NBD_REP_META_CONTEXT` and block status chunks (any nonzero value;
/// 0 is what `NBD_OPT_LIST_META_CONTEXT` replies carry).
pub const CONTEXT_ID_BASE_ALLOCATION: u32 = 1;
/// `base:allocation` status flags.
pub const STATE_HOLE: u32 = 1 << 0;
pub const STATE_ZERO: u32 = 1 << 1;

// --- error values of the reply's error field ---------------------------------------

pub const EPERM: u32 = 1;
pub const EIO: u32 = 5;
pub const ENOMEM: u32 = 12;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;
pub const EOVERFLOW: u32 = 75;
pub const ENOTSUP: u32 = 95;
pub const ESHUTDOWN: u32 = 108;

// --- sizes and limits of this implementation ------------------------------------------

/// Longest string (export name, description) the protocol allows.
pub const MAX_STRING_LEN: usize = 4096;
/// Longest option payload accepted; a longer one ends the connection (the
/// largest legal one, `NBD_OPT_GO` with a 4096-byte name and a few info
/// requests, is far below this).
pub const MAX_OPTION_DATA: u32 = 64 * 1024;
/// Default largest READ/WRITE payload, advertised as the maximum block size.
/// 32 MiB is the value clients assume when a server says nothing.
pub const DEFAULT_MAX_BLOCK: u32 = 32 * 1024 * 1024;
/// Preferred block size advertised in `NBD_INFO_BLOCK_SIZE`.
pub const PREFERRED_BLOCK: u32 = 4096;

/// Server greeting: NBDMAGIC, IHAVEOPT, handshake flags.
pub const GREETING_LEN: usize = 18;
/// Option header sent by the client: IHAVEOPT, option, length.
pub const OPTION_HEADER_LEN: usize = 16;
/// Option reply header: magic, option, reply type, length.
pub const OPTION_REPLY_HEADER_LEN: usize = 20;
/// Compact request header: magic, flags, type, cookie, offset, length.
pub const REQUEST_HEADER_LEN: usize = 28;
/// Extended request header: magic, flags, type, cookie, offset, 64-bit length.
pub const EXTENDED_REQUEST_HEADER_LEN: usize = 32;
/// Simple reply header: magic, error, cookie.
pub const SIMPLE_REPLY_LEN: usize = 16;
/// Structured reply chunk header: magic, flags, type, cookie, length.
pub const CHUNK_HEADER_LEN: usize = 20;
/// Extended reply chunk header: magic, flags, type, cookie, offset, 64-bit length.
pub const EXTENDED_CHUNK_HEADER_LEN: usize = 32;
/// An `NBD_REPLY_TYPE_OFFSET_DATA` chunk's header and offset, before its data.
pub const OFFSET_DATA_HEADER_LEN: usize = CHUNK_HEADER_LEN + 8;
/// The same with an extended header.
pub const EXTENDED_OFFSET_DATA_HEADER_LEN: usize = EXTENDED_CHUNK_HEADER_LEN + 8;
/// Most extents one block status reply carries (a reply may cover less than
/// asked; the client asks again from where it stops).
pub const MAX_EXTENTS: usize = 4096;
/// Reserved zeroes after the `NBD_OPT_EXPORT_NAME` reply unless NO_ZEROES.
pub const EXPORT_NAME_ZEROES: usize = 124;
