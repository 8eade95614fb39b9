//! Transmission phase: request header parsing, validation, execution against a
//! [`Backend`], and simple replies.
//!
//! The flow for one request is [`parse_request_header`] → [`decide`] (pure:
//! what to do, including which error to answer, and how many payload bytes
//! follow on the wire) → [`execute`] (runs a validated command, builds the
//! whole reply). Replies are simple ones, or structured chunks when the
//! client negotiated them ([`Session`]; see [`super::structured`]), or
//! extended chunks after `NBD_OPT_EXTENDED_HEADERS`; a failed READ gets an
//! error header (or error chunk) and no data, and the connection goes on.
//!
//! Error choices (the spec's SHOULDs where it has them): out-of-range WRITE
//! and WRITE_ZEROES → ENOSPC, out-of-range READ and TRIM → EINVAL; writes on a
//! read-only export → EPERM; unknown commands and flags a command does not
//! take → EINVAL (FUA is accepted on every command, as the spec requires once
//! `SEND_FUA` is advertised); a READ longer than the maximum block size →
//! EINVAL; a WRITE longer than it → EINVAL and then the connection closes,
//! because its payload is not read. FLUSH ignores its offset and length
//! fields (reserved, zero from every known client). DF on a READ only with
//! structured replies (it is advertised only then). CACHE: FUA only, in
//! bounds, at most the maximum block size (the spec's limit for it), allowed
//! on a read-only export (it reads); with extended headers any length in
//! bounds, of which the first maximum block size is hinted (a hint may do
//! less). BLOCK_STATUS: only once a context was negotiated, flags FUA and
//! REQ_ONE, in bounds, not of length 0 (no descriptor could describe it).
//! TRIM and WRITE_ZEROES of length 0 → EINVAL (nothing to do, and no client
//! sends one); WRITE_ZEROES takes NO_HOLE and FAST_ZERO (whose refusal,
//! when the zeroes cannot be fast, is the backend's ENOTSUP).
//!
//! Extended headers (`Session::extended`): the header is 32 bytes with a
//! 64-bit length, so TRIM, WRITE_ZEROES, BLOCK_STATUS and CACHE may cover
//! 4 GiB and more, while a READ or WRITE stays within the maximum block size
//! (a longer WRITE is refused and the connection closed before its payload
//! is read, as without them). `NBD_CMD_FLAG_PAYLOAD_LEN` says the length is
//! a payload's: redundant (and accepted) on a WRITE; on any other command
//! (BLOCK_STATUS included: this server does not advertise
//! `NBD_FLAG_BLOCK_STAT_PAYLOAD`) EINVAL after its payload is read and
//! discarded, or, over the maximum block size, EINVAL and then the
//! connection closes. Without extended headers the flag is unknown (EINVAL).

use super::consts::*;
use super::structured::{self, Session};
use ssdcache_block::Backend;
use std::borrow::Cow;
use std::io;

/// A parsed request header, compact or extended (`length` is 32 bits wide
/// in a compact one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    pub flags: u16,
    pub kind: u16,
    pub cookie: u64,
    pub offset: u64,
    pub length: u64,
}

/// A request header that cannot be parsed: the connection has lost sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("bad request magic {0:#010x}")]
    BadMagic(u32),
    #[error("request header of {0} bytes")]
    WrongLength(usize),
}

/// Parses a request header: 28 bytes with the compact magic, or 32 bytes
/// with the extended one (the caller reads as many as its session's
/// [`Session::request_header_len`], so the other magic is an error). Only
/// the magic is checked here.
pub fn parse_request_header(buf: &[u8]) -> Result<RequestHeader, HeaderError> {
    let (want, length) = match buf.len() {
        REQUEST_HEADER_LEN => (REQUEST_MAGIC, u32::from_be_bytes([buf[24], buf[25], buf[26], buf[27]]) as u64),
        EXTENDED_REQUEST_HEADER_LEN => (EXTENDED_REQUEST_MAGIC, be_u64(&buf[24..32])),
        n => return Err(HeaderError::WrongLength(n)),
    };
    let magic = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if magic != want {
        return Err(HeaderError::BadMagic(magic));
    }
    Ok(RequestHeader {
        flags: u16::from_be_bytes([buf[4], buf[5]]),
        kind: u16::from_be_bytes([buf[6], buf[7]]),
        cookie: be_u64(&buf[8..16]),
        offset: be_u64(&buf[16..24]),
        length,
    })
}

fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// Builds a compact request header (clients and tests); the length is cut to 32 bits.
pub fn encode_request_header(h: &RequestHeader) -> [u8; REQUEST_HEADER_LEN] {
    let mut b = [0u8; REQUEST_HEADER_LEN];
    b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&h.flags.to_be_bytes());
    b[6..8].copy_from_slice(&h.kind.to_be_bytes());
    b[8..16].copy_from_slice(&h.cookie.to_be_bytes());
    b[16..24].copy_from_slice(&h.offset.to_be_bytes());
    b[24..28].copy_from_slice(&(h.length as u32).to_be_bytes());
    b
}

/// Builds an extended request header (clients and tests).
pub fn encode_extended_request_header(h: &RequestHeader) -> [u8; EXTENDED_REQUEST_HEADER_LEN] {
    let mut b = [0u8; EXTENDED_REQUEST_HEADER_LEN];
    b[0..4].copy_from_slice(&EXTENDED_REQUEST_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&h.flags.to_be_bytes());
    b[6..8].copy_from_slice(&h.kind.to_be_bytes());
    b[8..16].copy_from_slice(&h.cookie.to_be_bytes());
    b[16..24].copy_from_slice(&h.offset.to_be_bytes());
    b[24..32].copy_from_slice(&h.length.to_be_bytes());
    b
}

/// What [`decide`] needs to know about the export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportParams {
    pub size: u64,
    pub max_block: u32,
    pub read_only: bool,
    /// Structured replies are on: READ takes `NBD_CMD_FLAG_DF`.
    pub structured: bool,
    /// A metadata context is selected: BLOCK_STATUS is valid.
    pub block_status: bool,
    /// Extended headers are on: 64-bit lengths, `NBD_CMD_FLAG_PAYLOAD_LEN`.
    pub extended: bool,
}

