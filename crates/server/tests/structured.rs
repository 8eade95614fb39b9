//! Structured replies, metadata contexts, BLOCK_STATUS, CACHE and read-only
//! exports over real TCP sockets, spoken to by a hand-written raw client:
//! the negotiation rules (SET before STRUCTURED_REPLY, unknown contexts and
//! exports, a SET that replaces or fails), structured reads against plain
//! ones, and the hostile requests (BLOCK_STATUS without a context, past the
//! end, of length 0, with REQ_ONE or unknown flags), each followed by a
//! request that works on the same connection.

mod common;

use ssdcache_block::{Backend, FileBackend, MemBackend};
use ssdcache_nbd::consts::*;
use ssdcache_nbd::request::{encode_request_header, parse_simple_reply, RequestHeader};
use ssdcache_nbd::structured::split_chunk;
use ssdcache_server::{Export, Server, ServerConfig, ServerHandle};
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

const T: Duration = Duration::from_secs(10);
/// The sparse file: 8 MiB, data only in 1..2 MiB and the last 64 KiB.
const SIZE: u64 = 8 << 20;
const DATA: std::ops::Range<u64> = (1 << 20)..(2 << 20);
const TAIL: u64 = SIZE - (64 << 10);

async fn start(exports: Vec<Export>) -> ServerHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Server::new(exports, ServerConfig::default()).unwrap().start(listener).unwrap()
}

/// A sparse file backend (kept alive by the returned directory) and its bytes.
fn sparse() -> (tempfile::TempDir, Arc<FileBackend>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse.img");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(SIZE).unwrap();
    let mut bytes = vec![0u8; SIZE as usize];
    for (i, b) in bytes[DATA.start as usize..DATA.end as usize].iter_mut().enumerate() {
        *b = (i % 251) as u8 + 1;
    }
    bytes[TAIL as usize..].fill(0xAB);
    f.write_all_at(&bytes[DATA.start as usize..DATA.end as usize], DATA.start).unwrap();
    f.write_all_at(&bytes[TAIL as usize..], TAIL).unwrap();
    f.sync_all().unwrap();
    drop(f);
    (dir, Arc::new(FileBackend::open(&path, false).unwrap()), bytes)
}

/// Whether the temporary directory's file system reports holes (ext4, xfs,
/// tmpfs, btrfs do); the hole checks are skipped on one that does not.
fn fs_has_holes(b: &FileBackend) -> bool {
    b.block_status(0, SIZE, 10).unwrap().iter().any(|e| e.hole)
}

/// A reply: simple `(errno, data)` or structured chunks `(flags, type, payload)`.
#[derive(Debug)]
enum Reply {
    Simple(u32, Vec<u8>),
    Chunks(Vec<(u16, u16, Vec<u8>)>),
}

impl Reply {
    fn errno(&self) -> u32 {
        match self {
            Reply::Simple(e, _) => *e,
            Reply::Chunks(c) => c
                .iter()
                .find(|(_, t, _)| t & (1 << 15) != 0)
                .map_or(0, |(_, _, p)| u32::from_be_bytes(p[0..4].try_into().unwrap())),
        }
    }

    /// The data of a successful read, reassembled from its content chunks.
    fn data(&self, offset: u64, len: usize) -> Vec<u8> {
        match self {
            Reply::Simple(0, d) => d.clone(),
            Reply::Chunks(chunks) => {
                let mut out = vec![0xEEu8; len];
                let mut covered = 0;
                for (_, t, p) in chunks {
                    let at = |p: &[u8]| (u64::from_be_bytes(p[0..8].try_into().unwrap()) - offset) as usize;
                    match *t {
                        REPLY_TYPE_OFFSET_DATA => {
                            out[at(p)..at(p) + p.len() - 8].copy_from_slice(&p[8..]);
                            covered += p.len() - 8;
                        }
                        REPLY_TYPE_OFFSET_HOLE => {
                            let n = u32::from_be_bytes(p[8..12].try_into().unwrap()) as usize;
                            out[at(p)..at(p) + n].fill(0);
                            covered += n;
                        }
                        REPLY_TYPE_NONE => {}
                        t => panic!("unexpected chunk type {t:#x} in a read reply"),
                    }
                }
                assert_eq!(covered, len, "content chunks cover the read");
                out
            }
            r => panic!("not a successful read: {r:?}"),
        }
    }

