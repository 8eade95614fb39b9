//! Structured replies (`NBD_OPT_STRUCTURED_REPLY`) and extended headers
//! (`NBD_OPT_EXTENDED_HEADERS`): what a connection negotiated ([`Session`]),
//! the chunk builders the transmission phase sends, and a chunk parser for
//! clients, tests and the fuzz target.
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
//! - BLOCK_STATUS is one `NBD_REPLY_TYPE_BLOCK_STATUS` chunk (one context),
//!   or with extended headers one `NBD_REPLY_TYPE_BLOCK_STATUS_EXT` (64-bit
//!   descriptor lengths, so no extent is split);
//! - other successes carry no payload and stay simple replies, which the
//!   spec allows; with extended headers there are no simple replies, and
//!   they are a lone `NBD_REPLY_TYPE_NONE` chunk.
//!
//! Extended headers: every chunk has the 32-byte header (magic, flags, type,
//! cookie, offset, 64-bit length); its offset is the request's.
//!
//! `NBD_REPLY_TYPE_OFFSET_HOLE` is not sent: a read is served from one
//! buffer in one chunk; clients learn about holes from BLOCK_STATUS.

use super::consts::*;
use ssdcache_block::extents::Extent;

/// What a connection negotiated that changes the transmission phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Session {
    /// `NBD_OPT_STRUCTURED_REPLY` was acknowledged (or implied by extended headers).
    pub structured: bool,
    /// `NBD_OPT_EXTENDED_HEADERS` was acknowledged: 32-byte request and
    /// reply headers, 64-bit lengths, no simple replies.
    pub extended: bool,
    /// The id of `base:allocation`, when the last `NBD_OPT_SET_META_CONTEXT`
    /// selected it for the export the client then chose.
    pub allocation: Option<u32>,
}

impl Session {
    /// Bytes of a reply chunk's header.
    pub fn chunk_header_len(&self) -> usize {
        if self.extended {
            EXTENDED_CHUNK_HEADER_LEN
        } else {
            CHUNK_HEADER_LEN
        }
    }

    /// Bytes of a request header the client sends.
    pub fn request_header_len(&self) -> usize {
        if self.extended {
            EXTENDED_REQUEST_HEADER_LEN
        } else {
            REQUEST_HEADER_LEN
        }
    }
}

/// Appends a compact (20-byte) chunk header.
pub fn put_chunk_header(out: &mut Vec<u8>, flags: u16, kind: u16, cookie: u64, len: u32) {
    out.extend_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&cookie.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
}

/// Appends an extended (32-byte) chunk header; `offset` is the request's.
pub fn put_extended_header(out: &mut Vec<u8>, flags: u16, kind: u16, cookie: u64, offset: u64, len: u64) {
    out.extend_from_slice(&EXTENDED_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&cookie.to_be_bytes());
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
}

/// Appends the chunk header `session` uses. Compact payloads are far below
/// 4 GiB (every chunk built here is bounded by the maximum block size or a
/// few KiB).
fn put_header(out: &mut Vec<u8>, session: &Session, flags: u16, kind: u16, cookie: u64, offset: u64, len: usize) {
    if session.extended {
        put_extended_header(out, flags, kind, cookie, offset, len as u64);
    } else {
        put_chunk_header(out, flags, kind, cookie, len as u32);
    }
}

/// Writes the header and offset of a final `OFFSET_DATA` chunk carrying
/// `data_len` bytes into the front of `buf` (`OFFSET_DATA_HEADER_LEN` bytes,
/// or `EXTENDED_OFFSET_DATA_HEADER_LEN` with extended headers; the data
/// follows in the same buffer, read there by the backend).
///
/// `data_len` is at most the maximum block size (checked by `decide`), far
/// below the 4 GiB - 8 a compact chunk can carry.
pub fn put_offset_data_header(session: &Session, buf: &mut [u8], cookie: u64, offset: u64, data_len: u32) {
    let mut head = Vec::with_capacity(EXTENDED_OFFSET_DATA_HEADER_LEN);
    put_header(&mut head, session, REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, cookie, offset, data_len as usize + 8);
    head.extend_from_slice(&offset.to_be_bytes());
    buf[..head.len()].copy_from_slice(&head);
}

/// A lone final `NBD_REPLY_TYPE_NONE` chunk: success without content.
pub fn none_chunk(session: &Session, cookie: u64, offset: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(EXTENDED_CHUNK_HEADER_LEN);
    put_header(&mut out, session, REPLY_FLAG_DONE, REPLY_TYPE_NONE, cookie, offset, 0);
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
        ENOTSUP => "operation not supported (or not fast)",
        ESHUTDOWN => "server shutting down",
        _ => "error",
    }
}

