//! The transmission phase fed arbitrary client bytes: a stream of request
//! headers (and write payloads) parsed, validated by `decide` and executed
//! (by `execute`, the executor the server's connections call) against a
//! `MemBackend`, in one reused buffer as a connection does, checked against a shadow copy of the disk, with
//! simple replies or (the first byte says) structured replies or extended
//! headers (32-byte requests with 64-bit lengths, extended reply chunks,
//! 64-bit block status descriptors), with or without the `base:allocation`
//! context.
//! Asserts no panic, that nothing out of bounds or over the maximum block
//! size is ever executed or allocated, that error decisions carry the right
//! payload to discard, that every reply echoes the cookie and has the shape
//! the session allows (no simple reply to a structured READ, chunks that
//! parse and end with DONE), that reads return exactly what was written,
//! and that block status covers a nonempty prefix of the range, one
//! descriptor within the length under REQ_ONE, and holes only where the
//! shadow reads as zeroes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache_block::{Backend, MemBackend};
use ssdcache_nbd::consts::*;
use ssdcache_nbd::request::{
    decide, direct, error_reply, execute, parse_request_header, parse_simple_reply, Command, Decision, ExportParams,
};
use ssdcache_nbd::structured::{split_chunk_for, Session};

const SIZE: usize = 64 * 1024;
const MAX_BLOCK: u32 = 16 * 1024;

