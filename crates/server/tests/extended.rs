//! Extended headers (`NBD_OPT_EXTENDED_HEADERS`) over a real TCP socket,
//! spoken by a hand-written raw client on a sparse 8 GiB file: 64-bit
//! trims, zeroes (plain, NO_HOLE, FAST_ZERO) and block status of 5 GiB,
//! reads and writes that round-trip, reads over the payload limit refused
//! with the connection kept, and the hostile requests (length 0, past the
//! end, offset + length overflowing 64 bits, PAYLOAD_LEN where no payload
//! belongs, a compact header after the negotiation, a read-only export),
//! each followed by a request that works.

mod common;

use ssdcache_block::{Backend, FileBackend};
use ssdcache_nbd::consts::*;
use ssdcache_nbd::request::{encode_extended_request_header, encode_request_header, RequestHeader};
use ssdcache_nbd::structured::split_extended_chunk;
use ssdcache_server::{Export, Server, ServerConfig, ServerHandle};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

const T: Duration = Duration::from_secs(20);
const GIB: u64 = 1 << 30;
const SIZE: u64 = 8 * GIB;

/// A sparse file of 8 GiB (kept alive by the returned directory).
fn sparse() -> (tempfile::TempDir, Arc<FileBackend>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse.img");
    std::fs::File::create(&path).unwrap().set_len(SIZE).unwrap();
    (dir, Arc::new(FileBackend::open(&path, false).unwrap()))
}

async fn start(exports: Vec<Export>) -> ServerHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Server::new(exports, ServerConfig::default()).unwrap().start(listener).unwrap()
}

/// One reply: its chunks `(flags, type, offset, payload)`, the last DONE.
#[derive(Debug)]
struct Reply(Vec<(u16, u16, u64, Vec<u8>)>);

impl Reply {
    fn errno(&self) -> u32 {
        self.0.iter().find(|c| c.1 & (1 << 15) != 0).map_or(0, |c| u32::from_be_bytes(c.3[0..4].try_into().unwrap()))
    }

    fn ok(&self) {
        assert_eq!(self.0.len(), 1, "{self:?}");
        assert_eq!((self.0[0].0, self.0[0].1, self.0[0].3.len()), (REPLY_FLAG_DONE, REPLY_TYPE_NONE, 0), "{self:?}");
    }

    fn data(&self) -> Vec<u8> {
        assert_eq!(self.0.len(), 1, "{self:?}");
        assert_eq!(self.0[0].1, REPLY_TYPE_OFFSET_DATA, "{self:?}");
        self.0[0].3[8..].to_vec()
    }

    /// The descriptors of a BLOCK_STATUS_EXT reply.
    fn extents(&self) -> Vec<(u64, u64)> {
        assert_eq!(self.0.len(), 1, "{self:?}");
        let (flags, kind, _, p) = &self.0[0];
        assert_eq!((*flags, *kind), (REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS_EXT), "{self:?}");
        let whole = chunk_bytes(&self.0[0]);
        split_extended_chunk(&whole).unwrap().0.block_status().unwrap_or_else(|| panic!("malformed: {p:?}")).1
    }
}

fn chunk_bytes(c: &(u16, u16, u64, Vec<u8>)) -> Vec<u8> {
    let mut b = EXTENDED_REPLY_MAGIC.to_be_bytes().to_vec();
    b.extend_from_slice(&c.0.to_be_bytes());
    b.extend_from_slice(&c.1.to_be_bytes());
    b.extend_from_slice(&7u64.to_be_bytes());
    b.extend_from_slice(&c.2.to_be_bytes());
    b.extend_from_slice(&(c.3.len() as u64).to_be_bytes());
    b.extend_from_slice(&c.3);
    b
}

struct Client {
    s: TcpStream,
}

impl Client {
    async fn connect(h: &ServerHandle) -> Client {
        let s = common::greeted(h).await;
        Client { s }
    }

    async fn option(&mut self, opt: u32, data: &[u8]) -> Vec<(u32, Vec<u8>)> {
        common::option(&mut self.s, opt, data, T).await
    }