/// A final `NBD_REPLY_TYPE_ERROR` chunk (`errno` nonzero).
pub fn error_chunk(session: &Session, cookie: u64, offset: u64, errno: u32) -> Vec<u8> {
    let msg = message(errno).as_bytes();
    let mut out = Vec::with_capacity(EXTENDED_CHUNK_HEADER_LEN + 6 + msg.len());
    put_header(&mut out, session, REPLY_FLAG_DONE, REPLY_TYPE_ERROR, cookie, offset, 6 + msg.len());
    out.extend_from_slice(&errno.to_be_bytes());
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
    out
}

/// A final `NBD_REPLY_TYPE_ERROR_OFFSET` chunk: the request failed at `offset`.
pub fn error_offset_chunk(session: &Session, cookie: u64, errno: u32, offset: u64) -> Vec<u8> {
    let msg = message(errno).as_bytes();
    let mut out = Vec::with_capacity(EXTENDED_CHUNK_HEADER_LEN + 14 + msg.len());
    put_header(&mut out, session, REPLY_FLAG_DONE, REPLY_TYPE_ERROR_OFFSET, cookie, offset, 14 + msg.len());
    out.extend_from_slice(&errno.to_be_bytes());
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
    out.extend_from_slice(&offset.to_be_bytes());
    out
}

/// The descriptors a block status chunk sends for `extents` (which start at
/// the request's offset): each at most `max_desc` long (longer extents are
/// split; 4 GiB - 512 for compact descriptors, whose length is 32 bits),
/// status `HOLE | ZERO` for a hole, 0 for data. With `req_one`, only the
/// first, cut to `req_len`. Never empty for a nonempty request whose
/// extents cover at least a byte.
pub fn descriptors(extents: &[Extent], req_len: u64, req_one: bool, max_desc: u64) -> Vec<(u64, u32)> {
    let mut out = Vec::with_capacity(extents.len().min(MAX_EXTENTS));
    for e in extents {
        let flags = if e.hole { STATE_HOLE | STATE_ZERO } else { 0 };
        let mut left = e.len;
        while left > 0 && out.len() < MAX_EXTENTS {
            let n = left.min(max_desc);
            out.push((n, flags));
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

/// Longest compact descriptor: 32 bits, 512-aligned, as the spec asks of
/// descriptor lengths where possible.
pub const MAX_COMPACT_DESCRIPTOR: u64 = u32::MAX as u64 & !511;

/// A final block status chunk for context `id` (`descriptors` nonempty and
/// at most [`MAX_EXTENTS`] long): `NBD_REPLY_TYPE_BLOCK_STATUS` (lengths
/// within [`MAX_COMPACT_DESCRIPTOR`]) or, with extended headers,
/// `NBD_REPLY_TYPE_BLOCK_STATUS_EXT` (context id, descriptor count, then
/// 64-bit length and 64-bit status per descriptor).
pub fn block_status_chunk(session: &Session, cookie: u64, offset: u64, id: u32, descriptors: &[(u64, u32)]) -> Vec<u8> {
    let mut out;
    if session.extended {
        let len = 8 + 16 * descriptors.len();
        out = Vec::with_capacity(EXTENDED_CHUNK_HEADER_LEN + len);
        put_header(&mut out, session, REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS_EXT, cookie, offset, len);
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&(descriptors.len() as u32).to_be_bytes());
        for (l, f) in descriptors {
            out.extend_from_slice(&l.to_be_bytes());
            out.extend_from_slice(&(*f as u64).to_be_bytes());
        }
    } else {
        let len = 4 + 8 * descriptors.len();
        out = Vec::with_capacity(CHUNK_HEADER_LEN + len);
        put_header(&mut out, session, REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS, cookie, offset, len);
        out.extend_from_slice(&id.to_be_bytes());
        for (l, f) in descriptors {
            debug_assert!(*l <= MAX_COMPACT_DESCRIPTOR);
            out.extend_from_slice(&(*l as u32).to_be_bytes());
            out.extend_from_slice(&f.to_be_bytes());
        }
    }
    out
}

/// A parsed chunk (clients, tests and the fuzz target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk<'a> {
    pub flags: u16,
    pub kind: u16,
    pub cookie: u64,
    /// The request's offset (extended headers; 0 in a compact chunk).
    pub offset: u64,
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

    /// `(context id, [(length, status)])` of a block status chunk, compact
    /// or extended (whose count must match its descriptors).
    pub fn block_status(&self) -> Option<(u32, Vec<(u64, u64)>)> {
        let p = self.payload;
        let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let be64 = |b: &[u8]| u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        match self.kind {
            REPLY_TYPE_BLOCK_STATUS if p.len() >= 12 && (p.len() - 4).is_multiple_of(8) => {
                let d = p[4..].chunks_exact(8).map(|c| (be32(&c[0..4]) as u64, be32(&c[4..8]) as u64)).collect();
                Some((be32(&p[0..4]), d))
            }
            REPLY_TYPE_BLOCK_STATUS_EXT
                if p.len() >= 24
                    && (p.len() - 8).is_multiple_of(16)
                    && be32(&p[4..8]) as usize == (p.len() - 8) / 16 =>
            {
                let d = p[8..].chunks_exact(16).map(|c| (be64(&c[0..8]), be64(&c[8..16]))).collect();
                Some((be32(&p[0..4]), d))
            }
            _ => None,
        }
    }
}

/// Splits the next compact chunk off `buf`; `None` unless `buf` starts with a whole one.
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
    Some((Chunk { flags, kind, cookie, offset: 0, payload: &rest[..len] }, &rest[len..]))
}