/// The chunks of one structured (or extended) reply (all of `reply`, the last one DONE).
fn chunks(session: &Session, reply: &[u8], cookie: u64, offset: u64) -> Vec<(u16, u16, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rest = reply;
    while !rest.is_empty() {
        let (c, r) = split_chunk_for(session, rest).expect("a well-formed chunk");
        assert_eq!(c.cookie, cookie);
        if session.extended {
            assert_eq!(c.offset, offset, "an extended reply echoes the request's offset");
        }
        out.push((c.flags, c.kind, c.payload.to_vec()));
        rest = r;
    }
    assert!(out.last().expect("at least one chunk").0 & REPLY_FLAG_DONE != 0, "last chunk not DONE");
    assert!(out[..out.len() - 1].iter().all(|c| c.0 & REPLY_FLAG_DONE == 0), "DONE before the end");
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut input)) = data.split_first() else { return };
    let extended = mode & 8 != 0;
    let session = Session {
        structured: mode & 2 != 0 || mode & 4 != 0 || extended,
        extended,
        allocation: (mode & 4 != 0).then_some(CONTEXT_ID_BASE_ALLOCATION),
    };
    let params = ExportParams {
        size: SIZE as u64,
        max_block: MAX_BLOCK,
        read_only: mode & 1 == 1,
        structured: false,
        block_status: false,
        extended: false,
    }
    .for_session(&session);
    let backend = MemBackend::new(SIZE);
    let mut shadow = vec![0u8; SIZE];
    let mut buf = Vec::new();
    let header_len = session.request_header_len();
    while input.len() >= header_len {
        let (h, rest) = input.split_at(header_len);
        input = rest;
        let Ok(hdr) = parse_request_header(h) else { break }; // the server closes here
        match decide(&hdr, &params) {
            Decision::Execute(cmd) => {
                let len = cmd.payload_len() as usize;
                assert!(cmd.buffer_len() <= MAX_BLOCK);
                if input.len() < len {
                    break;
                }
                let (payload, rest) = input.split_at(len);
                input = rest;
                // As a connection does: the payload at the front of a buffer
                // kept (with whatever it held) from request to request.
                if buf.len() < len {
                    buf = vec![0u8; len];
                }
                buf[..len].copy_from_slice(payload);
                let reply = execute(&session, &backend, &cmd, hdr.cookie, &mut buf, direct);
                let range = |offset: u64, len: u64| {
                    let end = offset + len;
                    assert!(end <= SIZE as u64, "{cmd:?} out of bounds");
                    offset as usize..end as usize
                };
                let simple = || {
                    if session.extended {
                        // no simple replies: a lone NONE chunk
                        let c = chunks(&session, &reply, hdr.cookie, cmd.offset());
                        assert_eq!(
                            (c.len(), c[0].1, c[0].2.len()),
                            (1, REPLY_TYPE_NONE, 0),
                            "validated {cmd:?} failed"
                        );
                        return;
                    }
                    let r = parse_simple_reply(&reply[..SIMPLE_REPLY_LEN]).expect("simple reply magic");
                    assert_eq!(r.cookie, hdr.cookie);
                    assert_eq!(r.errno, 0, "validated {cmd:?} failed");
                    assert_eq!(reply.len(), SIMPLE_REPLY_LEN);
                };
                match cmd {
                    Command::Read { offset, len } if session.structured => {
                        let c = chunks(&session, &reply, hdr.cookie, offset);
                        assert_eq!(c.len(), 1, "one chunk per read (DF holds)");
                        if len == 0 {
                            assert_eq!(c[0].1, REPLY_TYPE_NONE);
                        } else {
                            assert_eq!(c[0].1, REPLY_TYPE_OFFSET_DATA);
                            assert_eq!(&c[0].2[..8], &offset.to_be_bytes());
                            assert_eq!(&c[0].2[8..], &shadow[range(offset, len as u64)]);
                        }
                    }
                    Command::Read { offset, len } => {
                        let r = parse_simple_reply(&reply[..SIMPLE_REPLY_LEN]).expect("reply magic");
                        assert_eq!((r.cookie, r.errno), (hdr.cookie, 0));
                        assert_eq!(reply.len(), SIMPLE_REPLY_LEN + len as usize);
                        assert_eq!(&reply[SIMPLE_REPLY_LEN..], &shadow[range(offset, len as u64)]);
                    }
                    Command::Write { offset, len, .. } => {
                        assert!(!params.read_only);
                        shadow[range(offset, len as u64)].copy_from_slice(payload);
                        simple();
                    }
                    Command::Trim { offset, len, .. } | Command::WriteZeroes { offset, len, .. } => {
                        assert!(!params.read_only);
                        shadow[range(offset, len)].fill(0);
                        simple();
                    }
                    Command::Flush => simple(),
                    Command::Cache { offset, len } => {
                        range(offset, len as u64);
                        simple();
                    }
                    Command::BlockStatus { offset, len, req_one } => {
                        assert!(session.allocation.is_some(), "block status without a context");
                        assert!(len > 0);
                        let c = chunks(&session, &reply, hdr.cookie, offset);
                        assert_eq!(c.len(), 1);
                        let want = if session.extended { REPLY_TYPE_BLOCK_STATUS_EXT } else { REPLY_TYPE_BLOCK_STATUS };
                        assert_eq!(c[0].1, want);
                        let p = &c[0].2;
                        assert_eq!(&p[0..4], &CONTEXT_ID_BASE_ALLOCATION.to_be_bytes());
                        let chunk = split_chunk_for(&session, &reply).unwrap().0;
                        let (_, d) = chunk.block_status().expect("a well-formed block status chunk");
                        assert!(d.len() <= MAX_EXTENTS);
                        if req_one {
                            assert_eq!(d.len(), 1);
                            assert!(d[0].0 <= len);
                        }
                        let mut at = offset;
                        for (i, &(l, flags)) in d.iter().enumerate() {
                            let flags = u32::try_from(flags).expect("base:allocation flags fit 32 bits");
                            assert!(l > 0, "an empty descriptor");
                            assert!(flags & !(STATE_HOLE | STATE_ZERO) == 0);
                            if i + 1 < d.len() {
                                assert!(at + (l as u64) < offset + len as u64, "descriptors past the range");
                            }
                            let end = (at + l as u64).min(offset + len as u64);
                            if flags & STATE_ZERO != 0 {
                                assert!(shadow[at as usize..end as usize].iter().all(|&b| b == 0), "zero over data");
                            }
                            at += l as u64;
                        }
                    }
                }
            }
            Decision::Reject { errno, discard } => {
                assert!(matches!(errno, EINVAL | ENOSPC | EPERM), "errno {errno}");
                let payload = hdr.kind == CMD_WRITE || (extended && hdr.flags & CMD_FLAG_PAYLOAD_LEN != 0);
                let want = if payload { hdr.length } else { 0 };
                assert_eq!(discard as u64, want);
                assert!(discard <= MAX_BLOCK);
                // the error reply's shape: simple, or one error chunk with structured replies
                let reply = error_reply(&session, hdr.cookie, hdr.offset, errno);
                if session.structured {
                    let c = chunks(&session, &reply, hdr.cookie, hdr.offset);
                    assert_eq!(c.len(), 1);
                    assert_eq!(c[0].1, REPLY_TYPE_ERROR);
                    assert_eq!(&c[0].2[0..4], &errno.to_be_bytes());
                } else {
                    assert_eq!(parse_simple_reply(&reply).map(|r| (r.errno, r.cookie)), Some((errno, hdr.cookie)));
                }
                if hdr.kind == CMD_BLOCK_STATUS && session.allocation.is_none() {
                    assert_eq!(errno, EINVAL);
                }
                if input.len() < discard as usize {
                    break;
                }
                input = &input[discard as usize..];
            }
            Decision::Disconnect => {
                assert_eq!(hdr.kind, CMD_DISC);
                break;
            }
            Decision::Fatal { errno } => {
                assert_eq!(errno, EINVAL);
                let payload = hdr.kind == CMD_WRITE || (extended && hdr.flags & CMD_FLAG_PAYLOAD_LEN != 0);
                assert!(payload && hdr.length > MAX_BLOCK as u64);
                break;
            }
        }
    }
    assert_eq!(backend.size(), SIZE as u64);
    assert!(backend.contents() == shadow, "backend and shadow differ");
});
