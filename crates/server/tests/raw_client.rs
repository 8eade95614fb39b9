//! The server over real TCP sockets, spoken to by a hand-written raw client:
//! handshake variants, every command, error replies, pipelining with
//! out-of-order replies, misbehaving connections beside healthy ones, and the
//! graceful shutdown.

use ssdcache_block::{Backend, MemBackend};
use ssdcache_nbd::consts::*;
use ssdcache_nbd::handshake::{split_option_reply, OptionReply};
use ssdcache_nbd::request::{encode_request_header, parse_simple_reply, RequestHeader, SimpleReply};
use ssdcache_server::ShutdownReport;
use ssdcache_server::{Export, Server, ServerConfig, ServerHandle};
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

const SIZE: usize = 1 << 20;
const T: Duration = Duration::from_secs(10);

async fn start(exports: Vec<Export>, config: ServerConfig) -> ServerHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Server::new(exports, config).unwrap().start(listener).unwrap()
}

async fn start_mem() -> (ServerHandle, Arc<MemBackend>) {
    let mem = Arc::new(MemBackend::new(SIZE));
    let h = start(vec![Export::new("disk", mem.clone()).with_description("test disk")], ServerConfig::default()).await;
    (h, mem)
}

struct Client {
    s: TcpStream,
}

impl Client {
    /// Connects and does the greeting + client flags.
    async fn connect(h: &ServerHandle, client_flags: u32) -> Client {
        let mut s = TcpStream::connect(h.local_addr()).await.unwrap();
        let mut g = [0u8; 18];
        s.read_exact(&mut g).await.unwrap();
        assert_eq!(&g[0..16], b"NBDMAGICIHAVEOPT");
        assert_eq!(u16::from_be_bytes([g[16], g[17]]), FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
        s.write_all(&client_flags.to_be_bytes()).await.unwrap();
        Client { s }
    }

    async fn send_option(&mut self, opt: u32, data: &[u8]) {
        let mut m = IHAVEOPT.to_be_bytes().to_vec();
        m.extend_from_slice(&opt.to_be_bytes());
        m.extend_from_slice(&(data.len() as u32).to_be_bytes());
        m.extend_from_slice(data);
        self.s.write_all(&m).await.unwrap();
    }

    async fn option_reply(&mut self) -> (u32, u32, Vec<u8>) {
        let mut h = [0u8; 20];
        timeout(T, self.s.read_exact(&mut h)).await.unwrap().unwrap();
        let len = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
        let mut buf = h.to_vec();
        buf.resize(20 + len, 0);
        self.s.read_exact(&mut buf[20..]).await.unwrap();
        let (OptionReply { opt, reply, data }, rest) = split_option_reply(&buf).unwrap();
        assert!(rest.is_empty());
        (opt, reply, data.to_vec())
    }

    /// Replies up to and including the final one (ACK or an error).
    async fn option_replies(&mut self) -> Vec<(u32, u32, Vec<u8>)> {
        let mut v = Vec::new();
        loop {
            let r = self.option_reply().await;
            let last = r.1 == REP_ACK || r.1 & REP_FLAG_ERROR != 0;
            v.push(r);
            if last {
                return v;
            }
        }
    }

    /// NBD_OPT_GO; returns (size, flags).
    async fn go(&mut self, name: &str) -> (u64, u16) {
        self.send_option(OPT_GO, &info_data(name.as_bytes(), &[INFO_BLOCK_SIZE])).await;
        let replies = self.option_replies().await;
        assert_eq!(replies.last().unwrap().1, REP_ACK, "{replies:?}");
        let e = replies.iter().find(|r| r.1 == REP_INFO && r.2[0..2] == INFO_EXPORT.to_be_bytes()).unwrap();
        (u64::from_be_bytes(e.2[2..10].try_into().unwrap()), u16::from_be_bytes(e.2[10..12].try_into().unwrap()))
    }

    async fn ready(h: &ServerHandle) -> Client {
        Client::ready_on(h, "disk").await
    }

    async fn ready_on(h: &ServerHandle, name: &str) -> Client {
        let mut c = Client::connect(h, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).await;
        c.go(name).await;
        c
    }

    async fn send(&mut self, kind: u16, flags: u16, cookie: u64, offset: u64, length: u32, payload: &[u8]) {
        let mut m =
            encode_request_header(&RequestHeader { flags, kind, cookie, offset, length: length as u64 }).to_vec();
        m.extend_from_slice(payload);
        self.s.write_all(&m).await.unwrap();
    }

    async fn reply(&mut self) -> SimpleReply {
        let mut h = [0u8; 16];
        timeout(T, self.s.read_exact(&mut h)).await.expect("reply within 10 s").unwrap();
        parse_simple_reply(&h).expect("simple reply magic")
    }

    /// One request, one reply (plus data for a successful read of `length`).
    async fn call(&mut self, kind: u16, flags: u16, offset: u64, length: u32, payload: &[u8]) -> (u32, Vec<u8>) {
        self.send(kind, flags, 7, offset, length, payload).await;
        let r = self.reply().await;
        assert_eq!(r.cookie, 7);
        let mut data = Vec::new();
        if kind == CMD_READ && r.errno == 0 {
            data.resize(length as usize, 0);
            self.s.read_exact(&mut data).await.unwrap();
        }
        (r.errno, data)
    }

    /// True once the server has closed the connection (EOF or reset).
    async fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(timeout(T, self.s.read(&mut b)).await, Ok(Ok(0)) | Ok(Err(_)))
    }
}