    /// The context id and descriptors of a block status reply.
    fn extents(&self) -> (u32, Vec<(u32, u32)>) {
        let Reply::Chunks(c) = self else { panic!("block status needs a structured reply: {self:?}") };
        assert_eq!(c.len(), 1, "one context, one chunk: {c:?}");
        let (flags, kind, p) = &c[0];
        assert_eq!((*flags, *kind), (REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS), "{c:?}");
        assert!(p.len() >= 12 && (p.len() - 4) % 8 == 0, "{c:?}");
        let be = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap());
        (be(&p[0..4]), p[4..].chunks_exact(8).map(|d| (be(&d[0..4]), be(&d[4..8]))).collect())
    }
}

struct Client {
    s: TcpStream,
    /// Read replies of this length expect data after a simple reply header.
    structured: bool,
}

impl Client {
    async fn connect(h: &ServerHandle) -> Client {
        let s = common::greeted(h).await;
        Client { s, structured: false }
    }

    async fn option(&mut self, opt: u32, data: &[u8]) -> Vec<(u32, Vec<u8>)> {
        common::option(&mut self.s, opt, data, T).await
    }

    async fn structured_replies(&mut self) {
        assert_eq!(self.option(OPT_STRUCTURED_REPLY, b"").await, vec![(REP_ACK, vec![])]);
        self.structured = true;
    }

    /// NBD_OPT_GO; the transmission flags.
    async fn go(&mut self, name: &str) -> u16 {
        let mut d = (name.len() as u32).to_be_bytes().to_vec();
        d.extend_from_slice(name.as_bytes());
        d.extend_from_slice(&0u16.to_be_bytes());
        let r = self.option(OPT_GO, &d).await;
        assert_eq!(r.last().unwrap().0, REP_ACK, "{r:?}");
        let e = r.iter().find(|(t, d)| *t == REP_INFO && d[0..2] == INFO_EXPORT.to_be_bytes()).unwrap();
        u16::from_be_bytes([e.1[10], e.1[11]])
    }

    async fn call(&mut self, kind: u16, flags: u16, offset: u64, length: u32, payload: &[u8]) -> Reply {
        let mut m =
            encode_request_header(&RequestHeader { flags, kind, cookie: 42, offset, length: length as u64 }).to_vec();
        m.extend_from_slice(payload);
        self.s.write_all(&m).await.unwrap();
        let mut magic = [0u8; 4];
        timeout(T, self.s.read_exact(&mut magic)).await.expect("reply within 10 s").unwrap();
        if magic == SIMPLE_REPLY_MAGIC.to_be_bytes() {
            let mut h = magic.to_vec();
            h.resize(16, 0);
            self.s.read_exact(&mut h[4..]).await.unwrap();
            let r = parse_simple_reply(&h).unwrap();
            assert_eq!(r.cookie, 42);
            assert!(!(self.structured && kind == CMD_READ), "a simple reply to a structured READ");
            let mut data = Vec::new();
            if kind == CMD_READ && r.errno == 0 {
                data.resize(length as usize, 0);
                self.s.read_exact(&mut data).await.unwrap();
            }
            return Reply::Simple(r.errno, data);
        }
        assert_eq!(magic, STRUCTURED_REPLY_MAGIC.to_be_bytes(), "reply magic");
        assert!(self.structured, "a structured reply nobody negotiated");
        let mut chunks = Vec::new();
        let mut first = true;
        loop {
            let mut h = [0u8; 20];
            if first {
                h[0..4].copy_from_slice(&magic);
                self.s.read_exact(&mut h[4..]).await.unwrap();
                first = false;
            } else {
                self.s.read_exact(&mut h).await.unwrap();
            }
            let len = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
            let mut p = vec![0u8; len];
            self.s.read_exact(&mut p).await.unwrap();
            let whole = [&h[..], &p].concat();
            let (c, rest) = split_chunk(&whole).expect("a well-formed chunk");
            assert!(rest.is_empty());
            assert_eq!(c.cookie, 42);
            let (flags, kind) = (c.flags, c.kind);
            chunks.push((flags, kind, p));
            if flags & REPLY_FLAG_DONE != 0 {
                return Reply::Chunks(chunks);
            }
        }
    }
}