impl ExportParams {
    /// The parameters of a connection on this export that negotiated `session`.
    pub fn for_session(self, session: &Session) -> Self {
        ExportParams {
            structured: session.structured,
            block_status: session.allocation.is_some(),
            extended: session.extended,
            ..self
        }
    }
}

/// A validated command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Read {
        offset: u64,
        len: u32,
    },
    /// `len` payload bytes follow the header.
    Write {
        offset: u64,
        len: u32,
        fua: bool,
    },
    Flush,
    Trim {
        offset: u64,
        len: u64,
        fua: bool,
    },
    WriteZeroes {
        offset: u64,
        len: u64,
        no_hole: bool,
        /// `NBD_CMD_FLAG_FAST_ZERO`: only if it is fast, else ENOTSUP.
        fast: bool,
        fua: bool,
    },
    /// `NBD_CMD_CACHE`: bring the range in (a hint).
    Cache {
        offset: u64,
        len: u32,
    },
    /// `NBD_CMD_BLOCK_STATUS` for `base:allocation`.
    BlockStatus {
        offset: u64,
        len: u64,
        req_one: bool,
    },
}

impl Command {
    /// Payload bytes that follow the header on the wire.
    pub fn payload_len(&self) -> u32 {
        match *self {
            Command::Write { len, .. } => len,
            _ => 0,
        }
    }

    /// Bytes of data this command holds in memory while in flight (the write
    /// payload or the read buffer).
    pub fn buffer_len(&self) -> u32 {
        match *self {
            Command::Write { len, .. } | Command::Read { len, .. } => len,
            _ => 0,
        }
    }

    /// The offset the request names (0 for FLUSH); extended replies echo it.
    pub fn offset(&self) -> u64 {
        match *self {
            Command::Flush => 0,
            Command::Read { offset, .. }
            | Command::Write { offset, .. }
            | Command::Trim { offset, .. }
            | Command::WriteZeroes { offset, .. }
            | Command::Cache { offset, .. }
            | Command::BlockStatus { offset, .. } => offset,
        }
    }
}

/// What to do with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run it (after reading its payload, for a write).
    Execute(Command),
    /// Answer `errno` without touching the backend, after reading and
    /// discarding `discard` payload bytes (at most the maximum block size).
    Reject { errno: u32, discard: u32 },
    /// `NBD_CMD_DISC`: finish what is in flight, send no reply, close.
    Disconnect,
    /// Answer `errno`, then close: the payload is too large to read.
    Fatal { errno: u32 },
}

/// Checks `offset + len <= size` without overflow.
fn in_bounds(offset: u64, len: u64, size: u64) -> bool {
    offset.checked_add(len).is_some_and(|end| end <= size)
}

/// Validates a request against the export. Pure; never allocates.
pub fn decide(h: &RequestHeader, ex: &ExportParams) -> Decision {
    let (offset, len) = (h.offset, h.length);
    let fua = h.flags & CMD_FLAG_FUA != 0;
    let flags_ok = |allowed: u16| h.flags & !allowed == 0;
    let reject = |errno| Decision::Reject { errno, discard: 0 };
    // A compact header's length has 32 bits: only an extended one can be longer.
    let fits_block = len <= ex.max_block as u64;
    if ex.extended && h.flags & CMD_FLAG_PAYLOAD_LEN != 0 && h.kind != CMD_WRITE {
        // A payload this server takes on no command but WRITE: read and
        // dropped if it fits a block, else the connection cannot go on.
        return if fits_block {
            Decision::Reject { errno: EINVAL, discard: len as u32 }
        } else {
            Decision::Fatal { errno: EINVAL }
        };
    }
    match h.kind {
        CMD_READ => {
            let df = if ex.structured { CMD_FLAG_DF } else { 0 };
            if !flags_ok(CMD_FLAG_FUA | df) || !fits_block || !in_bounds(offset, len, ex.size) {
                reject(EINVAL)
            } else {
                Decision::Execute(Command::Read { offset, len: len as u32 })
            }
        }
        CMD_WRITE => {
            if !fits_block {
                return Decision::Fatal { errno: EINVAL };
            }
            let payload_len = if ex.extended { CMD_FLAG_PAYLOAD_LEN } else { 0 };
            let errno = if !flags_ok(CMD_FLAG_FUA | payload_len) {
                EINVAL
            } else if ex.read_only {
                EPERM
            } else if !in_bounds(offset, len, ex.size) {
                ENOSPC
            } else {
                return Decision::Execute(Command::Write { offset, len: len as u32, fua });
            };
            Decision::Reject { errno, discard: len as u32 }
        }
        CMD_DISC => Decision::Disconnect,
        CMD_FLUSH if flags_ok(CMD_FLAG_FUA) => Decision::Execute(Command::Flush),
        CMD_TRIM | CMD_WRITE_ZEROES => {
            let zeroes = h.kind == CMD_WRITE_ZEROES;
            let allowed = if zeroes { CMD_FLAG_FUA | CMD_FLAG_NO_HOLE | CMD_FLAG_FAST_ZERO } else { CMD_FLAG_FUA };
            if !flags_ok(allowed) || len == 0 {
                reject(EINVAL)
            } else if ex.read_only {
                reject(EPERM)
            } else if !in_bounds(offset, len, ex.size) {
                reject(if zeroes { ENOSPC } else { EINVAL })
            } else if zeroes {
                let no_hole = h.flags & CMD_FLAG_NO_HOLE != 0;
                let fast = h.flags & CMD_FLAG_FAST_ZERO != 0;
                Decision::Execute(Command::WriteZeroes { offset, len, no_hole, fast, fua })
            } else {
                Decision::Execute(Command::Trim { offset, len, fua })
            }
        }
        CMD_CACHE => {
            if !flags_ok(CMD_FLAG_FUA) || (!ex.extended && !fits_block) || !in_bounds(offset, len, ex.size) {
                reject(EINVAL)
            } else {
                Decision::Execute(Command::Cache { offset, len: len.min(ex.max_block as u64) as u32 })
            }
        }
        CMD_BLOCK_STATUS => {
            if !ex.block_status
                || !flags_ok(CMD_FLAG_FUA | CMD_FLAG_REQ_ONE)
                || len == 0
                || !in_bounds(offset, len, ex.size)
            {
                reject(EINVAL)
            } else {
                let req_one = h.flags & CMD_FLAG_REQ_ONE != 0;
                Decision::Execute(Command::BlockStatus { offset, len, req_one })
            }
        }
        // FLUSH with bad flags and anything unknown. Only WRITE (or a
        // PAYLOAD_LEN request, above) carries a payload, so there is nothing
        // to discard.
        _ => reject(EINVAL),
    }
}

