//! The server under hostile load: server-wide memory and thread limits
//! (floods of large unread READs, many connections with requests stuck in
//! the backend, a client that stops reading its replies) and admission when
//! the server is full (connections that never negotiate, idle negotiated
//! connections).
//!
//! The tests measure this process's resident memory and thread count, so
//! they run one at a time (`SERIAL`).

use ssdcache_block::Backend;
use ssdcache_nbd::consts::*;
use ssdcache_nbd::request::{encode_request_header, parse_simple_reply, RequestHeader, SimpleReply};
use ssdcache_server::{Export, Server, ServerConfig, ServerHandle};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

const MIB: usize = 1 << 20;
const T: Duration = Duration::from_secs(10);

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.lock().await
}

/// A field of /proc/self/status (`VmRSS` in bytes, `Threads` as is).
fn proc_status(key: &str) -> usize {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with(&format!("{key}:"))).unwrap();
    let n: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    if line.ends_with("kB") {
        n << 10
    } else {
        n
    }
}

fn rss() -> usize {
    proc_status("VmRSS")
}

/// A backend of any size holding nothing: a read fills the buffer with a
/// byte derived from its offset. Reads can be held at a gate; it counts the
/// reads started, running, and most running at once.
struct Pattern {
    size: u64,
    reads: AtomicUsize,
    active: AtomicUsize,
    most: AtomicUsize,
    open: Mutex<bool>,
    cv: Condvar,
}

impl Pattern {
    fn new(size: u64, open: bool) -> Self {
        Pattern {
            size,
            reads: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            open: Mutex::new(open),
            cv: Condvar::new(),
        }
    }

