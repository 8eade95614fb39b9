//! Structured replies (`NBD_OPT_STRUCTURED_REPLY`): what a connection
//! negotiated ([`Session`]), the chunk builders the transmission phase sends,
//! and a chunk parser for clients, tests and the fuzz target.
//!
//! How this server uses them:
//! - a successful READ is one `NBD_REPLY_TYPE_OFFSET_DATA` chunk with the
//!   DONE flag (so `NBD_CMD_FLAG_DF` is honoured by construction and
//!   `NBD_FLAG_SEND_DF` is advertised); a zero-length read, which no data
//!   chunk can describe, is a lone `NBD_REPLY_TYPE_NONE`;
//! - a READ that fails in the backend is an `NBD_REPLY_TYPE_ERROR_OFFSET` at
//!   the read's offset (no data was sent, so none of it is valid);
//! - a request refused before it runs (bad flags, out of range, too long) is
//!   an `NBD_REPLY_TYPE_ERROR` chunk for every command, READ included (the
//!   spec forbids a simple reply to a READ once structured replies are on);
//! - BLOCK_STATUS is one `NBD_REPLY_TYPE_BLOCK_STATUS` chunk (one context);
//! - other successes carry no payload and stay simple replies, which the
//!   spec allows.
//!
//! `NBD_REPLY_TYPE_OFFSET_HOLE` is not sent: a read is served from one
//! buffer in one chunk; clients learn about holes from BLOCK_STATUS.

use super::consts::*;
use ssdcache_block::extents::Extent;

/// What a connection negotiated that changes the transmission phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Session {
    /// `NBD_OPT_STRUCTURED_REPLY` was acknowledged.
    pub structured: bool,
    /// The id of `base:allocation`, when the last `NBD_OPT_SET_META_CONTEXT`
    /// selected it for the export the client then chose.
    pub allocation: Option<u32>,
}

/// Appends a chunk header.
pub fn put_chunk_header(out: &mut Vec<u8>, flags: u16, kind: u16, cookie: u64, len: u32) {
    out.extend_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&cookie.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
}

/// Writes the header and offset of a final `OFFSET_DATA` chunk carrying
/// `data_len` bytes into `buf[..OFFSET_DATA_HEADER_LEN]` (the data follows
/// in the same buffer, read there by the backend).
///
/// `data_len` is at most the maximum block size (checked by `decide`), far
/// below the 4 GiB - 8 a chunk can carry.
pub fn put_offset_data_header(buf: &mut [u8], cookie: u64, offset: u64, data_len: u32) {
    buf[0..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    buf[4..6].copy_from_slice(&REPLY_FLAG_DONE.to_be_bytes());
    buf[6..8].copy_from_slice(&REPLY_TYPE_OFFSET_DATA.to_be_bytes());
    buf[8..16].copy_from_slice(&cookie.to_be_bytes());
    buf[16..20].copy_from_slice(&(data_len + 8).to_be_bytes());
    buf[20..28].copy_from_slice(&offset.to_be_bytes());
}

/// A lone final `NBD_REPLY_TYPE_NONE` chunk: success without content.
pub fn none_chunk(cookie: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(CHUNK_HEADER_LEN);
    put_chunk_header(&mut out, REPLY_FLAG_DONE, REPLY_TYPE_NONE, cookie, 0);
    out
}

/// A human-readable message for an error value (sent with error chunks).
fn message(errno: u32) -> &'static str {
    match errno {
        EPERM => "operation not permitted (read-only export)",
        EIO => "input/output error",
        ENOMEM => "out of memory",
        EINVAL => "invalid request",
        ENOSPC => "no space left (past the end of the export?)",
        EOVERFLOW => "value too large",
        ENOTSUP => "operation not supported",
        ESHUTDOWN => "server shutting down",
        _ => "error",
    }
}

/// A final `NBD_REPLY_TYPE_ERROR` chunk (`errno` nonzero).
pub fn error_chunk(cookie: u64, errno: u32) -> Vec<u8> {
    let msg = message(errno).as_bytes();
    let mut out = Vec::with_capacity(CHUNK_HEADER_LEN + 6 + msg.len());
    put_chunk_header(&mut out, REPLY_FLAG_DONE, REPLY_TYPE_ERROR, cookie, 6 + msg.len() as u32);
    out.extend_from_slice(&errno.to_be_bytes());
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
    out
}