/// Writes a simple reply header into `buf[..16]`.
pub fn put_simple_reply(buf: &mut [u8], cookie: u64, errno: u32) {
    buf[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    buf[4..8].copy_from_slice(&errno.to_be_bytes());
    buf[8..16].copy_from_slice(&cookie.to_be_bytes());
}

/// A simple reply header.
pub fn simple_reply(cookie: u64, errno: u32) -> [u8; SIMPLE_REPLY_LEN] {
    let mut b = [0u8; SIMPLE_REPLY_LEN];
    put_simple_reply(&mut b, cookie, errno);
    b
}

/// A parsed simple reply header (clients and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimpleReply {
    pub errno: u32,
    pub cookie: u64,
}

/// Parses a simple reply header; `None` on a bad magic or length.
pub fn parse_simple_reply(buf: &[u8]) -> Option<SimpleReply> {
    if buf.len() != SIMPLE_REPLY_LEN || buf[0..4] != SIMPLE_REPLY_MAGIC.to_be_bytes() {
        return None;
    }
    let mut c = [0u8; 8];
    c.copy_from_slice(&buf[8..16]);
    Some(SimpleReply { errno: u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]), cookie: u64::from_be_bytes(c) })
}

/// Maps an I/O error to the protocol's error values.
pub fn errno_of(e: &io::Error) -> u32 {
    if let Some(code) = e.raw_os_error() {
        return match code {
            libc::EPERM | libc::EACCES | libc::EROFS => EPERM,
            libc::ENOMEM => ENOMEM,
            libc::EINVAL => EINVAL,
            libc::ENOSPC | libc::EDQUOT | libc::EFBIG => ENOSPC,
            libc::EOVERFLOW => EOVERFLOW,
            libc::EOPNOTSUPP => ENOTSUP,
            libc::ESHUTDOWN => ESHUTDOWN,
            _ => EIO,
        };
    }
    match e.kind() {
        io::ErrorKind::PermissionDenied => EPERM,
        io::ErrorKind::InvalidInput => EINVAL,
        io::ErrorKind::OutOfMemory => ENOMEM,
        io::ErrorKind::Unsupported => ENOTSUP,
        _ => EIO,
    }
}

/// The reply to a request (at `offset`) refused or failed with `errno`: a
/// simple reply, or with structured replies an `NBD_REPLY_TYPE_ERROR` chunk
/// (required for a READ, preferred by the spec for the rest; with extended
/// headers the only kind of reply there is).
pub fn error_reply(session: &Session, cookie: u64, offset: u64, errno: u32) -> Vec<u8> {
    if session.structured || session.extended {
        structured::error_chunk(session, cookie, offset, errno)
    } else {
        simple_reply(cookie, errno).to_vec()
    }
}

/// The reply to a request that succeeded without data: a simple reply, or
/// with extended headers a lone `NBD_REPLY_TYPE_NONE` chunk.
pub fn ok_reply(session: &Session, cookie: u64, offset: u64) -> Vec<u8> {
    if session.extended {
        structured::none_chunk(session, cookie, offset)
    } else {
        simple_reply(cookie, 0).to_vec()
    }
}

/// Bytes in front of a successful read's data: a simple reply header, or an
/// `OFFSET_DATA` chunk's header and offset.
pub fn read_header_len(session: &Session) -> usize {
    if session.extended {
        EXTENDED_OFFSET_DATA_HEADER_LEN
    } else if session.structured {
        OFFSET_DATA_HEADER_LEN
    } else {
        SIMPLE_REPLY_LEN
    }
}

/// The reply to a successful read whose `len` bytes sit in
/// `buf[read_header_len..][..len]`: writes the header in front and returns
/// how many bytes of `buf` to send. A zero-length structured read cannot be
/// a data chunk (it must carry a byte): it is a lone NONE chunk, rewritten
/// into `buf` (which then holds at least its chunk header).
pub fn finish_read(session: &Session, buf: &mut [u8], cookie: u64, offset: u64, len: u32) -> usize {
    if !session.structured && !session.extended {
        put_simple_reply(&mut buf[..SIMPLE_REPLY_LEN], cookie, 0);
        SIMPLE_REPLY_LEN + len as usize
    } else if len == 0 {
        let none = structured::none_chunk(session, cookie, offset);
        buf[..none.len()].copy_from_slice(&none);
        none.len()
    } else {
        structured::put_offset_data_header(session, buf, cookie, offset, len);
        read_header_len(session) + len as usize
    }
}

/// The reply to a failed read: a simple error reply, or an
/// `NBD_REPLY_TYPE_ERROR_OFFSET` at the read's offset (no data went out).
pub fn read_failed(session: &Session, cookie: u64, offset: u64, errno: u32) -> Vec<u8> {
    if session.structured || session.extended {
        structured::error_offset_chunk(session, cookie, errno, offset)
    } else {
        simple_reply(cookie, errno).to_vec()
    }
}

/// Runs a block status query and builds its reply chunk (`allocation` is the
/// negotiated context id): 32-bit descriptors, or 64-bit ones with extended
/// headers. The backend's extents are checked: they must cover at least one
/// byte from the offset, else it is an EIO.
pub fn block_status_reply(
    session: &Session,
    backend: &dyn Backend,
    cookie: u64,
    allocation: u32,
    offset: u64,
    len: u64,
    req_one: bool,
) -> io::Result<Vec<u8>> {
    let max = if req_one { 1 } else { MAX_EXTENTS };
    let extents = backend.block_status(offset, len, max)?;
    let max_desc = if session.extended { u64::MAX } else { structured::MAX_COMPACT_DESCRIPTOR };
    let d = structured::descriptors(&extents, len, req_one, max_desc);
    if d.is_empty() {
        return Err(io::Error::other("the backend reported no extent"));
    }
    Ok(structured::block_status_chunk(session, cookie, offset, allocation, &d))
}