    /// Extended headers, `base:allocation`, GO: the transmission flags.
    async fn extended(h: &ServerHandle, name: &str) -> (Client, u16) {
        let mut c = Client::connect(h).await;
        assert_eq!(c.option(OPT_EXTENDED_HEADERS, b"").await, vec![(REP_ACK, vec![])]);
        // structured replies come with them; asking again is refused
        assert_eq!(c.option(OPT_STRUCTURED_REPLY, b"").await[0].0, REP_ERR_EXT_HEADER_REQD);
        let mut m = (name.len() as u32).to_be_bytes().to_vec();
        m.extend_from_slice(name.as_bytes());
        m.extend_from_slice(&1u32.to_be_bytes());
        m.extend_from_slice(&15u32.to_be_bytes());
        m.extend_from_slice(b"base:allocation");
        let r = c.option(OPT_SET_META_CONTEXT, &m).await;
        assert_eq!(r[0].0, REP_META_CONTEXT, "{r:?}");
        let mut d = (name.len() as u32).to_be_bytes().to_vec();
        d.extend_from_slice(name.as_bytes());
        d.extend_from_slice(&0u16.to_be_bytes());
        let r = c.option(OPT_GO, &d).await;
        assert_eq!(r.last().unwrap().0, REP_ACK, "{r:?}");
        let e = r.iter().find(|(t, d)| *t == REP_INFO && d[0..2] == INFO_EXPORT.to_be_bytes()).unwrap();
        (c, u16::from_be_bytes([e.1[10], e.1[11]]))
    }

    async fn send(&mut self, kind: u16, flags: u16, offset: u64, length: u64, payload: &[u8]) {
        let h = RequestHeader { flags, kind, cookie: 0xc0ffee, offset, length };
        let mut m = encode_extended_request_header(&h).to_vec();
        m.extend_from_slice(payload);
        self.s.write_all(&m).await.unwrap();
    }

    async fn reply(&mut self, offset: u64) -> Reply {
        let mut chunks = Vec::new();
        loop {
            let mut h = [0u8; 32];
            timeout(T, self.s.read_exact(&mut h)).await.expect("a reply in time").unwrap();
            assert_eq!(&h[0..4], &EXTENDED_REPLY_MAGIC.to_be_bytes(), "only extended replies: {h:?}");
            let flags = u16::from_be_bytes([h[4], h[5]]);
            let kind = u16::from_be_bytes([h[6], h[7]]);
            assert_eq!(u64::from_be_bytes(h[8..16].try_into().unwrap()), 0xc0ffee);
            let at = u64::from_be_bytes(h[16..24].try_into().unwrap());
            assert_eq!(at, offset, "the reply echoes the request's offset");
            let len = u64::from_be_bytes(h[24..32].try_into().unwrap());
            assert!(len <= (64 << 20), "a sane payload: {len}");
            let mut p = vec![0u8; len as usize];
            self.s.read_exact(&mut p).await.unwrap();
            chunks.push((flags, kind, at, p));
            if flags & REPLY_FLAG_DONE != 0 {
                return Reply(chunks);
            }
        }
    }

    async fn call(&mut self, kind: u16, flags: u16, offset: u64, length: u64, payload: &[u8]) -> Reply {
        self.send(kind, flags, offset, length, payload).await;
        self.reply(offset).await
    }

    async fn read(&mut self, offset: u64, len: u64) -> Vec<u8> {
        self.call(CMD_READ, 0, offset, len, b"").await.data()
    }