/// Splits the next extended chunk off `buf`; `None` unless `buf` starts with a whole one.
pub fn split_extended_chunk(buf: &[u8]) -> Option<(Chunk<'_>, &[u8])> {
    if buf.len() < EXTENDED_CHUNK_HEADER_LEN || buf[0..4] != EXTENDED_REPLY_MAGIC.to_be_bytes() {
        return None;
    }
    let flags = u16::from_be_bytes([buf[4], buf[5]]);
    let kind = u16::from_be_bytes([buf[6], buf[7]]);
    let cookie = u64::from_be_bytes(buf[8..16].try_into().ok()?);
    let offset = u64::from_be_bytes(buf[16..24].try_into().ok()?);
    let len = usize::try_from(u64::from_be_bytes(buf[24..32].try_into().ok()?)).ok()?;
    let rest = &buf[EXTENDED_CHUNK_HEADER_LEN..];
    if rest.len() < len {
        return None;
    }
    Some((Chunk { flags, kind, cookie, offset, payload: &rest[..len] }, &rest[len..]))
}

/// [`split_chunk`] or [`split_extended_chunk`], as `session` has them.
pub fn split_chunk_for<'a>(session: &Session, buf: &'a [u8]) -> Option<(Chunk<'a>, &'a [u8])> {
    if session.extended {
        split_extended_chunk(buf)
    } else {
        split_chunk(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPACT: Session = Session { structured: true, extended: false, allocation: None };
    const EXTENDED: Session = Session { structured: true, extended: true, allocation: None };

    #[test]
    fn offset_data_layout() {
        let mut b = vec![0u8; OFFSET_DATA_HEADER_LEN + 3];
        b[OFFSET_DATA_HEADER_LEN..].copy_from_slice(b"xyz");
        put_offset_data_header(&COMPACT, &mut b, 9, 4096, 3);
        assert_eq!(&b[0..4], &[0x66, 0x8e, 0x33, 0xef]);
        let (c, rest) = split_chunk(&b).unwrap();
        assert!(rest.is_empty());
        assert_eq!((c.flags, c.kind, c.cookie), (REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, 9));
        assert_eq!(c.payload, b"\0\0\0\0\0\0\x10\0xyz");
        assert!(split_chunk(&b[..b.len() - 1]).is_none());
    }

    #[test]
    fn extended_offset_data_layout() {
        let mut b = vec![0u8; EXTENDED_OFFSET_DATA_HEADER_LEN + 3];
        b[EXTENDED_OFFSET_DATA_HEADER_LEN..].copy_from_slice(b"xyz");
        put_offset_data_header(&EXTENDED, &mut b, 9, 1 << 40, 3);
        assert_eq!(&b[0..4], &[0x6e, 0x8a, 0x27, 0x8c]);
        assert_eq!(&b[16..24], &(1u64 << 40).to_be_bytes(), "the header echoes the offset");
        assert_eq!(&b[24..32], &11u64.to_be_bytes(), "a 64-bit length: offset and data");
        let (c, rest) = split_extended_chunk(&b).unwrap();
        assert!(rest.is_empty());
        assert_eq!((c.flags, c.kind, c.cookie, c.offset), (REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, 9, 1 << 40));
        assert_eq!(&c.payload[8..], b"xyz");
        assert!(split_extended_chunk(&b[..b.len() - 1]).is_none());
        // the two parsers never take each other's chunks
        assert!(split_chunk(&b).is_none());
        assert!(split_extended_chunk(&none_chunk(&COMPACT, 1, 0)).is_none());
        // a length beyond the buffer (up to 2^64 - 1) is not a chunk
        let mut huge = none_chunk(&EXTENDED, 1, 0);
        huge[24..32].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(split_extended_chunk(&huge).is_none());
    }

    #[test]
    fn error_chunks() {
        for s in [COMPACT, EXTENDED] {
            let e = error_chunk(&s, 5, 77, EINVAL);
            let (c, _) = split_chunk_for(&s, &e).unwrap();
            assert_eq!((c.flags, c.kind, c.cookie), (REPLY_FLAG_DONE, REPLY_TYPE_ERROR, 5));
            assert_eq!(c.offset, if s.extended { 77 } else { 0 });
            assert_eq!(c.error(), Some((EINVAL, &b"invalid request"[..])));
            let e = error_offset_chunk(&s, 6, EIO, 1 << 40);
            let (c, _) = split_chunk_for(&s, &e).unwrap();
            assert_eq!(c.kind, REPLY_TYPE_ERROR_OFFSET);
            assert_eq!(c.error().unwrap().0, EIO);
            assert_eq!(&c.payload[c.payload.len() - 8..], &(1u64 << 40).to_be_bytes());
            let n = none_chunk(&s, 7, 3);
            assert_eq!(n.len(), s.chunk_header_len());
            let (c, _) = split_chunk_for(&s, &n).unwrap();
            assert_eq!((c.flags, c.kind, c.payload.len()), (REPLY_FLAG_DONE, REPLY_TYPE_NONE, 0));
            assert_eq!(c.error(), None);
        }
    }

    #[test]
    fn descriptors_split_cap_and_req_one() {
        let ex = [Extent::data(4096), Extent::hole(8192), Extent::data(1)];
        let m = MAX_COMPACT_DESCRIPTOR;
        assert_eq!(descriptors(&ex, 100, false, m), vec![(4096, 0), (8192, STATE_HOLE | STATE_ZERO), (1, 0)]);
        // REQ_ONE: one descriptor, never longer than the request
        assert_eq!(descriptors(&ex, 100, true, m), vec![(100, 0)]);
        assert_eq!(descriptors(&ex, 10_000, true, m), vec![(4096, 0)]);
        // an extent over 4 GiB becomes several compact descriptors, one extended one
        let big = [Extent::hole(5 << 30)];
        let d = descriptors(&big, u32::MAX as u64, false, m);
        assert_eq!(d.iter().map(|x| x.0).sum::<u64>(), 5 << 30);
        assert!(d.iter().all(|x| x.0 % 512 == 0 && x.0 > 0 && x.0 <= u32::MAX as u64));
        assert_eq!(descriptors(&big, 6 << 30, false, u64::MAX), vec![(5 << 30, STATE_HOLE | STATE_ZERO)]);
        assert_eq!(descriptors(&big, 1 << 33, true, u64::MAX), vec![(5 << 30, STATE_HOLE | STATE_ZERO)]);
        // the count is capped
        let many: Vec<Extent> =
            (0..MAX_EXTENTS + 10).map(|i| if i % 2 == 0 { Extent::data(512) } else { Extent::hole(512) }).collect();
        assert_eq!(descriptors(&many, u32::MAX as u64, false, m).len(), MAX_EXTENTS);
        let c = block_status_chunk(&COMPACT, 3, 0, 1, &descriptors(&ex, 100, false, m));
        let (c, _) = split_chunk(&c).unwrap();
        assert_eq!(c.kind, REPLY_TYPE_BLOCK_STATUS);
        assert_eq!(c.block_status(), Some((1, vec![(4096, 0), (8192, 3), (1, 0)])));
    }

    #[test]
    fn extended_block_status_layout() {
        let d = [(5u64 << 30, STATE_HOLE | STATE_ZERO), (4096, 0)];
        let b = block_status_chunk(&EXTENDED, 3, 1 << 33, 1, &d);
        let (c, rest) = split_extended_chunk(&b).unwrap();
        assert!(rest.is_empty());
        assert_eq!((c.kind, c.offset, c.payload.len()), (REPLY_TYPE_BLOCK_STATUS_EXT, 1 << 33, 8 + 32));
        assert_eq!(&c.payload[4..8], &2u32.to_be_bytes(), "descriptor count");
        assert_eq!(c.block_status(), Some((1, vec![(5 << 30, 3), (4096, 0)])));
        // a count that does not match the descriptors is malformed
        let mut bad = b.clone();
        bad[EXTENDED_CHUNK_HEADER_LEN + 7] = 3;
        assert_eq!(split_extended_chunk(&bad).unwrap().0.block_status(), None);
    }
}