/// Runs a backend call as it is (see [`execute`]'s `call`).
pub fn direct(f: &mut dyn FnMut() -> io::Result<()>) -> io::Result<()> {
    f()
}

/// Runs a validated command and returns its complete reply (header, plus the
/// data for a successful read) as `session` has replies. The one executor:
/// the server's connections and the fuzz target both run requests here.
///
/// `buf` holds a write's payload (its first `len` bytes) on entry; a read's
/// data is read into it in place behind the reply's header, so a read
/// reply borrows it (it grows to the read's length, checked against the
/// maximum block size by [`decide`]). `call` makes the one backend call: the
/// server's catches a panic as an error, [`direct`] just calls it.
pub fn execute<'b>(
    session: &Session,
    backend: &dyn Backend,
    cmd: &Command,
    cookie: u64,
    buf: &'b mut Vec<u8>,
    call: impl FnOnce(&mut dyn FnMut() -> io::Result<()>) -> io::Result<()>,
) -> Cow<'b, [u8]> {
    let result = match *cmd {
        Command::Read { offset, len } => {
            let head = read_header_len(session);
            let n = (head + len as usize).max(EXTENDED_CHUNK_HEADER_LEN);
            if buf.len() < n {
                *buf = Vec::new(); // freed before the larger one is made
                *buf = vec![0u8; n];
            }
            match call(&mut || backend.read_at(&mut buf[head..head + len as usize], offset)) {
                Ok(()) => {
                    let n = finish_read(session, buf, cookie, offset, len);
                    return Cow::Borrowed(&buf[..n]);
                }
                Err(e) => {
                    log::debug!("{cmd:?} failed: {e}");
                    return Cow::Owned(read_failed(session, cookie, offset, errno_of(&e)));
                }
            }
        }
        Command::BlockStatus { offset, len, req_one } => {
            // decide admits BLOCK_STATUS only with a context, so `allocation` is set.
            let id = session.allocation.unwrap_or(CONTEXT_ID_BASE_ALLOCATION);
            let mut reply = Vec::new();
            match call(&mut || {
                reply = block_status_reply(session, backend, cookie, id, offset, len, req_one)?;
                Ok(())
            }) {
                Ok(()) => return Cow::Owned(reply),
                Err(e) => Err(e),
            }
        }
        Command::Write { len, .. } if buf.len() < len as usize => {
            Err(io::Error::new(io::ErrorKind::InvalidInput, "payload length mismatch"))
        }
        Command::Write { offset, len, fua } => call(&mut || backend.write_at(&buf[..len as usize], offset, fua)),
        Command::Cache { offset, len } => call(&mut || backend.cache(offset, len as u64)),
        Command::Flush => call(&mut || backend.flush()),
        Command::Trim { offset, len, fua } => call(&mut || backend.trim(offset, len, fua)),
        Command::WriteZeroes { offset, len, no_hole, fast: false, fua } => {
            call(&mut || backend.write_zeroes(offset, len, no_hole, fua))
        }
        Command::WriteZeroes { offset, len, no_hole, fast: true, fua } => {
            call(&mut || backend.fast_zeroes(offset, len, no_hole, fua))
        }
    };
    match &result {
        Ok(()) => Cow::Owned(ok_reply(session, cookie, cmd.offset())),
        Err(e) => {
            log::debug!("{cmd:?} failed: {e}");
            Cow::Owned(error_reply(session, cookie, cmd.offset(), errno_of(e)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ssdcache_block::MemBackend;

    const EX: ExportParams = ExportParams {
        size: 1 << 20,
        max_block: 1 << 16,
        read_only: false,
        structured: false,
        block_status: false,
        extended: false,
    };

    /// One request through the executor, its payload in a buffer of its own.
    fn execute_in(s: &Session, m: &MemBackend, cmd: &Command, cookie: u64, payload: &[u8]) -> Vec<u8> {
        super::execute(s, m, cmd, cookie, &mut payload.to_vec(), direct).into_owned()
    }

    /// [`execute_in`] without structured replies.
    fn execute(m: &MemBackend, cmd: &Command, cookie: u64, payload: &[u8]) -> Vec<u8> {
        execute_in(&Session::default(), m, cmd, cookie, payload)
    }

    fn hdr(kind: u16, flags: u16, offset: u64, length: u64) -> RequestHeader {
        RequestHeader { flags, kind, cookie: 0x1122_3344_5566_7788, offset, length }
    }

    #[test]
    fn header_roundtrip_and_layout() {
        let h = hdr(CMD_WRITE, CMD_FLAG_FUA, 0x0102_0304_0506_0708, 0x0a0b_0c0d);
        let b = encode_request_header(&h);
        assert_eq!(&b[0..4], &[0x25, 0x60, 0x95, 0x13]);
        assert_eq!(&b[4..8], &[0, 1, 0, 1]);
        assert_eq!(&b[8..16], &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);
        assert_eq!(&b[24..28], &[0x0a, 0x0b, 0x0c, 0x0d]);
        assert_eq!(parse_request_header(&b), Ok(h));
    }

    #[test]
    fn header_errors() {
        let mut b = encode_request_header(&hdr(0, 0, 0, 0));
        assert_eq!(parse_request_header(&b[..27]), Err(HeaderError::WrongLength(27)));
        // each length wants its own magic
        let mut e = encode_extended_request_header(&hdr(0, 0, 0, 0));
        e[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        assert_eq!(parse_request_header(&e), Err(HeaderError::BadMagic(REQUEST_MAGIC)));
        assert_eq!(parse_request_header(&[]), Err(HeaderError::WrongLength(0)));
        b[0..4].copy_from_slice(&EXTENDED_REQUEST_MAGIC.to_be_bytes());
        assert_eq!(parse_request_header(&b), Err(HeaderError::BadMagic(EXTENDED_REQUEST_MAGIC)));
        b[0] = 0;
        assert!(matches!(parse_request_header(&b), Err(HeaderError::BadMagic(_))));
    }

    #[test]
    fn decide_reads() {
        assert_eq!(decide(&hdr(CMD_READ, 0, 0, 512), &EX), Decision::Execute(Command::Read { offset: 0, len: 512 }));
        assert_eq!(
            decide(&hdr(CMD_READ, CMD_FLAG_FUA, (1 << 20) - 1, 1), &EX),
            Decision::Execute(Command::Read { offset: (1 << 20) - 1, len: 1 })
        );
        let einval = Decision::Reject { errno: EINVAL, discard: 0 };
        assert_eq!(decide(&hdr(CMD_READ, 0, 1 << 20, 1), &EX), einval); // past the end
        assert_eq!(decide(&hdr(CMD_READ, 0, u64::MAX, 2), &EX), einval); // overflow
        assert_eq!(decide(&hdr(CMD_READ, 0, 0, (1 << 16) + 1), &EX), einval); // too big
        assert_eq!(decide(&hdr(CMD_READ, CMD_FLAG_DF, 0, 1), &EX), einval); // DF not offered
        assert_eq!(decide(&hdr(CMD_READ, 0x8000, 0, 1), &EX), einval);
        // zero-length read at the very end is in bounds
        assert!(matches!(decide(&hdr(CMD_READ, 0, 1 << 20, 0), &EX), Decision::Execute(_)));
    }

    #[test]
    fn decide_writes() {
        assert_eq!(
            decide(&hdr(CMD_WRITE, CMD_FLAG_FUA, 8, 4), &EX),
            Decision::Execute(Command::Write { offset: 8, len: 4, fua: true })
        );
        assert_eq!(decide(&hdr(CMD_WRITE, 0, 1 << 20, 4), &EX), Decision::Reject { errno: ENOSPC, discard: 4 });
        assert_eq!(decide(&hdr(CMD_WRITE, 0, u64::MAX, 4), &EX), Decision::Reject { errno: ENOSPC, discard: 4 });
        assert_eq!(
            decide(&hdr(CMD_WRITE, CMD_FLAG_NO_HOLE, 0, 4), &EX),
            Decision::Reject { errno: EINVAL, discard: 4 }
        );
        let ro = ExportParams { read_only: true, ..EX };
        assert_eq!(decide(&hdr(CMD_WRITE, 0, 0, 4), &ro), Decision::Reject { errno: EPERM, discard: 4 });
        // a payload over the maximum block size is never read
        assert_eq!(decide(&hdr(CMD_WRITE, 0, 0, (1 << 16) + 1), &EX), Decision::Fatal { errno: EINVAL });
        assert_eq!(decide(&hdr(CMD_WRITE, 0, 0, u32::MAX as u64), &ro), Decision::Fatal { errno: EINVAL });
    }

    #[test]
    fn decide_others() {
        assert_eq!(decide(&hdr(CMD_DISC, 0, 0, 0), &EX), Decision::Disconnect);
        assert_eq!(decide(&hdr(CMD_FLUSH, 0, 0, 0), &EX), Decision::Execute(Command::Flush));
        assert_eq!(decide(&hdr(CMD_FLUSH, CMD_FLAG_FUA, 5, 5), &EX), Decision::Execute(Command::Flush));
        let einval = Decision::Reject { errno: EINVAL, discard: 0 };
        assert_eq!(decide(&hdr(CMD_FLUSH, CMD_FLAG_NO_HOLE, 0, 0), &EX), einval);
        assert_eq!(
            decide(&hdr(CMD_TRIM, CMD_FLAG_FUA, 0, u32::MAX as u64), &ExportParams { size: u64::MAX, ..EX }),
            Decision::Execute(Command::Trim { offset: 0, len: u32::MAX as u64, fua: true })
        );
        assert_eq!(decide(&hdr(CMD_TRIM, 0, 1 << 20, 1), &EX), einval);
        assert_eq!(decide(&hdr(CMD_TRIM, CMD_FLAG_NO_HOLE, 0, 1), &EX), einval);
        assert_eq!(
            decide(&hdr(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE | CMD_FLAG_FUA, 0, 9), &EX),
            Decision::Execute(Command::WriteZeroes { offset: 0, len: 9, no_hole: true, fast: false, fua: true })
        );
        assert_eq!(decide(&hdr(CMD_WRITE_ZEROES, 0, 1 << 20, 1), &EX), Decision::Reject { errno: ENOSPC, discard: 0 });
        assert_eq!(
            decide(&hdr(CMD_WRITE_ZEROES, CMD_FLAG_FAST_ZERO, 0, 1), &EX),
            Decision::Execute(Command::WriteZeroes { offset: 0, len: 1, no_hole: false, fast: true, fua: false })
        );
        // length 0: nothing to trim or zero
        assert_eq!(decide(&hdr(CMD_TRIM, 0, 0, 0), &EX), einval);
        assert_eq!(decide(&hdr(CMD_WRITE_ZEROES, 0, 0, 0), &EX), einval);
        // PAYLOAD_LEN is an unknown flag without extended headers
        assert_eq!(decide(&hdr(CMD_TRIM, CMD_FLAG_PAYLOAD_LEN, 0, 1), &EX), einval);
        assert_eq!(
            decide(&hdr(CMD_WRITE, CMD_FLAG_PAYLOAD_LEN, 0, 1), &EX),
            Decision::Reject { errno: EINVAL, discard: 1 }
        );
        let ro = ExportParams { read_only: true, ..EX };
        assert_eq!(decide(&hdr(CMD_TRIM, 0, 0, 1), &ro), Decision::Reject { errno: EPERM, discard: 0 });
        assert_eq!(decide(&hdr(CMD_WRITE_ZEROES, 0, 0, 1), &ro), Decision::Reject { errno: EPERM, discard: 0 });
        for kind in [CMD_BLOCK_STATUS, 8, 0xffff] {
            assert_eq!(decide(&hdr(kind, 0, 0, 1), &EX), einval);
        }
    }

    #[test]
    fn command_lengths() {
        assert_eq!(Command::Write { offset: 0, len: 7, fua: false }.payload_len(), 7);
        assert_eq!(Command::Read { offset: 0, len: 7 }.payload_len(), 0);
        assert_eq!(Command::Read { offset: 0, len: 7 }.buffer_len(), 7);
        assert_eq!(Command::Trim { offset: 0, len: 7, fua: false }.buffer_len(), 0);
    }

    #[test]
    fn reply_roundtrip() {
        let r = simple_reply(42, EINVAL);
        assert_eq!(&r[0..4], &[0x67, 0x44, 0x66, 0x98]);
        assert_eq!(parse_simple_reply(&r), Some(SimpleReply { errno: EINVAL, cookie: 42 }));
        assert_eq!(parse_simple_reply(&r[..15]), None);
        let mut bad = r;
        bad[3] ^= 1;
        assert_eq!(parse_simple_reply(&bad), None);
    }

    #[test]
    fn errno_mapping() {
        let os = io::Error::from_raw_os_error;
        assert_eq!(errno_of(&os(libc::EDQUOT)), ENOSPC);
        assert_eq!(errno_of(&os(libc::EFBIG)), ENOSPC);
        assert_eq!(errno_of(&os(libc::EROFS)), EPERM);
        assert_eq!(errno_of(&os(libc::EBADF)), EIO);
        assert_eq!(errno_of(&io::Error::new(io::ErrorKind::InvalidInput, "x")), EINVAL);
        assert_eq!(errno_of(&io::Error::new(io::ErrorKind::UnexpectedEof, "x")), EIO);
    }

    #[test]
    fn execute_commands() {
        let m = MemBackend::new(64);
        let w = Command::Write { offset: 4, len: 3, fua: true };
        assert_eq!(execute(&m, &w, 1, b"xyz"), simple_reply(1, 0).to_vec());
        // a payload of the wrong length is refused, not written
        assert_eq!(execute(&m, &w, 2, b"xy"), simple_reply(2, EINVAL).to_vec());
        let r = execute(&m, &Command::Read { offset: 3, len: 5 }, 3, &[]);
        assert_eq!(&r[..16], &simple_reply(3, 0));
        assert_eq!(&r[16..], b"\0xyz\0");
        assert_eq!(execute(&m, &Command::Flush, 4, &[]), simple_reply(4, 0).to_vec());
        let z = Command::WriteZeroes { offset: 5, len: 1, no_hole: false, fast: false, fua: false };
        assert_eq!(execute(&m, &z, 5, &[]), simple_reply(5, 0).to_vec());
        assert_eq!(&execute(&m, &Command::Read { offset: 4, len: 3 }, 6, &[])[16..], b"x\0z");
        assert_eq!(execute(&m, &Command::Trim { offset: 0, len: 64, fua: false }, 7, &[]), simple_reply(7, 0).to_vec());
        assert!(m.contents().iter().all(|&b| b == 0));
        // a backend failure becomes an error reply without data
        assert_eq!(execute(&m, &Command::Read { offset: 60, len: 8 }, 8, &[]), simple_reply(8, EINVAL).to_vec());
    }

    #[test]
    fn decide_structured_cache_and_block_status() {
        let einval = Decision::Reject { errno: EINVAL, discard: 0 };
        // DF only once structured replies are on
        let st = ExportParams { structured: true, ..EX };
        assert_eq!(decide(&hdr(CMD_READ, CMD_FLAG_DF, 0, 1), &EX), einval);
        assert_eq!(
            decide(&hdr(CMD_READ, CMD_FLAG_DF, 0, 1), &st),
            Decision::Execute(Command::Read { offset: 0, len: 1 })
        );
        assert_eq!(decide(&hdr(CMD_READ, CMD_FLAG_REQ_ONE, 0, 1), &st), einval);
        // CACHE: in bounds, max block, FUA only, fine on a read-only export
        let ro = ExportParams { read_only: true, ..EX };
        let cache = Decision::Execute(Command::Cache { offset: 0, len: 1 << 16 });
        assert_eq!(decide(&hdr(CMD_CACHE, 0, 0, 1 << 16), &ro), cache);
        assert_eq!(decide(&hdr(CMD_CACHE, CMD_FLAG_FUA, 0, 1 << 16), &EX), cache);
        assert_eq!(decide(&hdr(CMD_CACHE, 0, 0, (1 << 16) + 1), &EX), einval);
        assert_eq!(decide(&hdr(CMD_CACHE, 0, (1 << 20) - 1, 2), &EX), einval);
        assert_eq!(decide(&hdr(CMD_CACHE, CMD_FLAG_DF, 0, 1), &st), einval);
        assert!(matches!(decide(&hdr(CMD_CACHE, 0, 1 << 20, 0), &EX), Decision::Execute(_)));
        // BLOCK_STATUS: only with a context; REQ_ONE; no zero length; bounds, not max block
        let bs = ExportParams { structured: true, block_status: true, ..EX };
        assert_eq!(decide(&hdr(CMD_BLOCK_STATUS, 0, 0, 512), &st), einval);
        assert_eq!(
            decide(&hdr(CMD_BLOCK_STATUS, CMD_FLAG_REQ_ONE, 0, 1 << 20), &bs),
            Decision::Execute(Command::BlockStatus { offset: 0, len: 1 << 20, req_one: true })
        );
        assert_eq!(decide(&hdr(CMD_BLOCK_STATUS, 0, 0, 0), &bs), einval);
        assert_eq!(decide(&hdr(CMD_BLOCK_STATUS, 0, 1, 1 << 20), &bs), einval);
        assert_eq!(decide(&hdr(CMD_BLOCK_STATUS, 0, u64::MAX, 1), &bs), einval);
        assert_eq!(decide(&hdr(CMD_BLOCK_STATUS, CMD_FLAG_DF, 0, 1), &bs), einval);
        let s = Session { structured: true, extended: false, allocation: Some(1) };
        assert_eq!(EX.for_session(&s), bs);
        assert_eq!(bs.for_session(&Session::default()), EX);
    }

    #[test]
    fn execute_structured() {
        use crate::structured::split_chunk;
        let m = MemBackend::from_vec((0..64u8).collect());
        let s = Session { structured: true, extended: false, allocation: Some(1) };
        // a read is one final OFFSET_DATA chunk with the same bytes as the simple reply
        let r = execute_in(&s, &m, &Command::Read { offset: 3, len: 5 }, 3, &[]);
        let (c, rest) = split_chunk(&r).unwrap();
        assert!(rest.is_empty());
        assert_eq!((c.flags, c.kind, c.cookie), (REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, 3));
        assert_eq!(&c.payload[..8], &3u64.to_be_bytes());
        assert_eq!(&c.payload[8..], &execute(&m, &Command::Read { offset: 3, len: 5 }, 3, &[])[16..]);
        // zero-length read: NONE
        let r = execute_in(&s, &m, &Command::Read { offset: 64, len: 0 }, 4, &[]);
        let (c, rest) = split_chunk(&r).unwrap();
        assert!(rest.is_empty());
        assert_eq!((c.flags, c.kind, c.payload.len()), (REPLY_FLAG_DONE, REPLY_TYPE_NONE, 0));
        // a failed read: ERROR_OFFSET at its offset, no data
        let r = execute_in(&s, &m, &Command::Read { offset: 60, len: 8 }, 5, &[]);
        let (c, rest) = split_chunk(&r).unwrap();
        assert!(rest.is_empty());
        assert_eq!(c.kind, REPLY_TYPE_ERROR_OFFSET);
        assert_eq!(c.error().unwrap().0, EINVAL);
        assert_eq!(&c.payload[c.payload.len() - 8..], &60u64.to_be_bytes());
        // a failed write: an ERROR chunk; a good one: a simple reply
        let w = Command::Write { offset: 0, len: 3, fua: false };
        let r = execute_in(&s, &m, &w, 6, b"ab");
        let (c, _) = split_chunk(&r).unwrap();
        assert_eq!((c.kind, c.error().unwrap().0), (REPLY_TYPE_ERROR, EINVAL));
        assert_eq!(execute_in(&s, &m, &w, 7, b"abc"), simple_reply(7, 0).to_vec());
        // cache: a simple success
        assert_eq!(execute_in(&s, &m, &Command::Cache { offset: 0, len: 64 }, 8, &[]), simple_reply(8, 0).to_vec());
        // block status of the default backend: one data extent of the request's length
        let bs = Command::BlockStatus { offset: 8, len: 16, req_one: false };
        let r = execute_in(&s, &m, &bs, 9, &[]);
        let (c, _) = split_chunk(&r).unwrap();
        assert_eq!(c.block_status(), Some((1, vec![(16, 0)])));
        assert_eq!(c.flags, REPLY_FLAG_DONE);
        assert_eq!(error_reply(&Session::default(), 1, 0, EPERM), simple_reply(1, EPERM).to_vec());
    }

    const EXT: ExportParams = ExportParams { structured: true, extended: true, ..EX };

    #[test]
    fn extended_header_roundtrip_and_layout() {
        let h = hdr(CMD_TRIM, CMD_FLAG_FUA, 0x0102_0304_0506_0708, 5 << 30);
        let b = encode_extended_request_header(&h);
        assert_eq!(&b[0..4], &[0x21, 0xe4, 0x1c, 0x71]);
        assert_eq!(&b[24..32], &(5u64 << 30).to_be_bytes());
        assert_eq!(parse_request_header(&b), Ok(h));
        assert_eq!(parse_request_header(&b[..31]), Err(HeaderError::WrongLength(31)));
        // a compact header cuts the length to 32 bits
        let c = encode_request_header(&h);
        assert_eq!(parse_request_header(&c).unwrap().length, (5u64 << 30) & 0xffff_ffff);
        let s = Session { structured: true, extended: true, allocation: None };
        assert_eq!(s.request_header_len(), 32);
        assert_eq!(Session::default().request_header_len(), 28);
    }

    #[test]
    fn decide_extended_lengths() {
        let big = ExportParams { size: 8 << 30, block_status: true, ..EXT };
        let einval = Decision::Reject { errno: EINVAL, discard: 0 };
        // 64-bit lengths for commands without a payload
        assert_eq!(
            decide(&hdr(CMD_TRIM, 0, 1 << 30, 5 << 30), &big),
            Decision::Execute(Command::Trim { offset: 1 << 30, len: 5 << 30, fua: false })
        );
        assert_eq!(
            decide(&hdr(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE, 0, 8 << 30), &big),
            Decision::Execute(Command::WriteZeroes { offset: 0, len: 8 << 30, no_hole: true, fast: false, fua: false })
        );
        assert_eq!(
            decide(&hdr(CMD_BLOCK_STATUS, 0, 0, 5 << 30), &big),
            Decision::Execute(Command::BlockStatus { offset: 0, len: 5 << 30, req_one: false })
        );
        // CACHE: any length in bounds, the hint cut to a block
        assert_eq!(
            decide(&hdr(CMD_CACHE, 0, 0, 5 << 30), &big),
            Decision::Execute(Command::Cache { offset: 0, len: 1 << 16 })
        );
        // past the end, and offset + length overflowing 64 bits
        assert_eq!(decide(&hdr(CMD_TRIM, 0, 1, 8 << 30), &big), einval);
        assert_eq!(decide(&hdr(CMD_TRIM, 0, u64::MAX, 2), &big), einval);
        assert_eq!(decide(&hdr(CMD_TRIM, 0, 2, u64::MAX), &big), einval);
        assert_eq!(
            decide(&hdr(CMD_WRITE_ZEROES, 0, 1 << 62, 1 << 62), &big),
            Decision::Reject { errno: ENOSPC, discard: 0 }
        );
        assert_eq!(
            decide(&hdr(CMD_WRITE_ZEROES, 0, u64::MAX, u64::MAX), &big),
            Decision::Reject { errno: ENOSPC, discard: 0 }
        );
        assert_eq!(decide(&hdr(CMD_BLOCK_STATUS, 0, 1, u64::MAX), &big), einval);
        assert_eq!(decide(&hdr(CMD_CACHE, 0, 1, u64::MAX), &big), einval);
        // READ and WRITE keep the payload limit: no allocation from a 64-bit length
        assert_eq!(decide(&hdr(CMD_READ, 0, 0, (1 << 16) + 1), &big), einval);
        assert_eq!(decide(&hdr(CMD_READ, 0, 0, 1 << 32), &big), einval);
        assert_eq!(decide(&hdr(CMD_READ, 0, 0, u64::MAX), &big), einval);
        assert_eq!(decide(&hdr(CMD_WRITE, 0, 0, 1 << 32), &big), Decision::Fatal { errno: EINVAL });
        assert_eq!(decide(&hdr(CMD_WRITE, 0, 0, u64::MAX), &big), Decision::Fatal { errno: EINVAL });
        assert_eq!(
            decide(&hdr(CMD_READ, 0, 0, 1 << 16), &big),
            Decision::Execute(Command::Read { offset: 0, len: 1 << 16 })
        );
    }

    #[test]
    fn decide_payload_len_flag() {
        // redundant on a WRITE: accepted
        assert_eq!(
            decide(&hdr(CMD_WRITE, CMD_FLAG_PAYLOAD_LEN, 0, 8), &EXT),
            Decision::Execute(Command::Write { offset: 0, len: 8, fua: false })
        );
        // anywhere else: its payload is read and dropped, EINVAL; too big to read: closed
        for kind in [CMD_READ, CMD_TRIM, CMD_WRITE_ZEROES, CMD_BLOCK_STATUS, CMD_CACHE, CMD_FLUSH, 99] {
            assert_eq!(
                decide(&hdr(kind, CMD_FLAG_PAYLOAD_LEN, 0, 24), &EXT),
                Decision::Reject { errno: EINVAL, discard: 24 },
                "{kind}"
            );
            assert_eq!(decide(&hdr(kind, CMD_FLAG_PAYLOAD_LEN, 0, 1 << 40), &EXT), Decision::Fatal { errno: EINVAL });
        }
        // DISC with the flag is refused too (it would otherwise leave a payload unread)
        assert_eq!(
            decide(&hdr(CMD_DISC, CMD_FLAG_PAYLOAD_LEN, 0, 0), &EXT),
            Decision::Reject { errno: EINVAL, discard: 0 }
        );
    }

    #[test]
    fn execute_extended() {
        use crate::structured::split_extended_chunk;
        let m = MemBackend::from_vec((0..64u8).collect());
        let s = Session { structured: true, extended: true, allocation: Some(1) };
        // a read: one OFFSET_DATA chunk with an extended header echoing the offset
        let r = execute_in(&s, &m, &Command::Read { offset: 3, len: 5 }, 3, &[]);
        let (c, rest) = split_extended_chunk(&r).unwrap();
        assert!(rest.is_empty());
        assert_eq!((c.flags, c.kind, c.cookie, c.offset), (REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, 3, 3));
        assert_eq!(&c.payload[8..], &[3, 4, 5, 6, 7]);
        // success without data: a NONE chunk, never a simple reply
        for cmd in [
            Command::Write { offset: 0, len: 3, fua: false },
            Command::Flush,
            Command::Trim { offset: 8, len: 8, fua: false },
            Command::WriteZeroes { offset: 8, len: 8, no_hole: false, fast: true, fua: false },
            Command::Cache { offset: 0, len: 64 },
            Command::Read { offset: 64, len: 0 },
        ] {
            let r = execute_in(&s, &m, &cmd, 4, b"abc");
            let (c, rest) = split_extended_chunk(&r).unwrap_or_else(|| panic!("{cmd:?}: {r:?}"));
            assert!(rest.is_empty());
            assert_eq!((c.flags, c.kind, c.cookie, c.offset), (REPLY_FLAG_DONE, REPLY_TYPE_NONE, 4, cmd.offset()));
        }
        // errors: ERROR chunks with extended headers
        let r = execute_in(&s, &m, &Command::Write { offset: 0, len: 3, fua: false }, 5, b"ab");
        let (c, _) = split_extended_chunk(&r).unwrap();
        assert_eq!((c.kind, c.error().unwrap().0), (REPLY_TYPE_ERROR, EINVAL));
        let r = execute_in(&s, &m, &Command::Read { offset: 60, len: 8 }, 6, &[]);
        let (c, _) = split_extended_chunk(&r).unwrap();
        assert_eq!((c.kind, c.error().unwrap().0, c.offset), (REPLY_TYPE_ERROR_OFFSET, EINVAL, 60));
        assert_eq!(split_extended_chunk(&error_reply(&s, 7, 9, EPERM)).unwrap().0.error().unwrap().0, EPERM);
        // block status: the 64-bit chunk type
        let r = execute_in(&s, &m, &Command::BlockStatus { offset: 8, len: 16, req_one: false }, 8, &[]);
        let (c, _) = split_extended_chunk(&r).unwrap();
        assert_eq!((c.kind, c.offset), (REPLY_TYPE_BLOCK_STATUS_EXT, 8));
        assert_eq!(c.block_status(), Some((1, vec![(16, 0)])));
        // fast zeroes the default backend cannot do: ENOTSUP
        struct Slow;
        impl Backend for Slow {
            fn size(&self) -> u64 {
                64
            }
            fn read_at(&self, _: &mut [u8], _: u64) -> io::Result<()> {
                Ok(())
            }
            fn write_at(&self, _: &[u8], _: u64, _: bool) -> io::Result<()> {
                Ok(())
            }
            fn flush(&self) -> io::Result<()> {
                Ok(())
            }
            fn trim(&self, _: u64, _: u64, _: bool) -> io::Result<()> {
                Ok(())
            }
            fn write_zeroes(&self, _: u64, _: u64, _: bool, _: bool) -> io::Result<()> {
                Ok(())
            }
        }
        let z = Command::WriteZeroes { offset: 0, len: 8, no_hole: false, fast: true, fua: false };
        let r = super::execute(&s, &Slow, &z, 9, &mut Vec::new(), direct).into_owned();
        assert_eq!(split_extended_chunk(&r).unwrap().0.error().unwrap().0, ENOTSUP);
        let r = super::execute(&Session::default(), &Slow, &z, 9, &mut Vec::new(), direct).into_owned();
        assert_eq!(r, simple_reply(9, ENOTSUP).to_vec());
    }
}