    fn open_gate(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

fn byte_at(offset: u64) -> u8 {
    (offset >> 20) as u8 ^ 0x5a
}

impl Backend for Pattern {
    fn size(&self) -> u64 {
        self.size
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
        drop(open);
        buf.fill(byte_at(offset));
        self.active.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
    fn write_at(&self, _data: &[u8], _offset: u64, _fua: bool) -> io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> io::Result<()> {
        Ok(())
    }
    fn trim(&self, _offset: u64, _len: u64, _fua: bool) -> io::Result<()> {
        Ok(())
    }
    fn write_zeroes(&self, _offset: u64, _len: u64, _no_hole: bool, _fua: bool) -> io::Result<()> {
        Ok(())
    }
}

async fn start(backend: Arc<dyn Backend>, config: ServerConfig) -> ServerHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Server::new(vec![Export::new("", backend)], config).unwrap().start(listener).unwrap()
}

/// Connects and negotiates (NBD_OPT_GO on the default export).
async fn ready(addr: SocketAddr) -> io::Result<TcpStream> {
    let mut s = TcpStream::connect(addr).await?;
    let mut g = [0u8; 18];
    s.read_exact(&mut g).await?;
    assert_eq!(&g[0..16], b"NBDMAGICIHAVEOPT");
    let mut m = (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes().to_vec();
    m.extend_from_slice(&IHAVEOPT.to_be_bytes());
    m.extend_from_slice(&OPT_GO.to_be_bytes());
    m.extend_from_slice(&6u32.to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // empty name, no info requests
    s.write_all(&m).await?;
    loop {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).await?;
        let reply = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let len = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
        let mut data = vec![0u8; len];
        s.read_exact(&mut data).await?;
        if reply == REP_ACK {
            return Ok(s);
        }
        if reply & REP_FLAG_ERROR != 0 {
            return Err(io::Error::other(format!("option error {reply:#x}")));
        }
    }
}

/// A new client negotiated, trying every 100 ms while the server turns it
/// away; panics if none is served within `limit`.
async fn served_within(addr: SocketAddr, limit: Duration) -> TcpStream {
    let served = async {
        loop {
            if let Ok(c) = ready(addr).await {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    timeout(limit, served).await.unwrap_or_else(|_| panic!("no new client served within {limit:?}"))
}

async fn send(s: &mut TcpStream, kind: u16, cookie: u64, offset: u64, length: u32, payload: &[u8]) {
    let mut m =
        encode_request_header(&RequestHeader { flags: 0, kind, cookie, offset, length: length as u64 }).to_vec();
    m.extend_from_slice(payload);
    s.write_all(&m).await.unwrap();
}

async fn reply(s: &mut TcpStream) -> io::Result<SimpleReply> {
    let mut h = [0u8; 16];
    s.read_exact(&mut h).await?;
    Ok(parse_simple_reply(&h).expect("simple reply magic"))
}

/// One READ, answered.
async fn read_once(s: &mut TcpStream, len: u32) -> io::Result<Vec<u8>> {
    send(s, CMD_READ, 77, 0, len, &[]).await;
    let r = reply(s).await?;
    assert_eq!(r, SimpleReply { errno: 0, cookie: 77 });
    let mut d = vec![0u8; len as usize];
    s.read_exact(&mut d).await?;
    Ok(d)
}

/// Reads `n` READ replies of `len` bytes from `s`, checking each one's data
/// against the offset its cookie stands for (`cookie * len`).
async fn read_replies(mut s: TcpStream, n: usize, len: u32) -> Vec<u64> {
    let mut data = vec![0u8; len as usize];
    let mut cookies = Vec::new();
    for _ in 0..n {
        let r = reply(&mut s).await.unwrap();
        assert_eq!(r.errno, 0);
        s.read_exact(&mut data).await.unwrap();
        let want = byte_at(r.cookie * len as u64);
        assert!(data.iter().all(|&b| b == want), "wrong data for cookie {}", r.cookie);
        cookies.push(r.cookie);
    }
    cookies
}

/// `conns` negotiated connections, each sending `per` READs of `len` bytes
/// without reading the replies; cookies 0, 1, ... in order, each READ at
/// `cookie * len`.
async fn flood(addr: SocketAddr, conns: usize, per: usize, len: u32) -> Vec<TcpStream> {
    let mut socks = Vec::new();
    for i in 0..conns {
        let mut s = ready(addr).await.unwrap();
        for j in 0..per {
            let cookie = (i * per + j) as u64;
            send(&mut s, CMD_READ, cookie, cookie * len as u64, len, &[]).await;
        }
        socks.push(s);
    }
    socks
}

/// Reads the replies to a [`flood`] on every connection at once (one
/// connection's replies may wait for budget that another's unread replies
/// hold), each within `within`: the cookies answered, sorted.
async fn read_all(socks: Vec<TcpStream>, per: usize, len: u32, within: Duration) -> Vec<u64> {
    let readers: Vec<_> = socks.into_iter().map(|s| tokio::spawn(read_replies(s, per, len))).collect();
    let mut all = Vec::new();
    for r in readers {
        all.extend(timeout(within, r).await.unwrap_or_else(|_| panic!("every reply within {within:?}")).unwrap());
    }
    all.sort();
    all
}

/// Waits until `counter` has not changed for `quiet`, sampling the RSS;
/// returns the highest RSS seen.
async fn settle(counter: &AtomicUsize, quiet: Duration) -> usize {
    let t = Instant::now();
    let mut last = (counter.load(Ordering::SeqCst), Instant::now());
    let mut peak = rss();
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        peak = peak.max(rss());
        let now = counter.load(Ordering::SeqCst);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() >= quiet {
            return peak;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "the server never settled");
    }
}

/// Audit item 1: 16 connections × 4 unread 32 MiB READs took 1 GiB
/// (64 MiB per connection); with the server-wide budget (256 MiB by
/// default) they take that much, and every request is answered once the
/// clients read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_large_reads_stay_within_the_server_wide_budget() {
    let _serial = serial().await;
    const CONNS: usize = 16;
    const PER: usize = 4;
    const LEN: u32 = 32 << 20;
    let config = ServerConfig::default();
    let budget = config.buffer_memory;
    assert_eq!(budget, 256 * MIB);
    let backend = Arc::new(Pattern::new((CONNS * PER) as u64 * LEN as u64, true));
    let h = start(backend.clone(), config).await;
    let base = rss();
    let socks = flood(h.local_addr(), CONNS, PER, LEN).await;
    let peak = settle(&backend.reads, Duration::from_secs(1)).await;
    let grown = peak.saturating_sub(base);
    let stats = h.stats();
    eprintln!(
        "flood: {} of {} READs read by the server, RSS grew by {} MiB (budget {} MiB; peak taken {} MiB), {} threads",
        backend.reads.load(Ordering::SeqCst),
        CONNS * PER,
        grown / MIB,
        budget / MIB,
        stats.buffered_peak / MIB,
        stats.threads_peak
    );
    assert!(stats.buffered_peak <= budget, "{stats:?}");
    assert!(grown <= budget + 64 * MIB, "RSS grew by {} MiB, over the {} MiB budget", grown / MIB, budget / MIB);
    // the clients read (concurrently: replies of one connection may wait for
    // budget held by another's unread replies): everything is answered
    let all = read_all(socks, PER, LEN, Duration::from_secs(120)).await;
    assert_eq!(all, (0..(CONNS * PER) as u64).collect::<Vec<_>>());
    assert_eq!(h.stats().buffered, 0);
    timeout(T, h.shutdown()).await.unwrap().unwrap();
}

/// Audit item 1: 64 connections × 4 READs stuck in the backend took 256
/// worker threads (one per request in flight); the server-wide cap (128 by
/// default) holds, the rest wait, and all are answered once the backend
/// moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_threads_are_capped_server_wide() {
    let _serial = serial().await;
    const CONNS: usize = 64;
    const PER: usize = 4;
    const LEN: u32 = 4096;
    let config = ServerConfig::default();
    let cap = config.max_threads;
    assert_eq!(cap, 128);
    let backend = Arc::new(Pattern::new(1 << 30, false));
    let h = start(backend.clone(), config).await;
    let base = proc_status("Threads");
    let socks = flood(h.local_addr(), CONNS, PER, LEN).await;
    settle(&backend.reads, Duration::from_secs(1)).await;
    let grown = proc_status("Threads").saturating_sub(base);
    let most = backend.most.load(Ordering::SeqCst);
    eprintln!("{} requests stuck in the backend at once, {grown} threads more", most);
    assert!(most <= cap, "{most} backend calls at once");
    assert!(grown <= cap + 4, "{grown} threads more");
    assert!(h.stats().threads_peak <= cap);
    backend.open_gate();
    let all = read_all(socks, PER, LEN, Duration::from_secs(60)).await;
    assert_eq!(all, (0..(CONNS * PER) as u64).collect::<Vec<_>>());
    timeout(T, h.shutdown()).await.unwrap().unwrap();
}

/// A budget of exactly one maximum-size request: requests of that size on
/// several connections (and writes beside them) all get through, one at a
/// time; one worker thread is enough too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_block_requests_progress_with_the_smallest_budget_and_one_thread() {
    let _serial = serial().await;
    const LEN: u32 = DEFAULT_MAX_BLOCK;
    let config = ServerConfig { buffer_memory: LEN as usize, max_threads: 1, ..ServerConfig::default() };
    let backend = Arc::new(Pattern::new(16 * LEN as u64, true));
    let h = start(backend.clone(), config).await;
    let mut tasks = Vec::new();
    for i in 0..4u64 {
        let addr = h.local_addr();
        tasks.push(tokio::spawn(async move {
            let s = ready(addr).await.unwrap();
            let (mut rd, mut wr) = s.into_split();
            let writer = tokio::spawn(async move {
                let payload = vec![1u8; MIB];
                for j in 0..3u64 {
                    let cookie = i * 4 + j;
                    let h = RequestHeader {
                        flags: 0,
                        kind: CMD_READ,
                        cookie,
                        offset: cookie * LEN as u64,
                        length: LEN as u64,
                    };
                    wr.write_all(&encode_request_header(&h)).await.unwrap();
                }
                let h = RequestHeader { flags: 0, kind: CMD_WRITE, cookie: 1000 + i, offset: 0, length: MIB as u64 };
                wr.write_all(&encode_request_header(&h)).await.unwrap();
                wr.write_all(&payload).await.unwrap();
                wr
            });
            let mut data = vec![0u8; LEN as usize];
            let mut seen = Vec::new();
            for _ in 0..4 {
                let mut hdr = [0u8; 16];
                rd.read_exact(&mut hdr).await.unwrap();
                let r = parse_simple_reply(&hdr).unwrap();
                assert_eq!(r.errno, 0);
                if r.cookie < 1000 {
                    rd.read_exact(&mut data).await.unwrap();
                    assert!(data.iter().all(|&b| b == byte_at(r.cookie * LEN as u64)));
                }
                seen.push(r.cookie);
            }
            writer.await.unwrap();
            seen.len()
        }));
    }
    for t in tasks {
        assert_eq!(timeout(Duration::from_secs(60), t).await.expect("all answered within 60 s").unwrap(), 4);
    }
    let stats = h.stats();
    assert!(stats.buffered_peak <= LEN as usize, "{stats:?}");
    assert_eq!(stats.threads_peak, 1);
    timeout(T, h.shutdown()).await.unwrap().unwrap();
}

/// Reads whatever `s` still delivers; true once the server has closed it.
async fn drained_and_closed(s: &mut TcpStream, within: Duration) -> bool {
    let mut buf = vec![0u8; MIB];
    let end = Instant::now() + within;
    loop {
        match timeout(end.saturating_duration_since(Instant::now()), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
            Err(_) => return false,
        }
    }
}

/// A client that stops reading its replies holds budget only until someone
/// else needs it: after the stall timeout, while another connection waits,
/// it is closed and the other is served. Alone, it is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_cannot_starve_the_others() {
    let _serial = serial().await;
    const LEN: u32 = DEFAULT_MAX_BLOCK;
    let config = ServerConfig {
        buffer_memory: 2 * LEN as usize,
        stall_timeout: Duration::from_secs(1),
        ..ServerConfig::default()
    };
    let backend = Arc::new(Pattern::new(64 * LEN as u64, true));
    let h = start(backend.clone(), config).await;

    // alone: not reading for three stall timeouts is fine
    let mut patient = ready(h.local_addr()).await.unwrap();
    for c in 0..2u64 {
        send(&mut patient, CMD_READ, c, c * LEN as u64, LEN, &[]).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(h.stats().buffered, 2 * LEN as usize);
    let mut got = timeout(T, read_replies(patient, 2, LEN)).await.expect("replies after a pause");
    got.sort();
    assert_eq!(got, vec![0, 1]);

    // with a connection waiting for the budget it holds: closed after the stall timeout
    let mut hog = ready(h.local_addr()).await.unwrap();
    for c in 2..4u64 {
        send(&mut hog, CMD_READ, c, c * LEN as u64, LEN, &[]).await;
    }
    let t = Instant::now();
    while h.stats().buffered < 2 * LEN as usize {
        assert!(t.elapsed() < T);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let t = Instant::now();
    let mut other = ready(h.local_addr()).await.unwrap();
    let d = timeout(T, read_once(&mut other, 4096)).await.expect("served within 10 s").unwrap();
    assert!(d.iter().all(|&b| b == byte_at(0)));
    let waited = t.elapsed();
    eprintln!("served after {waited:?} behind a client that does not read");
    assert!(waited >= Duration::from_millis(900), "served after {waited:?}: the hog was not holding the budget?");
    assert!(drained_and_closed(&mut hog, T).await, "the hog is still connected");
    assert_eq!(read_once(&mut other, 8).await.unwrap(), vec![byte_at(0); 8]);
    timeout(T, h.shutdown()).await.unwrap().unwrap();
}

/// A client that sends a large write's payload a trickle at a time (too
/// slow to count as progress) while another waits for the memory it holds
/// is closed after the stall timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_trickles_a_payload_cannot_hold_memory() {
    let _serial = serial().await;
    const LEN: u32 = DEFAULT_MAX_BLOCK;
    let config =
        ServerConfig { buffer_memory: LEN as usize, stall_timeout: Duration::from_secs(1), ..ServerConfig::default() };
    let h = start(Arc::new(Pattern::new(4 * LEN as u64, true)), config).await;
    let trickler = ready(h.local_addr()).await.unwrap();
    let (mut trd, mut twr) = trickler.into_split();
    let hdr = RequestHeader { flags: 0, kind: CMD_WRITE, cookie: 1, offset: 0, length: LEN as u64 };
    twr.write_all(&encode_request_header(&hdr)).await.unwrap();
    // 1 KiB every 50 ms: 20 KiB/s, far below the 256 KiB/s a transfer must keep up
    let trickle = tokio::spawn(async move {
        for _ in 0..400 {
            if twr.write_all(&[7u8; 1024]).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    });
    let t = Instant::now();
    while h.stats().buffered < LEN as usize {
        assert!(t.elapsed() < T);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let t = Instant::now();
    let mut other = ready(h.local_addr()).await.unwrap();
    timeout(T, read_once(&mut other, 4096)).await.expect("served within 10 s").unwrap();
    eprintln!("served after {:?} behind a client trickling its payload", t.elapsed());
    let mut b = [0u8; 16];
    assert!(matches!(timeout(T, trd.read(&mut b)).await, Ok(Ok(0)) | Ok(Err(_))), "the trickler got an answer?");
    assert!(timeout(T, trickle).await.unwrap().unwrap(), "the trickler was not cut off");
    timeout(T, h.shutdown()).await.unwrap().unwrap();
}

/// Audit item 2: connections that never negotiate filled the server
/// (max_connections) until the handshake timeout (30 s). A new client now
/// takes the place of the one negotiating longest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_negotiate_cannot_lock_new_clients_out() {
    let _serial = serial().await;
    let config = ServerConfig { max_connections: 8, ..ServerConfig::default() };
    assert_eq!(config.handshake_timeout, Duration::from_secs(30));
    let h = start(Arc::new(Pattern::new(MIB as u64, true)), config).await;
    let mut squatters = Vec::new();
    for _ in 0..8 {
        let mut s = TcpStream::connect(h.local_addr()).await.unwrap();
        let mut g = [0u8; 18];
        s.read_exact(&mut g).await.unwrap(); // greeted, then silent
        squatters.push(s);
    }
    let t = Instant::now();
    let mut c = served_within(h.local_addr(), Duration::from_secs(5)).await;
    assert_eq!(read_once(&mut c, 8).await.unwrap(), vec![byte_at(0); 8]);
    eprintln!("served after {:?} with 8 connections that never negotiate", t.elapsed());
    // the oldest squatter made room
    assert!(drained_and_closed(&mut squatters[0], T).await);
    timeout(T, h.shutdown()).await.unwrap().unwrap();
}

/// Audit item 2: negotiated idle connections filled the server for ever.
/// Full of them, the server closes the one idle longest once it has been
/// idle for the idle timeout; not while there is room, and not a connection
/// that is busy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_server_closes_the_connection_idle_longest() {
    let _serial = serial().await;
    const MAX: usize = 256;
    let config = ServerConfig { idle_timeout: Duration::from_secs(3), ..ServerConfig::default() };
    assert_eq!(config.max_connections, MAX);
    let h = start(Arc::new(Pattern::new(MIB as u64, true)), config).await;
    let mut idle = Vec::new();
    for _ in 0..MAX {
        let mut c = ready(h.local_addr()).await.unwrap();
        read_once(&mut c, 8).await.unwrap();
        idle.push(c);
    }
    assert_eq!(h.stats().connections, MAX);
    // full, but nobody idle for 3 s yet: a new client is refused
    let mut refused = TcpStream::connect(h.local_addr()).await.unwrap();
    let mut b = [0u8; 18];
    assert!(matches!(timeout(T, refused.read(&mut b)).await, Ok(Ok(0)) | Ok(Err(_))));
    tokio::time::sleep(Duration::from_millis(3500)).await;
    // the first one was busy just now: not closed
    read_once(&mut idle[0], 8).await.unwrap();
    assert!(h.stats().threads <= ServerConfig::default().max_threads);
    let t = Instant::now();
    let mut c = served_within(h.local_addr(), Duration::from_secs(5)).await;
    assert_eq!(read_once(&mut c, 8).await.unwrap(), vec![byte_at(0); 8]);
    eprintln!("served after {:?} on a server full of idle connections", t.elapsed());
    read_once(&mut idle[0], 8).await.unwrap();
    // exactly one of the idle ones was closed
    let mut closed = 0;
    for c in idle.iter_mut().skip(1) {
        let mut b = [0u8; 1];
        if let Ok(Ok(0) | Err(_)) = timeout(Duration::from_millis(5), c.read(&mut b)).await {
            closed += 1;
        }
    }
    assert_eq!(closed, 1);
    assert_eq!(h.stats().connections, MAX);
    timeout(T, h.shutdown()).await.unwrap().unwrap();
}