fn meta(name: &str, queries: &[&str]) -> Vec<u8> {
    let mut v = (name.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(name.as_bytes());
    v.extend_from_slice(&(queries.len() as u32).to_be_bytes());
    for q in queries {
        v.extend_from_slice(&(q.len() as u32).to_be_bytes());
        v.extend_from_slice(q.as_bytes());
    }
    v
}

/// A client with structured replies and base:allocation on export `disk`.
async fn with_allocation(h: &ServerHandle) -> Client {
    let mut c = Client::connect(h).await;
    c.structured_replies().await;
    let r = c.option(OPT_SET_META_CONTEXT, &meta("disk", &["base:allocation"])).await;
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0].0, REP_META_CONTEXT);
    assert_eq!(&r[0].1[4..], b"base:allocation");
    assert_ne!(&r[0].1[0..4], &[0, 0, 0, 0], "a SET context id is nonzero");
    c.go("disk").await;
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negotiation_rules_over_the_wire() {
    let (_d, file, _) = sparse();
    let h = start(vec![Export::new("disk", file)]).await;
    let mut c = Client::connect(&h).await;
    // contexts before structured replies: INVALID, and the connection goes on
    for opt in [OPT_SET_META_CONTEXT, OPT_LIST_META_CONTEXT] {
        let r = c.option(opt, &meta("disk", &["base:allocation"])).await;
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].0, REP_ERR_INVALID);
    }
    assert_eq!(c.option(OPT_STRUCTURED_REPLY, b"x").await[0].0, REP_ERR_INVALID, "data on STRUCTURED_REPLY");
    c.structured_replies().await;
    // LIST: everything, and by the base: wildcard; unknown namespaces ignored
    for qs in [&[][..], &["base:"][..], &["qemu:allocation-depth", "base:allocation"][..]] {
        let r = c.option(OPT_LIST_META_CONTEXT, &meta("disk", qs)).await;
        assert_eq!(r, vec![(REP_META_CONTEXT, b"\0\0\0\0base:allocation".to_vec()), (REP_ACK, vec![])], "{qs:?}");
    }
    // unknown contexts select nothing; an unknown export; a malformed request; no namespace
    assert_eq!(
        c.option(OPT_SET_META_CONTEXT, &meta("disk", &["base:nothing", "x-a:b"])).await,
        vec![(REP_ACK, vec![])]
    );
    assert_eq!(c.option(OPT_SET_META_CONTEXT, &meta("nope", &["base:allocation"])).await[0].0, REP_ERR_UNKNOWN);
    assert_eq!(c.option(OPT_SET_META_CONTEXT, &[0, 0, 0, 9]).await[0].0, REP_ERR_INVALID);
    assert_eq!(c.option(OPT_LIST_META_CONTEXT, &meta("disk", &["allocation"])).await[0].0, REP_ERR_INVALID);
    // a 64 KiB option of queries is still answered (bounded work), then GO works
    let many: Vec<String> = (0..5000).map(|i| format!("x-{i}:q")).collect();
    let refs: Vec<&str> = many.iter().map(|s| s.as_str()).collect();
    let big = meta("disk", &refs);
    assert!(big.len() < MAX_OPTION_DATA as usize);
    assert_eq!(c.option(OPT_SET_META_CONTEXT, &big).await, vec![(REP_ACK, vec![])]);
    let flags = c.go("disk").await;
    assert_eq!(flags & (FLAG_SEND_DF | FLAG_SEND_CACHE), FLAG_SEND_DF | FLAG_SEND_CACHE);
    assert_eq!(flags & FLAG_READ_ONLY, 0);
    // no context was selected in the end: BLOCK_STATUS is EINVAL (an error chunk), then a read works
    assert_eq!(c.call(CMD_BLOCK_STATUS, 0, 0, 4096, &[]).await.errno(), EINVAL);
    assert_eq!(c.call(CMD_READ, 0, TAIL, 4, &[]).await.data(TAIL, 4), vec![0xAB; 4]);
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_reads_equal_plain_reads() {
    let (_d, file, bytes) = sparse();
    let h = start(vec![Export::new("disk", file)]).await;
    let mut plain = Client::connect(&h).await;
    assert_eq!(plain.go("disk").await & FLAG_SEND_DF, 0, "no DF without structured replies");
    let mut st = with_allocation(&h).await;
    for (off, len) in
        [(0u64, 4096usize), (DATA.start - 100, 8192), (DATA.end - 1, 1), (TAIL - 5000, 69_536), (12345, 1 << 20)]
    {
        let p = plain.call(CMD_READ, 0, off, len as u32, &[]).await.data(off, len);
        let s = st.call(CMD_READ, 0, off, len as u32, &[]).await;
        assert_eq!(s.data(off, len), p, "read {off}+{len}");
        assert_eq!(p, &bytes[off as usize..off as usize + len]);
        // DF: one content chunk
        let df = st.call(CMD_READ, CMD_FLAG_DF, off, len as u32, &[]).await;
        let Reply::Chunks(c) = &df else { panic!() };
        assert_eq!(
            c.iter().filter(|(_, t, _)| *t == REPLY_TYPE_OFFSET_DATA || *t == REPLY_TYPE_OFFSET_HOLE).count(),
            1
        );
        assert_eq!(df.data(off, len), p);
    }
    // zero-length read: a NONE chunk
    let Reply::Chunks(c) = st.call(CMD_READ, 0, SIZE, 0, &[]).await else { panic!() };
    assert_eq!(c, vec![(REPLY_FLAG_DONE, REPLY_TYPE_NONE, vec![])]);
    // errors: past the end, too long, DF on the plain connection, unknown flag —
    // an error chunk, never a simple reply to a structured READ
    for (flags, off, len) in [(0, SIZE - 1, 2), (0, 0, DEFAULT_MAX_BLOCK + 1), (CMD_FLAG_REQ_ONE, 0, 1)] {
        let r = st.call(CMD_READ, flags, off, len, &[]).await;
        assert!(matches!(r, Reply::Chunks(_)), "{r:?}");
        assert_eq!(r.errno(), EINVAL);
    }
    assert_eq!(plain.call(CMD_READ, CMD_FLAG_DF, 0, 1, &[]).await.errno(), EINVAL);
    // writes: same on both, simple success replies, errors as chunks with structured replies
    assert!(matches!(st.call(CMD_WRITE, 0, 100, 3, b"xyz").await, Reply::Simple(0, _)));
    assert_eq!(plain.call(CMD_READ, 0, 100, 3, &[]).await.data(100, 3), b"xyz");
    let r = st.call(CMD_WRITE, 0, SIZE - 1, 2, b"ab").await;
    assert!(matches!(r, Reply::Chunks(_)) && r.errno() == ENOSPC, "{r:?}");
    assert_eq!(st.call(CMD_READ, 0, 100, 3, &[]).await.data(100, 3), b"xyz", "the connection goes on");
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_status_reports_holes_and_refuses_bad_requests() {
    let (_d, file, _) = sparse();
    let holes = fs_has_holes(&file);
    let h = start(vec![Export::new("disk", file)]).await;
    let mut c = with_allocation(&h).await;
    // the whole export: extents cover it, data exactly where it was written
    let (id, d) = c.call(CMD_BLOCK_STATUS, 0, 0, SIZE as u32, &[]).await.extents();
    assert_ne!(id, 0);
    let total: u64 = d.iter().map(|x| x.0 as u64).sum();
    assert_eq!(total, SIZE, "{d:?}");
    let mut at = 0;
    for &(len, flags) in &d {
        let (s, e) = (at, at + len as u64);
        let overlaps = |r: std::ops::Range<u64>| s < r.end && r.start < e;
        if flags & STATE_HOLE != 0 {
            assert_eq!(flags, STATE_HOLE | STATE_ZERO, "a hole reads as zeroes");
            assert!(!overlaps(DATA) && !overlaps(TAIL..SIZE), "hole over data at {s}..{e}: {d:?}");
        }
        at = e;
    }
    if holes {
        assert_eq!(d.len(), 4, "{d:?}");
        assert_eq!(d[0], ((1 << 20), STATE_HOLE | STATE_ZERO));
        assert_eq!(d[1], ((1 << 20), 0));
        assert_eq!(d[3], ((64 << 10), 0));
    } else {
        eprintln!("the file system reports no holes: hole checks skipped");
    }
    // REQ_ONE: exactly one descriptor, never longer than asked
    let (_, d) = c.call(CMD_BLOCK_STATUS, CMD_FLAG_REQ_ONE, 4096, 100, &[]).await.extents();
    assert_eq!(d.len(), 1);
    assert!(d[0].0 <= 100 && d[0].0 > 0);
    let (_, d) = c.call(CMD_BLOCK_STATUS, CMD_FLAG_REQ_ONE, 0, SIZE as u32, &[]).await.extents();
    assert_eq!(d.len(), 1);
    if holes {
        assert_eq!(d[0], (1 << 20, STATE_HOLE | STATE_ZERO));
    }
    // an unaligned query inside the data
    let (_, d) = c.call(CMD_BLOCK_STATUS, 0, DATA.start + 7, 10, &[]).await.extents();
    assert_eq!(d, vec![(10, 0)]);
    // hostile ones: past the end, overflowing, zero length, unknown flags — EINVAL each, the connection goes on
    for (flags, off, len) in [(0, SIZE - 1, 2), (0, u64::MAX - 1, 4), (0, 0, 0), (CMD_FLAG_DF, 0, 1), (0x8000, 0, 1)] {
        let r = c.call(CMD_BLOCK_STATUS, flags, off, len, &[]).await;
        assert_eq!(r.errno(), EINVAL, "{flags:#x} {off}+{len}: {r:?}");
    }
    // FUA is accepted on every command once SEND_FUA is advertised
    assert_eq!(c.call(CMD_BLOCK_STATUS, CMD_FLAG_FUA, 0, 512, &[]).await.extents().1.len(), 1);
    // CACHE: a simple success; out of range or too long: EINVAL
    assert!(matches!(c.call(CMD_CACHE, 0, DATA.start, 1 << 20, &[]).await, Reply::Simple(0, _)));
    assert_eq!(c.call(CMD_CACHE, 0, SIZE, 1, &[]).await.errno(), EINVAL);
    assert_eq!(c.call(CMD_CACHE, 0, 0, DEFAULT_MAX_BLOCK + 1, &[]).await.errno(), EINVAL);
    assert_eq!(c.call(CMD_READ, 0, TAIL, 2, &[]).await.data(TAIL, 2), vec![0xAB; 2]);
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_status_without_structured_replies_is_a_simple_einval() {
    let mem = Arc::new(MemBackend::new(1 << 20));
    let h = start(vec![Export::new("disk", mem)]).await;
    let mut c = Client::connect(&h).await;
    let flags = c.go("disk").await;
    assert_eq!(flags & FLAG_SEND_CACHE, FLAG_SEND_CACHE);
    assert!(matches!(c.call(CMD_BLOCK_STATUS, 0, 0, 512, &[]).await, Reply::Simple(EINVAL, _)));
    assert!(matches!(c.call(CMD_CACHE, 0, 0, 512, &[]).await, Reply::Simple(0, _)));
    assert!(matches!(c.call(CMD_READ, 0, 0, 2, &[]).await, Reply::Simple(0, _)));
    // a SET for another export does not apply to this one
    let mut c = Client::connect(&h).await;
    c.structured_replies().await;
    assert_eq!(c.option(OPT_SET_META_CONTEXT, &meta("", &["base:allocation"])).await.len(), 2);
    c.go("disk").await; // "" is the default export, which is "disk": the context holds
                        // MemBackend reports its zero blocks as holes
    assert_eq!(c.call(CMD_BLOCK_STATUS, 0, 0, 512, &[]).await.extents().1, vec![(512, STATE_HOLE | STATE_ZERO)]);
    assert!(matches!(c.call(CMD_WRITE, 0, 4096, 1, b"x").await, Reply::Simple(0, _)));
    assert_eq!(
        c.call(CMD_BLOCK_STATUS, 0, 0, 3 * 4096, &[]).await.extents().1,
        vec![(4096, STATE_HOLE | STATE_ZERO), (4096, 0), (4096, STATE_HOLE | STATE_ZERO)]
    );
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_export_refuses_writes_with_eperm() {
    let mem = Arc::new(MemBackend::from_vec(vec![7u8; 1 << 20]));
    let h = start(vec![Export::new("disk", mem.clone()).into_read_only()]).await;
    for structured in [false, true] {
        let mut c = Client::connect(&h).await;
        if structured {
            c.structured_replies().await;
        }
        let flags = c.go("disk").await;
        assert_eq!(flags & FLAG_READ_ONLY, FLAG_READ_ONLY);
        assert_eq!(flags & (FLAG_SEND_TRIM | FLAG_SEND_WRITE_ZEROES), 0, "nothing offered that only fails");
        assert_eq!(flags & (FLAG_SEND_FLUSH | FLAG_SEND_CACHE), FLAG_SEND_FLUSH | FLAG_SEND_CACHE);
        assert_eq!(c.call(CMD_WRITE, 0, 0, 4, b"abcd").await.errno(), EPERM);
        assert_eq!(c.call(CMD_WRITE, CMD_FLAG_FUA, 10, 3, b"xyz").await.errno(), EPERM);
        assert_eq!(c.call(CMD_TRIM, 0, 0, 4096, &[]).await.errno(), EPERM);
        assert_eq!(c.call(CMD_WRITE_ZEROES, 0, 0, 4096, &[]).await.errno(), EPERM);
        assert_eq!(c.call(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE, 0, 4096, &[]).await.errno(), EPERM);
        // reads, flushes and cache hints still work, and nothing changed
        assert_eq!(c.call(CMD_READ, 0, 0, 8, &[]).await.data(0, 8), vec![7u8; 8]);
        assert_eq!(c.call(CMD_FLUSH, 0, 0, 0, &[]).await.errno(), 0);
        assert_eq!(c.call(CMD_CACHE, 0, 0, 4096, &[]).await.errno(), 0);
    }
    assert!(mem.contents().iter().all(|&b| b == 7));
    h.shutdown().await.unwrap();
}