/// A final `NBD_REPLY_TYPE_ERROR_OFFSET` chunk: the request failed at `offset`.
pub fn error_offset_chunk(cookie: u64, errno: u32, offset: u64) -> Vec<u8> {
    let msg = message(errno).as_bytes();
    let mut out = Vec::with_capacity(CHUNK_HEADER_LEN + 14 + msg.len());
    put_chunk_header(&mut out, REPLY_FLAG_DONE, REPLY_TYPE_ERROR_OFFSET, cookie, 14 + msg.len() as u32);
    out.extend_from_slice(&errno.to_be_bytes());
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
    out.extend_from_slice(&offset.to_be_bytes());
    out
}

/// The descriptors a block status chunk sends for `extents` (which start at
/// the request's offset): each at most 4 GiB - 512 long (a descriptor's
/// length is 32 bits; longer extents are split), status `HOLE | ZERO` for a
/// hole, 0 for data. With `req_one`, only the first, cut to `req_len`.
/// Never empty for a nonempty request whose extents cover at least a byte.
pub fn descriptors(extents: &[Extent], req_len: u32, req_one: bool) -> Vec<(u32, u32)> {
    // 512-aligned, as the spec asks of descriptor lengths where possible.
    const MAX_DESC: u64 = u32::MAX as u64 & !511;
    let mut out = Vec::with_capacity(extents.len().min(MAX_EXTENTS));
    for e in extents {
        let flags = if e.hole { STATE_HOLE | STATE_ZERO } else { 0 };
        let mut left = e.len;
        while left > 0 && out.len() < MAX_EXTENTS {
            let n = left.min(MAX_DESC);
            out.push((n as u32, flags));
            left -= n;
        }
    }
    if req_one {
        out.truncate(1);
        if let Some(d) = out.first_mut() {
            d.0 = d.0.min(req_len);
        }
    }
    out
}

/// A final `NBD_REPLY_TYPE_BLOCK_STATUS` chunk for context `id`
/// (`descriptors` nonempty and at most [`MAX_EXTENTS`] long).
pub fn block_status_chunk(cookie: u64, id: u32, descriptors: &[(u32, u32)]) -> Vec<u8> {
    let len = 4 + 8 * descriptors.len();
    let mut out = Vec::with_capacity(CHUNK_HEADER_LEN + len);
    put_chunk_header(&mut out, REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS, cookie, len as u32);
    out.extend_from_slice(&id.to_be_bytes());
    for (l, f) in descriptors {
        out.extend_from_slice(&l.to_be_bytes());
        out.extend_from_slice(&f.to_be_bytes());
    }
    out
}

/// A parsed chunk (clients, tests and the fuzz target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk<'a> {
    pub flags: u16,
    pub kind: u16,
    pub cookie: u64,
    pub payload: &'a [u8],
}

impl Chunk<'_> {
    /// `(errno, message)` of an error chunk.
    pub fn error(&self) -> Option<(u32, &[u8])> {
        if self.kind & (1 << 15) == 0 || self.payload.len() < 6 {
            return None;
        }
        let errno = u32::from_be_bytes(self.payload[0..4].try_into().ok()?);
        let n = u16::from_be_bytes([self.payload[4], self.payload[5]]) as usize;
        Some((errno, self.payload.get(6..6 + n)?))
    }

    /// `(context id, [(length, status)])` of a block status chunk.
    pub fn block_status(&self) -> Option<(u32, Vec<(u32, u32)>)> {
        let p = self.payload;
        if self.kind != REPLY_TYPE_BLOCK_STATUS || p.len() < 12 || !(p.len() - 4).is_multiple_of(8) {
            return None;
        }
        let id = u32::from_be_bytes(p[0..4].try_into().ok()?);
        let d = p[4..]
            .chunks_exact(8)
            .map(|c| (u32::from_be_bytes([c[0], c[1], c[2], c[3]]), u32::from_be_bytes([c[4], c[5], c[6], c[7]])))
            .collect();
        Some((id, d))
    }
}

