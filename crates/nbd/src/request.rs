//! Transmission phase: request header parsing, validation, execution against a
//! [`Backend`], and simple replies.
//!
//! The flow for one request is [`parse_request_header`] → [`decide`] (pure:
//! what to do, including which error to answer, and how many payload bytes
//! follow on the wire) → [`execute`] (runs a validated command, builds the
//! whole reply). Replies are simple ones, or structured chunks when the
//! client negotiated them ([`Session`]; see [`super::structured`]); a failed
//! READ gets an error header (or error chunk) and no data, and the
//! connection goes on.
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
//! on a read-only export (it reads). BLOCK_STATUS: only once a context was
//! negotiated, flags FUA and REQ_ONE, in bounds, not of length 0 (no
//! descriptor could describe it), any length up to 4 GiB (no payload).

use super::consts::*;
use super::structured::{self, Session};
use ssdcache_block::Backend;
use std::borrow::Cow;
use std::io;

/// A parsed request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    pub flags: u16,
    pub kind: u16,
    pub cookie: u64,
    pub offset: u64,
    pub length: u32,
}

/// A request header that cannot be parsed: the connection has lost sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("bad request magic {0:#010x}")]
    BadMagic(u32),
    #[error("request header of {0} bytes")]
    WrongLength(usize),
}

/// Parses a 28-byte request header (only the magic is checked here).
pub fn parse_request_header(buf: &[u8]) -> Result<RequestHeader, HeaderError> {
    if buf.len() != REQUEST_HEADER_LEN {
        return Err(HeaderError::WrongLength(buf.len()));
    }
    let magic = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if magic != REQUEST_MAGIC {
        return Err(HeaderError::BadMagic(magic));
    }
    let mut c = [0u8; 8];
    c.copy_from_slice(&buf[8..16]);
    let mut o = [0u8; 8];
    o.copy_from_slice(&buf[16..24]);
    Ok(RequestHeader {
        flags: u16::from_be_bytes([buf[4], buf[5]]),
        kind: u16::from_be_bytes([buf[6], buf[7]]),
        cookie: u64::from_be_bytes(c),
        offset: u64::from_be_bytes(o),
        length: u32::from_be_bytes([buf[24], buf[25], buf[26], buf[27]]),
    })
}

/// Builds a request header (clients and tests).
pub fn encode_request_header(h: &RequestHeader) -> [u8; REQUEST_HEADER_LEN] {
    let mut b = [0u8; REQUEST_HEADER_LEN];
    b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&h.flags.to_be_bytes());
    b[6..8].copy_from_slice(&h.kind.to_be_bytes());
    b[8..16].copy_from_slice(&h.cookie.to_be_bytes());
    b[16..24].copy_from_slice(&h.offset.to_be_bytes());
    b[24..28].copy_from_slice(&h.length.to_be_bytes());
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
}