fn info_data(name: &[u8], infos: &[u16]) -> Vec<u8> {
    let mut v = (name.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(name);
    v.extend_from_slice(&(infos.len() as u16).to_be_bytes());
    for i in infos {
        v.extend_from_slice(&i.to_be_bytes());
    }
    v
}

async fn stop(h: ServerHandle) -> ShutdownReport {
    timeout(T, h.shutdown()).await.expect("shutdown within 10 s").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command() {
    let (h, mem) = start_mem().await;
    let mut c = Client::connect(&h, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).await;
    let (size, flags) = c.go("disk").await;
    assert_eq!(size, SIZE as u64);
    let want = FLAG_HAS_FLAGS
        | FLAG_SEND_FLUSH
        | FLAG_SEND_FUA
        | FLAG_SEND_TRIM
        | FLAG_SEND_WRITE_ZEROES
        | FLAG_SEND_CACHE
        | FLAG_SEND_FAST_ZERO
        | FLAG_CAN_MULTI_CONN;
    assert_eq!(flags, want);

    let pattern: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 3) as u8).collect();
    assert_eq!(c.call(CMD_WRITE, 0, 4096, 8192, &pattern).await.0, 0);
    assert_eq!(c.call(CMD_READ, 0, 4096, 8192, &[]).await, (0, pattern.clone()));
    assert_eq!(&mem.contents()[4096..4096 + 8192], &pattern[..]);
    // FUA write
    assert_eq!(c.call(CMD_WRITE, CMD_FLAG_FUA, 0, 3, b"abc").await.0, 0);
    assert_eq!(mem.fua_ops.load(Ordering::Relaxed), 1);
    // flush
    assert_eq!(c.call(CMD_FLUSH, 0, 0, 0, &[]).await.0, 0);
    assert_eq!(mem.flushes.load(Ordering::Relaxed), 1);
    // trim (MemBackend zeroes) and write zeroes with and without NO_HOLE
    assert_eq!(c.call(CMD_TRIM, 0, 4096, 100, &[]).await.0, 0);
    assert_eq!(c.call(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE, 4196, 100, &[]).await.0, 0);
    assert_eq!(c.call(CMD_WRITE_ZEROES, CMD_FLAG_FUA, 4296, 100, &[]).await.0, 0);
    assert_eq!(mem.fua_ops.load(Ordering::Relaxed), 2);
    let (e, d) = c.call(CMD_READ, 0, 4096, 8192, &[]).await;
    assert_eq!(e, 0);
    assert!(d[..300].iter().all(|&b| b == 0));
    assert_eq!(&d[300..], &pattern[300..]);
    // zero-length read and the last byte
    assert_eq!(c.call(CMD_READ, 0, SIZE as u64, 0, &[]).await, (0, vec![]));
    assert_eq!(c.call(CMD_WRITE, 0, SIZE as u64 - 1, 1, b"z").await.0, 0);
    assert_eq!(c.call(CMD_READ, 0, SIZE as u64 - 1, 1, &[]).await, (0, b"z".to_vec()));
    // disconnect: no reply, server closes
    c.send(CMD_DISC, 0, 9, 0, 0, &[]).await;
    assert!(c.closed().await);
    let report = stop(h).await;
    assert_eq!(report, ShutdownReport { connections: 1, aborted: 0, backends_shut_down: 1 });
    assert_eq!(mem.shutdowns.load(Ordering::Relaxed), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_replies_keep_the_connection() {
    let (h, mem) = start_mem().await;
    let mut c = Client::ready(&h).await;
    let end = SIZE as u64;
    // read past the end / overflowing / too long
    assert_eq!(c.call(CMD_READ, 0, end - 10, 11, &[]).await, (EINVAL, vec![]));
    assert_eq!(c.call(CMD_READ, 0, u64::MAX - 1, 4, &[]).await.0, EINVAL);
    assert_eq!(c.call(CMD_READ, 0, 0, DEFAULT_MAX_BLOCK + 1, &[]).await.0, EINVAL);
    // write past the end: ENOSPC, its payload is consumed
    assert_eq!(c.call(CMD_WRITE, 0, end - 2, 4, b"wxyz").await.0, ENOSPC);
    assert_eq!(c.call(CMD_WRITE_ZEROES, 0, end, 1, &[]).await.0, ENOSPC);
    assert_eq!(c.call(CMD_TRIM, 0, end, 1, &[]).await.0, EINVAL);
    // bad flags (payload still consumed for a write), unknown commands
    assert_eq!(c.call(CMD_WRITE, CMD_FLAG_NO_HOLE, 0, 4, b"1234").await.0, EINVAL);
    assert_eq!(c.call(CMD_READ, CMD_FLAG_DF, 0, 4, &[]).await.0, EINVAL);
    assert_eq!(c.call(CMD_TRIM, CMD_FLAG_NO_HOLE, 0, 4, &[]).await.0, EINVAL);
    assert_eq!(c.call(CMD_BLOCK_STATUS, 0, 0, 4, &[]).await.0, EINVAL);
    assert_eq!(c.call(CMD_CACHE, CMD_FLAG_NO_HOLE, 0, 4, &[]).await.0, EINVAL);
    assert_eq!(c.call(0x4242, 0, 0, 4, &[]).await.0, EINVAL);
    // nothing was written, and the connection still works
    assert!(mem.contents().iter().all(|&b| b == 0));
    assert_eq!(c.call(CMD_WRITE, 0, 0, 4, b"good").await.0, 0);
    assert_eq!(c.call(CMD_READ, 0, 0, 4, &[]).await, (0, b"good".to_vec()));
    stop(h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_write_and_bad_magic_close_only_that_connection() {
    let (h, _mem) = start_mem().await;
    let mut good = Client::ready(&h).await;
    assert_eq!(good.call(CMD_WRITE, 0, 0, 2, b"ok").await.0, 0);

    // a WRITE over the maximum block size: error reply, then the server closes
    let mut big = Client::ready(&h).await;
    big.send(CMD_WRITE, 0, 5, 0, DEFAULT_MAX_BLOCK + 1, &[]).await;
    assert_eq!(big.reply().await, SimpleReply { errno: EINVAL, cookie: 5 });
    assert!(big.closed().await);

    // bad magic: closed without a reply
    let mut bad = Client::ready(&h).await;
    bad.s.write_all(&[0xde; 28]).await.unwrap();
    assert!(bad.closed().await);

    // extended-header magic is not spoken either
    let mut ext = Client::ready(&h).await;
    let mut m = encode_request_header(&RequestHeader { flags: 0, kind: CMD_READ, cookie: 1, offset: 0, length: 1 });
    m[0..4].copy_from_slice(&EXTENDED_REQUEST_MAGIC.to_be_bytes());
    ext.s.write_all(&m).await.unwrap();
    assert!(ext.closed().await);

    // the first connection never noticed
    assert_eq!(good.call(CMD_READ, 0, 0, 2, &[]).await, (0, b"ok".to_vec()));
    stop(h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_connections_see_each_other() {
    let (h, _mem) = start_mem().await;
    let mut a = Client::ready(&h).await;
    let mut b = Client::ready(&h).await;
    assert_eq!(a.call(CMD_WRITE, 0, 100, 5, b"hello").await.0, 0);
    assert_eq!(a.call(CMD_FLUSH, 0, 0, 0, &[]).await.0, 0);
    assert_eq!(b.call(CMD_READ, 0, 100, 5, &[]).await, (0, b"hello".to_vec()));
    assert_eq!(b.call(CMD_WRITE, CMD_FLAG_FUA, 100, 5, b"world").await.0, 0);
    assert_eq!(a.call(CMD_READ, 0, 100, 5, &[]).await, (0, b"world".to_vec()));
    // a connection stuck mid-request does not hold the other up
    a.send(CMD_WRITE, 0, 1, 0, 1000, b"partial").await;
    for i in 0..20u64 {
        assert_eq!(b.call(CMD_WRITE, 0, i * 10, 10, b"0123456789").await.0, 0);
    }
    let report = stop(h).await;
    assert_eq!(report.connections, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_all_answered() {
    let (h, mem) = start_mem().await;
    let c = Client::ready(&h).await;
    // 200 writes of 4 KiB sent without waiting, then 200 reads
    let mut batch = Vec::new();
    for i in 0..200u64 {
        let data = vec![(i % 251) as u8 + 1; 4096];
        batch.extend_from_slice(&encode_request_header(&RequestHeader {
            flags: if i % 10 == 0 { CMD_FLAG_FUA } else { 0 },
            kind: CMD_WRITE,
            cookie: 1000 + i,
            offset: i * 4096,
            length: 4096,
        }));
        batch.extend_from_slice(&data);
    }
    // write the batch while reading replies, or both sides could stall on full buffers
    let (mut rd, mut wr) = c.s.into_split();
    let writer = tokio::spawn(async move {
        wr.write_all(&batch).await.unwrap();
        wr
    });
    let mut seen = HashMap::new();
    for _ in 0..200 {
        let mut hdr = [0u8; 16];
        timeout(T, rd.read_exact(&mut hdr)).await.unwrap().unwrap();
        let r = parse_simple_reply(&hdr).unwrap();
        assert_eq!(r.errno, 0);
        assert!(seen.insert(r.cookie, ()).is_none(), "cookie {} answered twice", r.cookie);
    }
    assert_eq!(seen.len(), 200);
    assert!((1000..1200).all(|c| seen.contains_key(&c)));
    let mut wr = writer.await.unwrap();
    for i in 0..200u64 {
        let h = RequestHeader { flags: 0, kind: CMD_READ, cookie: i, offset: i * 4096, length: 4096 };
        wr.write_all(&encode_request_header(&h)).await.unwrap();
    }
    let mut got = HashMap::new();
    for _ in 0..200 {
        let mut hdr = [0u8; 16];
        timeout(T, rd.read_exact(&mut hdr)).await.unwrap().unwrap();
        let r = parse_simple_reply(&hdr).unwrap();
        assert_eq!(r.errno, 0);
        let mut data = vec![0u8; 4096];
        rd.read_exact(&mut data).await.unwrap();
        got.insert(r.cookie, data);
    }
    for i in 0..200u64 {
        assert_eq!(got[&i], vec![(i % 251) as u8 + 1; 4096], "block {i}");
    }
    assert_eq!(mem.fua_ops.load(Ordering::Relaxed), 20);
    stop(h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negotiation_options() {
    let mem = Arc::new(MemBackend::new(4096));
    let ro = Arc::new(MemBackend::new(8192).into_read_only());
    let exports = vec![Export::new("a", mem.clone()).with_description("first"), Export::new("ro", ro.clone())];
    let h = start(exports, ServerConfig::default()).await;

    let mut c = Client::connect(&h, FLAG_C_FIXED_NEWSTYLE).await;
    c.send_option(OPT_LIST, &[]).await;
    let list = c.option_replies().await;
    assert_eq!(list.len(), 3);
    assert_eq!(list[0], (OPT_LIST, REP_SERVER, b"\0\0\0\x01afirst".to_vec()));
    assert_eq!(list[1], (OPT_LIST, REP_SERVER, b"\0\0\0\x02ro".to_vec()));
    assert_eq!(list[2].1, REP_ACK);
    // with data it is invalid (and structured replies stay off: the simple replies below)
    c.send_option(OPT_STRUCTURED_REPLY, b"junk").await;
    assert_eq!(c.option_reply().await.1, REP_ERR_INVALID);
    c.send_option(OPT_STARTTLS, &[]).await;
    assert_eq!(c.option_reply().await.1, REP_ERR_UNSUP);
    c.send_option(OPT_GO, &info_data(b"missing", &[])).await;
    assert_eq!(c.option_reply().await.1, REP_ERR_UNKNOWN);
    c.send_option(OPT_INFO, &info_data(b"ro", &[INFO_NAME, INFO_DESCRIPTION])).await;
    let info = c.option_replies().await;
    assert_eq!(info.last().unwrap().1, REP_ACK);
    assert!(info.iter().any(|r| r.2 == b"\0\x01ro"));
    c.send_option(OPT_GO, &info_data(b"ro", &[])).await;
    let go = c.option_replies().await;
    let flags = u16::from_be_bytes(go[0].2[10..12].try_into().unwrap());
    assert_ne!(flags & FLAG_READ_ONLY, 0);
    // read-only export: writes, trims and zeroes are EPERM, reads work
    assert_eq!(c.call(CMD_WRITE, 0, 0, 2, b"no").await.0, EPERM);
    assert_eq!(c.call(CMD_TRIM, 0, 0, 2, &[]).await.0, EPERM);
    assert_eq!(c.call(CMD_WRITE_ZEROES, 0, 0, 2, &[]).await.0, EPERM);
    assert_eq!(c.call(CMD_READ, 0, 0, 2, &[]).await, (0, vec![0, 0]));

    // EXPORT_NAME without NO_ZEROES: size, flags, 124 zeroes
    let mut c = Client::connect(&h, FLAG_C_FIXED_NEWSTYLE).await;
    c.send_option(OPT_EXPORT_NAME, b"a").await;
    let mut r = [0xffu8; 10 + 124];
    c.s.read_exact(&mut r).await.unwrap();
    assert_eq!(&r[0..8], &4096u64.to_be_bytes());
    assert!(r[10..].iter().all(|&b| b == 0));
    assert_eq!(c.call(CMD_WRITE, 0, 0, 1, b"x").await.0, 0);

    // EXPORT_NAME with NO_ZEROES and the default (empty) name: exactly 10 bytes, then transmission
    let mut c = Client::connect(&h, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).await;
    c.send_option(OPT_EXPORT_NAME, b"").await;
    let mut r = [0u8; 10];
    c.s.read_exact(&mut r).await.unwrap();
    assert_eq!(&r[0..8], &4096u64.to_be_bytes());
    assert_eq!(c.call(CMD_READ, 0, 0, 1, &[]).await, (0, b"x".to_vec()));

    // EXPORT_NAME of an unknown export: hard disconnect
    let mut c = Client::connect(&h, FLAG_C_FIXED_NEWSTYLE).await;
    c.send_option(OPT_EXPORT_NAME, b"nope").await;
    assert!(c.closed().await);

    // ABORT: ACK, then closed
    let mut c = Client::connect(&h, FLAG_C_FIXED_NEWSTYLE).await;
    c.send_option(OPT_ABORT, &[]).await;
    assert_eq!(c.option_reply().await, (OPT_ABORT, REP_ACK, vec![]));
    assert!(c.closed().await);

    // unknown client flags, bad option magic, oversized option: closed
    let mut c = Client::connect(&h, 0x10).await;
    assert!(c.closed().await);
    let mut c = Client::connect(&h, FLAG_C_FIXED_NEWSTYLE).await;
    c.s.write_all(&[0u8; 16]).await.unwrap();
    assert!(c.closed().await);
    let mut c = Client::connect(&h, FLAG_C_FIXED_NEWSTYLE).await;
    let mut m = IHAVEOPT.to_be_bytes().to_vec();
    m.extend_from_slice(&OPT_GO.to_be_bytes());
    m.extend_from_slice(&u32::MAX.to_be_bytes());
    c.s.write_all(&m).await.unwrap();
    assert!(c.closed().await);

    let report = stop(h).await;
    assert_eq!(report.backends_shut_down, 2);
    assert_eq!(ro.shutdowns.load(Ordering::Relaxed), 1);
    assert_eq!(mem.shutdowns.load(Ordering::Relaxed), 1);
}

/// A MemBackend whose writes take a while, counting the calls that started,
/// to catch requests in flight.
struct Slow {
    inner: MemBackend,
    write_delay: Duration,
    reads: AtomicUsize,
    writes: AtomicUsize,
    /// Bytes that must hold 0x5a when `shutdown` is called.
    check_on_shutdown: usize,
}

impl Slow {
    fn new(size: usize, write_delay: Duration, check_on_shutdown: usize) -> Self {
        Slow {
            inner: MemBackend::new(size),
            write_delay,
            reads: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
            check_on_shutdown,
        }
    }
}

impl Backend for Slow {
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, data: &[u8], offset: u64, fua: bool) -> io::Result<()> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(self.write_delay);
        self.inner.write_at(data, offset, fua)
    }
    fn flush(&self) -> io::Result<()> {
        self.inner.flush()
    }
    fn trim(&self, offset: u64, len: u64, fua: bool) -> io::Result<()> {
        self.inner.trim(offset, len, fua)
    }
    fn write_zeroes(&self, offset: u64, len: u64, no_hole: bool, fua: bool) -> io::Result<()> {
        self.inner.write_zeroes(offset, len, no_hole, fua)
    }
    fn shutdown(&self) -> io::Result<()> {
        // every write that was in flight at the shutdown has landed by now
        let data = self.inner.contents();
        let n = self.check_on_shutdown;
        assert!(data[..n].iter().all(|&b| b == 0x5a), "shutdown before in-flight writes finished");
        self.inner.shutdown()
    }
}

/// Polls until `counter` reaches `n` (the server has picked up that many requests).
async fn until(counter: &AtomicUsize, n: usize) {
    timeout(T, async {
        while counter.load(Ordering::SeqCst) < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("requests reached the backend");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_in_flight_requests() {
    let slow = Arc::new(Slow::new(1 << 16, Duration::from_millis(300), 8 * 512));
    let h = start(vec![Export::new("disk", slow.clone())], ServerConfig::default()).await;
    let mut c = Client::ready(&h).await;
    // no CAN_MULTI_CONN for a backend that does not claim it
    let mut probe = Client::connect(&h, FLAG_C_FIXED_NEWSTYLE).await;
    assert_eq!(probe.go("disk").await.1 & FLAG_CAN_MULTI_CONN, 0);
    for i in 0..8u64 {
        c.send(CMD_WRITE, 0, i, i * 512, 512, &[0x5a; 512]).await;
    }
    // stop the server while all eight writes sleep in the backend
    until(&slow.writes, 8).await;
    let addr = h.local_addr();
    let stopping = tokio::spawn(h.shutdown());
    let mut cookies = Vec::new();
    for _ in 0..8 {
        let r = c.reply().await;
        assert_eq!(r.errno, 0);
        cookies.push(r.cookie);
    }
    cookies.sort();
    assert_eq!(cookies, (0..8).collect::<Vec<_>>());
    assert!(c.closed().await);
    let report = timeout(T, stopping).await.unwrap().unwrap().unwrap();
    assert_eq!(report.aborted, 0);
    assert_eq!(slow.inner.shutdowns.load(Ordering::Relaxed), 1);
    // no longer accepting
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_aborts_a_client_that_never_reads() {
    let slow = Arc::new(Slow::new(64 << 20, Duration::ZERO, 0));
    let config = ServerConfig { drain_timeout: Duration::from_millis(500), ..ServerConfig::default() };
    let h = start(vec![Export::new("disk", slow.clone())], config).await;
    let mut c = Client::ready(&h).await;
    // 32 MiB of read replies, far more than the socket buffers hold, never read
    for i in 0..32u64 {
        c.send(CMD_READ, 0, i, i * (1 << 20), 1 << 20, &[]).await;
    }
    until(&slow.reads, 32).await;
    let report = stop(h).await;
    assert_eq!(report.aborted, 1);
    assert_eq!(slow.inner.shutdowns.load(Ordering::Relaxed), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_backend_through_the_server() {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    tmp.as_file().set_len(1 << 20).unwrap();
    let file = Arc::new(ssdcache_block::FileBackend::open(tmp.path(), false).unwrap());
    let h = start(vec![Export::new("f", file)], ServerConfig::default()).await;
    let mut c = Client::ready_on(&h, "f").await;
    assert_eq!(c.call(CMD_WRITE, CMD_FLAG_FUA, 512, 8, b"abcdefgh").await.0, 0);
    assert_eq!(c.call(CMD_WRITE, 0, 8192, 8192, &[7u8; 8192]).await.0, 0);
    assert_eq!(c.call(CMD_FLUSH, 0, 0, 0, &[]).await.0, 0);
    assert_eq!(c.call(CMD_WRITE_ZEROES, 0, 8192, 4096, &[]).await.0, 0);
    assert_eq!(c.call(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE | CMD_FLAG_FUA, 12288, 100, &[]).await.0, 0);
    assert_eq!(c.call(CMD_TRIM, 0, 65536, 65536, &[]).await.0, 0);
    let (e, d) = c.call(CMD_READ, 0, 8192, 8192, &[]).await;
    assert_eq!(e, 0);
    assert!(d[..4196].iter().all(|&b| b == 0));
    assert!(d[4196..].iter().all(|&b| b == 7));
    assert_eq!(c.call(CMD_WRITE, 0, (1 << 20) - 4, 8, b"past-end").await.0, ENOSPC);
    c.send(CMD_DISC, 0, 1, 0, 0, &[]).await;
    assert!(c.closed().await);
    stop(h).await;
    let on_disk = std::fs::read(tmp.path()).unwrap();
    assert_eq!(&on_disk[512..520], b"abcdefgh");
    assert!(on_disk[8192..12388].iter().all(|&b| b == 0));
    assert!(on_disk[12388..16384].iter().all(|&b| b == 7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_timeout_and_connection_limit() {
    let mem = Arc::new(MemBackend::new(4096));
    let config =
        ServerConfig { handshake_timeout: Duration::from_secs(1), max_connections: 1, ..ServerConfig::default() };
    let h = start(vec![Export::new("", mem)], config).await;
    // a lone connection that never negotiates is dropped after the handshake timeout
    let mut idle = Client::connect(&h, FLAG_C_FIXED_NEWSTYLE).await;
    assert!(idle.closed().await);
    tokio::time::sleep(Duration::from_millis(50)).await;
    // while one still negotiates in the only slot, a new connection takes its place
    let mut first = Client::connect(&h, FLAG_C_FIXED_NEWSTYLE).await;
    let mut c = Client::connect(&h, FLAG_C_FIXED_NEWSTYLE).await;
    assert!(first.closed().await);
    c.go("").await;
    assert_eq!(c.call(CMD_READ, 0, 0, 8, &[]).await, (0, vec![0; 8]));
    // a negotiated connection idle for less than the idle timeout keeps its slot: a new one is closed at once
    let mut refused = TcpStream::connect(h.local_addr()).await.unwrap();
    let mut b = [0u8; 18];
    assert!(matches!(timeout(T, refused.read(&mut b)).await, Ok(Ok(0)) | Ok(Err(_))));
    assert_eq!(c.call(CMD_READ, 0, 0, 8, &[]).await, (0, vec![0; 8]));
    stop(h).await;
}

#[test]
fn config_is_checked() {
    let mem: Arc<dyn Backend> = Arc::new(MemBackend::new(1));
    assert!(Server::new(vec![], ServerConfig::default()).is_err());
    let dup = vec![Export::new("x", mem.clone()), Export::new("x", mem.clone())];
    assert!(Server::new(dup, ServerConfig::default()).is_err());
    let long = vec![Export::new("n".repeat(4097), mem.clone())];
    assert!(Server::new(long, ServerConfig::default()).is_err());
    let small = ServerConfig { max_inflight_bytes: 1024, ..ServerConfig::default() };
    assert!(Server::new(vec![Export::new("x", mem.clone())], small).is_err());
    // the server-wide budget must hold one request of the maximum block size
    let small = ServerConfig { buffer_memory: DEFAULT_MAX_BLOCK as usize - 1, ..ServerConfig::default() };
    assert!(Server::new(vec![Export::new("x", mem.clone())], small).is_err());
    let fits = ServerConfig { buffer_memory: DEFAULT_MAX_BLOCK as usize, ..ServerConfig::default() };
    assert!(Server::new(vec![Export::new("x", mem.clone())], fits).is_ok());
    let none = ServerConfig { max_threads: 0, ..ServerConfig::default() };
    assert!(Server::new(vec![Export::new("x", mem.clone())], none).is_err());
    assert!(Server::new(vec![Export::new("x", mem)], ServerConfig::default()).is_ok());
}