    async fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(timeout(T, self.s.read(&mut b)).await, Ok(Ok(0)) | Ok(Err(_)))
    }
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8 ^ seed | 1).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extended_headers_carry_64_bit_lengths_and_keep_the_payload_limit() {
    let (_dir, backend) = sparse();
    let holes = backend.block_status(0, SIZE, 10).unwrap().iter().any(|e| e.hole);
    let h = start(vec![Export::new("disk", backend.clone())]).await;
    let (mut c, flags) = Client::extended(&h, "disk").await;
    assert_eq!(flags & (FLAG_SEND_DF | FLAG_SEND_FAST_ZERO), FLAG_SEND_DF | FLAG_SEND_FAST_ZERO);

    // writes and reads round-trip (with and without the redundant PAYLOAD_LEN)
    let (a, b) = (pattern(64 << 10, 3), pattern(64 << 10, 9));
    c.call(CMD_WRITE, 0, 2 * GIB, a.len() as u64, &a).await.ok();
    c.call(CMD_WRITE, CMD_FLAG_PAYLOAD_LEN | CMD_FLAG_FUA, 7 * GIB + 512, b.len() as u64, &b).await.ok();
    assert_eq!(c.read(2 * GIB, a.len() as u64).await, a);
    assert_eq!(c.read(7 * GIB + 512, b.len() as u64).await, b);

    // block status of 8 GiB in one 64-bit chunk: a hole of more than 4 GiB is one descriptor
    let d = c.call(CMD_BLOCK_STATUS, 0, 0, SIZE, b"").await.extents();
    assert!(d.iter().map(|x| x.0).sum::<u64>() <= SIZE && !d.is_empty(), "{d:?}");
    if holes {
        assert_eq!(d[0], (2 * GIB, (STATE_HOLE | STATE_ZERO) as u64), "{d:?}");
        assert!(d.iter().any(|x| x.1 != 0 && x.0 > 1 << 32), "one descriptor for the 5 GiB hole: {d:?}");
    }

    // a 5 GiB trim: punched, reads as zeroes, the data outside it kept (its end at 6 GiB)
    c.call(CMD_TRIM, 0, GIB, 5 * GIB, b"").await.ok();
    assert!(c.read(2 * GIB, a.len() as u64).await.iter().all(|&x| x == 0));
    assert_eq!(c.read(7 * GIB + 512, b.len() as u64).await, b);
    // 5 GiB of zeroes (plain, NO_HOLE, FAST_ZERO) over the rest
    c.call(CMD_WRITE, 0, 2 * GIB, a.len() as u64, &a).await.ok();
    c.call(CMD_WRITE_ZEROES, 0, 3 * GIB, 5 * GIB, b"").await.ok();
    assert!(c.read(7 * GIB + 512, b.len() as u64).await.iter().all(|&x| x == 0));
    assert_eq!(c.read(2 * GIB, a.len() as u64).await, a);
    c.call(CMD_WRITE, 0, 6 * GIB, b.len() as u64, &b).await.ok();
    let fast = c.call(CMD_WRITE_ZEROES, CMD_FLAG_FAST_ZERO, GIB + 7, 5 * GIB - 7, b"").await;
    match fast.errno() {
        0 => assert!(c.read(2 * GIB, a.len() as u64).await.iter().all(|&x| x == 0)),
        e => assert_eq!(e, ENOTSUP, "fast zeroes succeed or are not supported"),
    }
    assert_eq!(c.read(6 * GIB, b.len() as u64).await, b);
    c.call(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE | CMD_FLAG_FUA, 6 * GIB, 64 << 10, b"").await.ok();
    assert!(c.read(6 * GIB, b.len() as u64).await.iter().all(|&x| x == 0));
    if holes {
        let d = c.call(CMD_BLOCK_STATUS, CMD_FLAG_REQ_ONE, GIB, 5 * GIB, b"").await.extents();
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].1 == (STATE_HOLE | STATE_ZERO) as u64 && d[0].0 > 1 << 32, "the trimmed range is a hole: {d:?}");
    }

    // a cache hint of more than 4 GiB is fine
    c.call(CMD_CACHE, 0, 0, 5 * GIB, b"").await.ok();

    // reads over the payload limit: refused, never allocated, the connection goes on
    let max = ServerConfig::default().max_block as u64;
    for len in [max + 1, 1 << 32, 5 * GIB, u64::MAX] {
        assert_eq!(c.call(CMD_READ, 0, 0, len, b"").await.errno(), EINVAL, "read of {len}");
    }
    c.call(CMD_WRITE, 0, 5 * GIB, 16, &a[..16]).await.ok();
    assert_eq!(c.read(5 * GIB, 16).await, a[..16].to_vec());
    c.call(CMD_FLUSH, 0, 0, 0, b"").await.ok();
    c.send(CMD_DISC, 0, 0, 0, b"").await;
    assert!(c.closed().await);
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_trims_and_zeroes_get_errors_and_the_connection_survives() {
    let (_dir, backend) = sparse();
    let h = start(vec![Export::new("disk", backend.clone()), Export::new("ro", backend).into_read_only()]).await;
    let (mut c, _) = Client::extended(&h, "disk").await;
    let cases: [(u16, u16, u64, u64, u32); 12] = [
        (CMD_TRIM, 0, 0, 0, EINVAL),                      // length 0
        (CMD_WRITE_ZEROES, 0, GIB, 0, EINVAL),            // length 0
        (CMD_TRIM, 0, SIZE - 4096, 8192, EINVAL),         // past the end
        (CMD_WRITE_ZEROES, 0, SIZE, 1, ENOSPC),           // past the end
        (CMD_TRIM, 0, u64::MAX - 1, 4, EINVAL),           // offset + length overflows
        (CMD_TRIM, 0, 4096, u64::MAX, EINVAL),            // offset + length overflows
        (CMD_WRITE_ZEROES, 0, 1 << 63, 1 << 63, ENOSPC),  // offset + length overflows
        (CMD_BLOCK_STATUS, 0, 1, u64::MAX, EINVAL),       // offset + length overflows
        (CMD_BLOCK_STATUS, 0, 0, 0, EINVAL),              // length 0
        (CMD_CACHE, 0, SIZE, 1, EINVAL),                  // past the end
        (CMD_TRIM, CMD_FLAG_NO_HOLE, 0, 4096, EINVAL),    // a flag TRIM does not take
        (CMD_WRITE_ZEROES, CMD_FLAG_DF, 0, 4096, EINVAL), // a flag WRITE_ZEROES does not take
    ];
    for (kind, flags, offset, len, errno) in cases {
        assert_eq!(c.call(kind, flags, offset, len, b"").await.errno(), errno, "{kind} {flags:#x} {offset} {len}");
        assert_eq!(c.read(0, 8).await, vec![0; 8], "the connection goes on");
    }
    // PAYLOAD_LEN where no payload belongs: read, dropped, EINVAL, in sync after
    assert_eq!(c.call(CMD_TRIM, CMD_FLAG_PAYLOAD_LEN, 0, 24, &[0xAB; 24]).await.errno(), EINVAL);
    assert_eq!(c.call(CMD_BLOCK_STATUS, CMD_FLAG_PAYLOAD_LEN, 0, 16, &[1; 16]).await.errno(), EINVAL);
    assert_eq!(c.read(0, 8).await, vec![0; 8]);
    // a write over the payload limit: EINVAL, then closed (its payload is never read)
    let mut w = Client::extended(&h, "disk").await.0;
    assert_eq!(w.call(CMD_WRITE, 0, 0, 5 * GIB, b"").await.errno(), EINVAL);
    assert!(w.closed().await);
    // a compact header after extended headers: the connection is out of sync and closed
    let mut x = Client::extended(&h, "disk").await.0;
    let compact = encode_request_header(&RequestHeader { flags: 0, kind: CMD_READ, cookie: 1, offset: 0, length: 8 });
    x.s.write_all(&compact).await.unwrap();
    x.s.write_all(&[0; 4]).await.unwrap();
    assert!(x.closed().await);
    // a read-only export: EPERM for trims and zeroes
    let (mut r, flags) = Client::extended(&h, "ro").await;
    assert_eq!(flags & (FLAG_SEND_TRIM | FLAG_SEND_WRITE_ZEROES | FLAG_SEND_FAST_ZERO), 0);
    assert_eq!(r.call(CMD_TRIM, 0, 0, 5 * GIB, b"").await.errno(), EPERM);
    assert_eq!(r.call(CMD_WRITE_ZEROES, CMD_FLAG_FAST_ZERO, 0, 4096, b"").await.errno(), EPERM);
    assert_eq!(r.read(0, 8).await, vec![0; 8]);
    // the first connection still works after all of that
    assert_eq!(c.read(4096, 8).await, vec![0; 8]);
    h.shutdown().await.unwrap();
}