impl ExportParams {
    /// The parameters of a connection on this export that negotiated `session`.
    pub fn for_session(self, session: &Session) -> Self {
        ExportParams { structured: session.structured, block_status: session.allocation.is_some(), ..self }
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
        len: u32,
        fua: bool,
    },
    WriteZeroes {
        offset: u64,
        len: u32,
        no_hole: bool,
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
        len: u32,
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
fn in_bounds(offset: u64, len: u32, size: u64) -> bool {
    offset.checked_add(len as u64).is_some_and(|end| end <= size)
}

/// Validates a request against the export. Pure; never allocates.
pub fn decide(h: &RequestHeader, ex: &ExportParams) -> Decision {
    let (offset, len) = (h.offset, h.length);
    let fua = h.flags & CMD_FLAG_FUA != 0;
    let flags_ok = |allowed: u16| h.flags & !allowed == 0;
    let reject = |errno| Decision::Reject { errno, discard: 0 };
    match h.kind {
        CMD_READ => {
            let df = if ex.structured { CMD_FLAG_DF } else { 0 };
            if !flags_ok(CMD_FLAG_FUA | df) || len > ex.max_block || !in_bounds(offset, len, ex.size) {
                reject(EINVAL)
            } else {
                Decision::Execute(Command::Read { offset, len })
            }
        }
        CMD_WRITE => {
            if len > ex.max_block {
                return Decision::Fatal { errno: EINVAL };
            }
            let errno = if !flags_ok(CMD_FLAG_FUA) {
                EINVAL
            } else if ex.read_only {
                EPERM
            } else if !in_bounds(offset, len, ex.size) {
                ENOSPC
            } else {
                return Decision::Execute(Command::Write { offset, len, fua });
            };
            Decision::Reject { errno, discard: len }
        }
        CMD_DISC => Decision::Disconnect,
        CMD_FLUSH if flags_ok(CMD_FLAG_FUA) => Decision::Execute(Command::Flush),
        CMD_TRIM | CMD_WRITE_ZEROES => {
            let zeroes = h.kind == CMD_WRITE_ZEROES;
            let allowed = if zeroes { CMD_FLAG_FUA | CMD_FLAG_NO_HOLE } else { CMD_FLAG_FUA };
            if !flags_ok(allowed) {
                reject(EINVAL)
            } else if ex.read_only {
                reject(EPERM)
            } else if !in_bounds(offset, len, ex.size) {
                reject(if zeroes { ENOSPC } else { EINVAL })
            } else if zeroes {
                let no_hole = h.flags & CMD_FLAG_NO_HOLE != 0;
                Decision::Execute(Command::WriteZeroes { offset, len, no_hole, fua })
            } else {
                Decision::Execute(Command::Trim { offset, len, fua })
            }
        }
        CMD_CACHE => {
            if !flags_ok(CMD_FLAG_FUA) || len > ex.max_block || !in_bounds(offset, len, ex.size) {
                reject(EINVAL)
            } else {
                Decision::Execute(Command::Cache { offset, len })
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
        // FLUSH with bad flags and anything unknown. Only WRITE carries a
        // payload, so there is nothing to discard.
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

/// The reply to a request refused (or failed) with `errno`: a simple reply,
/// or with structured replies an `NBD_REPLY_TYPE_ERROR` chunk (required for
/// a READ, preferred by the spec for the rest).
pub fn error_reply(session: &Session, cookie: u64, errno: u32) -> Vec<u8> {
    if session.structured {
        structured::error_chunk(cookie, errno)
    } else {
        simple_reply(cookie, errno).to_vec()
    }
}

/// Bytes in front of a successful read's data: a simple reply header, or an
/// `OFFSET_DATA` chunk's header and offset.
pub fn read_header_len(session: &Session) -> usize {
    if session.structured {
        OFFSET_DATA_HEADER_LEN
    } else {
        SIMPLE_REPLY_LEN
    }
}

/// The reply to a successful read whose `len` bytes sit in
/// `buf[read_header_len..][..len]`: writes the header in front and returns
/// how many bytes of `buf` to send. A zero-length structured read cannot be
/// a data chunk (it must carry a byte): it is a lone NONE chunk, rewritten
/// into `buf` (which then holds at least its 20 bytes).
pub fn finish_read(session: &Session, buf: &mut [u8], cookie: u64, offset: u64, len: u32) -> usize {
    if !session.structured {
        put_simple_reply(&mut buf[..SIMPLE_REPLY_LEN], cookie, 0);
        SIMPLE_REPLY_LEN + len as usize
    } else if len == 0 {
        let none = structured::none_chunk(cookie);
        buf[..none.len()].copy_from_slice(&none);
        none.len()
    } else {
        structured::put_offset_data_header(buf, cookie, offset, len);
        OFFSET_DATA_HEADER_LEN + len as usize
    }
}

/// The reply to a failed read: a simple error reply, or an
/// `NBD_REPLY_TYPE_ERROR_OFFSET` at the read's offset (no data went out).
pub fn read_failed(session: &Session, cookie: u64, offset: u64, errno: u32) -> Vec<u8> {
    if session.structured {
        structured::error_offset_chunk(cookie, errno, offset)
    } else {
        simple_reply(cookie, errno).to_vec()
    }
}

/// Runs a block status query and builds its reply chunk (`allocation` is the
/// negotiated context id). The backend's extents are checked: they must
/// cover at least one byte from the offset, else it is an EIO.
pub fn block_status_reply(
    backend: &dyn Backend,
    cookie: u64,
    allocation: u32,
    offset: u64,
    len: u32,
    req_one: bool,
) -> io::Result<Vec<u8>> {
    let max = if req_one { 1 } else { MAX_EXTENTS };
    let extents = backend.block_status(offset, len as u64, max)?;
    let d = structured::descriptors(&extents, len, req_one);
    if d.is_empty() {
        return Err(io::Error::other("the backend reported no extent"));
    }
    Ok(structured::block_status_chunk(cookie, allocation, &d))
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
            let n = (head + len as usize).max(CHUNK_HEADER_LEN);
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
                reply = block_status_reply(backend, cookie, id, offset, len, req_one)?;
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
        Command::Trim { offset, len, fua } => call(&mut || backend.trim(offset, len as u64, fua)),
        Command::WriteZeroes { offset, len, no_hole, fua } => {
            call(&mut || backend.write_zeroes(offset, len as u64, no_hole, fua))
        }
    };
    match &result {
        Ok(()) => Cow::Owned(simple_reply(cookie, 0).to_vec()),
        Err(e) => {
            log::debug!("{cmd:?} failed: {e}");
            Cow::Owned(error_reply(session, cookie, errno_of(e)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ssdcache_block::MemBackend;

    const EX: ExportParams =
        ExportParams { size: 1 << 20, max_block: 1 << 16, read_only: false, structured: false, block_status: false };

    /// One request through the executor, its payload in a buffer of its own.
    fn execute_in(s: &Session, m: &MemBackend, cmd: &Command, cookie: u64, payload: &[u8]) -> Vec<u8> {
        super::execute(s, m, cmd, cookie, &mut payload.to_vec(), direct).into_owned()
    }

    /// [`execute_in`] without structured replies.
    fn execute(m: &MemBackend, cmd: &Command, cookie: u64, payload: &[u8]) -> Vec<u8> {
        execute_in(&Session::default(), m, cmd, cookie, payload)
    }

    fn hdr(kind: u16, flags: u16, offset: u64, length: u32) -> RequestHeader {
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
        assert_eq!(decide(&hdr(CMD_WRITE, 0, 0, u32::MAX), &ro), Decision::Fatal { errno: EINVAL });
    }

    #[test]
    fn decide_others() {
        assert_eq!(decide(&hdr(CMD_DISC, 0, 0, 0), &EX), Decision::Disconnect);
        assert_eq!(decide(&hdr(CMD_FLUSH, 0, 0, 0), &EX), Decision::Execute(Command::Flush));
        assert_eq!(decide(&hdr(CMD_FLUSH, CMD_FLAG_FUA, 5, 5), &EX), Decision::Execute(Command::Flush));
        let einval = Decision::Reject { errno: EINVAL, discard: 0 };
        assert_eq!(decide(&hdr(CMD_FLUSH, CMD_FLAG_NO_HOLE, 0, 0), &EX), einval);
        assert_eq!(
            decide(&hdr(CMD_TRIM, CMD_FLAG_FUA, 0, u32::MAX), &ExportParams { size: u64::MAX, ..EX }),
            Decision::Execute(Command::Trim { offset: 0, len: u32::MAX, fua: true })
        );
        assert_eq!(decide(&hdr(CMD_TRIM, 0, 1 << 20, 1), &EX), einval);
        assert_eq!(decide(&hdr(CMD_TRIM, CMD_FLAG_NO_HOLE, 0, 1), &EX), einval);
        assert_eq!(
            decide(&hdr(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE | CMD_FLAG_FUA, 0, 9), &EX),
            Decision::Execute(Command::WriteZeroes { offset: 0, len: 9, no_hole: true, fua: true })
        );
        assert_eq!(decide(&hdr(CMD_WRITE_ZEROES, 0, 1 << 20, 1), &EX), Decision::Reject { errno: ENOSPC, discard: 0 });
        assert_eq!(decide(&hdr(CMD_WRITE_ZEROES, CMD_FLAG_FAST_ZERO, 0, 1), &EX), einval);
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
        let z = Command::WriteZeroes { offset: 5, len: 1, no_hole: false, fua: false };
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
        let s = Session { structured: true, allocation: Some(1) };
        assert_eq!(EX.for_session(&s), bs);
        assert_eq!(bs.for_session(&Session::default()), EX);
    }

    #[test]
    fn execute_structured() {
        use crate::structured::split_chunk;
        let m = MemBackend::from_vec((0..64u8).collect());
        let s = Session { structured: true, allocation: Some(1) };
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
        assert_eq!(error_reply(&Session::default(), 1, EPERM), simple_reply(1, EPERM).to_vec());
    }
}