/// Splits the next chunk off `buf`; `None` unless `buf` starts with a whole one.
pub fn split_chunk(buf: &[u8]) -> Option<(Chunk<'_>, &[u8])> {
    if buf.len() < CHUNK_HEADER_LEN || buf[0..4] != STRUCTURED_REPLY_MAGIC.to_be_bytes() {
        return None;
    }
    let flags = u16::from_be_bytes([buf[4], buf[5]]);
    let kind = u16::from_be_bytes([buf[6], buf[7]]);
    let cookie = u64::from_be_bytes(buf[8..16].try_into().ok()?);
    let len = u32::from_be_bytes(buf[16..20].try_into().ok()?) as usize;
    let rest = &buf[CHUNK_HEADER_LEN..];
    if rest.len() < len {
        return None;
    }
    Some((Chunk { flags, kind, cookie, payload: &rest[..len] }, &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_data_layout() {
        let mut b = vec![0u8; OFFSET_DATA_HEADER_LEN + 3];
        b[OFFSET_DATA_HEADER_LEN..].copy_from_slice(b"xyz");
        put_offset_data_header(&mut b, 9, 4096, 3);
        assert_eq!(&b[0..4], &[0x66, 0x8e, 0x33, 0xef]);
        let (c, rest) = split_chunk(&b).unwrap();
        assert!(rest.is_empty());
        assert_eq!((c.flags, c.kind, c.cookie), (REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, 9));
        assert_eq!(c.payload, b"\0\0\0\0\0\0\x10\0xyz");
        assert!(split_chunk(&b[..b.len() - 1]).is_none());
    }

    #[test]
    fn error_chunks() {
        let e = error_chunk(5, EINVAL);
        let (c, _) = split_chunk(&e).unwrap();
        assert_eq!((c.flags, c.kind, c.cookie), (REPLY_FLAG_DONE, REPLY_TYPE_ERROR, 5));
        assert_eq!(c.error(), Some((EINVAL, &b"invalid request"[..])));
        let e = error_offset_chunk(6, EIO, 1 << 40);
        let (c, _) = split_chunk(&e).unwrap();
        assert_eq!(c.kind, REPLY_TYPE_ERROR_OFFSET);
        assert_eq!(c.error().unwrap().0, EIO);
        assert_eq!(&c.payload[c.payload.len() - 8..], &(1u64 << 40).to_be_bytes());
        let n = none_chunk(7);
        let (c, _) = split_chunk(&n).unwrap();
        assert_eq!((c.flags, c.kind, c.payload.len()), (REPLY_FLAG_DONE, REPLY_TYPE_NONE, 0));
        assert_eq!(c.error(), None);
    }

    #[test]
    fn descriptors_split_cap_and_req_one() {
        let ex = [Extent::data(4096), Extent::hole(8192), Extent::data(1)];
        assert_eq!(descriptors(&ex, 100, false), vec![(4096, 0), (8192, STATE_HOLE | STATE_ZERO), (1, 0)]);
        // REQ_ONE: one descriptor, never longer than the request
        assert_eq!(descriptors(&ex, 100, true), vec![(100, 0)]);
        assert_eq!(descriptors(&ex, 10_000, true), vec![(4096, 0)]);
        // an extent over 4 GiB becomes several descriptors
        let big = [Extent::hole(5 << 30)];
        let d = descriptors(&big, u32::MAX, false);
        assert_eq!(d.iter().map(|x| x.0 as u64).sum::<u64>(), 5 << 30);
        assert!(d.iter().all(|x| x.0 % 512 == 0 && x.0 > 0));
        // the count is capped
        let many: Vec<Extent> =
            (0..MAX_EXTENTS + 10).map(|i| if i % 2 == 0 { Extent::data(512) } else { Extent::hole(512) }).collect();
        assert_eq!(descriptors(&many, u32::MAX, false).len(), MAX_EXTENTS);
        let c = block_status_chunk(3, 1, &descriptors(&ex, 100, false));
        let (c, _) = split_chunk(&c).unwrap();
        assert_eq!(c.block_status(), Some((1, vec![(4096, 0), (8192, 3), (1, 0)])));
    }
}
