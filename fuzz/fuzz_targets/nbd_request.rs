//! The transmission phase fed arbitrary client bytes: a stream of request
//! headers (and write payloads) parsed, validated by `decide` and executed
//! against a `MemBackend`, checked against a shadow copy of the disk.
//! Asserts no panic, that nothing out of bounds or over the maximum block
//! size is ever executed or allocated, that error decisions carry the right
//! payload to discard, that every reply echoes the cookie, and that reads
//! return exactly what was written.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache_serve::nbd::consts::*;
use ssdcache_serve::nbd::request::{
    decide, execute, parse_request_header, parse_simple_reply, Command, Decision, ExportParams,
};
use ssdcache_serve::{Backend, MemBackend};

const SIZE: usize = 64 * 1024;
const MAX_BLOCK: u32 = 16 * 1024;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut input)) = data.split_first() else { return };
    let params = ExportParams { size: SIZE as u64, max_block: MAX_BLOCK, read_only: mode & 1 == 1 };
    let backend = MemBackend::new(SIZE);
    let mut shadow = vec![0u8; SIZE];
    while input.len() >= REQUEST_HEADER_LEN {
        let (h, rest) = input.split_at(REQUEST_HEADER_LEN);
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
                let reply = execute(&backend, &cmd, hdr.cookie, payload);
                let r = parse_simple_reply(&reply[..SIMPLE_REPLY_LEN]).expect("reply magic");
                assert_eq!(r.cookie, hdr.cookie);
                assert_eq!(r.errno, 0, "validated {cmd:?} failed");
                let range = |offset: u64, len: u32| {
                    let end = offset + len as u64;
                    assert!(end <= SIZE as u64, "{cmd:?} out of bounds");
                    offset as usize..end as usize
                };
                match cmd {
                    Command::Read { offset, len } => {
                        assert_eq!(reply.len(), SIMPLE_REPLY_LEN + len as usize);
                        assert_eq!(&reply[SIMPLE_REPLY_LEN..], &shadow[range(offset, len)]);
                    }
                    Command::Write { offset, len, .. } => {
                        assert!(!params.read_only);
                        shadow[range(offset, len)].copy_from_slice(payload);
                        assert_eq!(reply.len(), SIMPLE_REPLY_LEN);
                    }
                    Command::Trim { offset, len, .. } | Command::WriteZeroes { offset, len, .. } => {
                        assert!(!params.read_only);
                        shadow[range(offset, len)].fill(0);
                    }
                    Command::Flush => {}
                }
            }
            Decision::Reject { errno, discard } => {
                assert!(matches!(errno, EINVAL | ENOSPC | EPERM), "errno {errno}");
                let want = if hdr.kind == CMD_WRITE { hdr.length } else { 0 };
                assert_eq!(discard, want);
                assert!(discard <= MAX_BLOCK);
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
                assert!(hdr.kind == CMD_WRITE && hdr.length > MAX_BLOCK);
                break;
            }
        }
    }
    assert_eq!(backend.size(), SIZE as u64);
    assert!(backend.contents() == shadow, "backend and shadow differ");
});
