//! The transmission phase of one connection: a pool of blocking worker
//! threads over the connection's socket (the model of nbdkit's threads).
//!
//! Each worker loops: take the reader lock → read one request (header, and
//! the payload of a write) from a buffered reader → unlock → run the backend
//! call on its own thread → take the writer lock → write the whole reply in
//! one `send` → unlock. So a request costs no thread hop and no task spawn,
//! and a slow backend call blocks only its worker, never the async runtime.
//!
//! Workers start lazily: the connection starts with one; a worker that has
//! just taken a request spawns another when no worker is left to read, up to
//! [`ServerConfig::max_inflight_requests`](super::ServerConfig). Busy workers
//! are the requests in flight, so when all are busy nobody reads and TCP
//! pushes back on the client. The bytes in flight (write payloads and read
//! buffers) are bounded by a budget taken, under the reader lock, after a
//! header is parsed and before its payload is read or its buffer allocated:
//! a reader waiting for it stops the whole connection's reading.
//!
//! Reading ends on EOF, a read error, `NBD_CMD_DISC`, a protocol error, or
//! the server's shutdown ([`Conn::stop_reading`]: a flag checked before every
//! read plus `shutdown(SHUT_RD)`, which wakes a reader blocked in `recv`).
//! Workers that hold a request finish it and send its reply; the last worker
//! to exit shuts the socket down, logs the connection's stats line and tells
//! the async side. An abort (drain timeout) shuts the socket down both ways,
//! so workers blocked on a client that does not read fail their `send` and
//! exit; each worker holds a [`TaskTrackerToken`] until its thread ends, so
//! the server still waits for every backend call before `Backend::shutdown`.

use super::stopped;
use crate::backend::Backend;
use crate::nbd::consts::*;
use crate::nbd::request::{self, Command, Decision, ExportParams};
use std::io::{self, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use tokio::sync::{oneshot, watch};
use tokio_util::task::task_tracker::TaskTrackerToken;
use tokio_util::task::TaskTracker;

/// Size of the per-connection read buffer: at high queue depths one `recv`
/// picks up several request headers (and small write payloads) at once.
const READ_BUFFER: usize = 64 << 10;
/// Largest buffer a worker keeps between requests (larger ones are freed).
const KEEP_BUFFER: usize = SIMPLE_REPLY_LEN + (128 << 10);

/// What one connection was asked to do, logged when it closes (the NBD
/// client tests read these lines to check which commands and flags reached
/// the server).
#[derive(Debug, Default)]
struct ConnStats {
    requests: u64,
    read: u64,
    write: u64,
    fua: u64,
    flush: u64,
    trim: u64,
    zeroes: u64,
    no_hole: u64,
    errors: u64,
}

impl ConnStats {
    fn count(&mut self, cmd: &Command) {
        self.requests += 1;
        match *cmd {
            Command::Read { .. } => self.read += 1,
            Command::Write { fua, .. } => {
                self.write += 1;
                self.fua += fua as u64;
            }
            Command::Flush => self.flush += 1,
            Command::Trim { fua, .. } => {
                self.trim += 1;
                self.fua += fua as u64;
            }
            Command::WriteZeroes { no_hole, fua, .. } => {
                self.zeroes += 1;
                self.no_hole += no_hole as u64;
                self.fua += fua as u64;
            }
        }
    }
}

impl std::fmt::Display for ConnStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self;
        write!(
            f,
            "requests={} read={} write={} fua={} flush={} trim={} zeroes={} no_hole={} errors={}",
            s.requests, s.read, s.write, s.fua, s.flush, s.trim, s.zeroes, s.no_hole, s.errors
        )
    }
}

/// A counting budget of bytes that blocking threads wait on. Only the reader
/// lock's holder takes from it, so at most one thread ever waits.
struct ByteBudget {
    avail: AtomicUsize,
    waiting: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

impl ByteBudget {
    fn new(n: usize) -> Self {
        ByteBudget {
            avail: AtomicUsize::new(n),
            waiting: AtomicUsize::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    fn try_take(&self, n: usize) -> bool {
        self.avail.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |a| a.checked_sub(n)).is_ok()
    }

    /// Takes `n` bytes (at most the budget's total), waiting until they are given back.
    fn take(&self, n: usize) {
        if n == 0 || self.try_take(n) {
            return;
        }
        let mut g = lock(&self.lock);
        // Announce the wait before re-checking: a `give` after the check sees
        // `waiting` and notifies under the lock, which we hold until we wait.
        self.waiting.fetch_add(1, Ordering::SeqCst);
        while !self.try_take(n) {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }

    fn give(&self, n: usize) {
        if n == 0 {
            return;
        }
        self.avail.fetch_add(n, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            let _g = lock(&self.lock);
            self.cv.notify_all();
        }
    }
}

/// Locks, ignoring poisoning (every lock here guards plain data or nothing).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Reader {
    rd: BufReader<TcpStream>,
    stats: ConnStats,
}

/// One connection in transmission, shared by its workers.
pub(super) struct Conn {
    /// The socket: replies are written here, shutdowns done here.
    sock: TcpStream,
    peer: SocketAddr,
    backend: Arc<dyn Backend>,
    params: ExportParams,
    max_workers: usize,
    /// Reading side (a buffered clone of the socket) and the stats, which are
    /// counted as requests are read.
    reader: Mutex<Reader>,
    /// Held while a reply is written, so replies go out whole.
    writer: Mutex<()>,
    bytes: ByteBudget,
    /// The server is stopping (or aborting) this connection: read no more.
    stopping: AtomicBool,
    /// Reading has ended for good; workers without a request exit.
    reading_done: AtomicBool,
    /// Worker threads alive.
    workers: AtomicUsize,
    /// Workers alive and not holding a request (reading or waiting to).
    idle: AtomicUsize,
    /// Fired by the last worker to exit.
    done: Mutex<Option<oneshot::Sender<()>>>,
    tracker: TaskTracker,
}

/// What a worker got from the reading side.
enum Job {
    /// Run a command; a write's payload is in the worker's buffer. `bytes`
    /// were taken from the budget.
    Run { cmd: Command, cookie: u64, bytes: usize },
    /// Send an error reply and read on.
    Reply { cookie: u64, errno: u32 },
    /// Send this error reply; reading has ended.
    Last { cookie: u64, errno: u32 },
}

impl Conn {
    /// Reads the next request under the reader lock; `None` when reading has
    /// ended (then `reading_done` is set).
    fn next_job(&self, buf: &mut Vec<u8>) -> Option<Job> {
        let mut guard = lock(&self.reader);
        let r = &mut *guard;
        if self.reading_done.load(Ordering::Acquire) || self.stopping.load(Ordering::Acquire) {
            return self.end_reading();
        }
        let mut h = [0u8; REQUEST_HEADER_LEN];
        if let Err(e) = r.rd.read_exact(&mut h) {
            self.read_failed(&e);
            return self.end_reading();
        }
        let hdr = match request::parse_request_header(&h) {
            Ok(hdr) => hdr,
            Err(e) => {
                log::info!("{}: closing: {e}", self.peer);
                return self.end_reading();
            }
        };
        match request::decide(&hdr, &self.params) {
            Decision::Execute(cmd) => {
                r.stats.count(&cmd);
                // The budget first, then the buffer and the payload: a
                // connection at its limit stops reading until replies go out.
                let bytes = cmd.buffer_len() as usize;
                self.bytes.take(bytes);
                if let Command::Write { len, .. } = cmd {
                    let len = len as usize; // <= max_block, checked by decide
                    if buf.len() < len {
                        *buf = vec![0u8; len];
                    }
                    if let Err(e) = r.rd.read_exact(&mut buf[..len]) {
                        self.bytes.give(bytes);
                        self.read_failed(&e);
                        return self.end_reading();
                    }
                }
                Some(Job::Run { cmd, cookie: hdr.cookie, bytes })
            }
            Decision::Reject { errno, discard } => {
                r.stats.requests += 1;
                r.stats.errors += 1;
                match io::copy(&mut (&mut r.rd).take(discard as u64), &mut io::sink()) {
                    Ok(n) if n == discard as u64 => Some(Job::Reply { cookie: hdr.cookie, errno }),
                    Ok(_) => {
                        self.read_failed(&io::ErrorKind::UnexpectedEof.into());
                        self.end_reading()
                    }
                    Err(e) => {
                        self.read_failed(&e);
                        self.end_reading()
                    }
                }
            }
            Decision::Disconnect => self.end_reading(),
            Decision::Fatal { errno } => {
                log::info!("{}: closing: request of {} bytes over the maximum block size", self.peer, hdr.length);
                r.stats.requests += 1;
                r.stats.errors += 1;
                self.reading_done.store(true, Ordering::Release);
                Some(Job::Last { cookie: hdr.cookie, errno })
            }
        }
    }

    fn end_reading(&self) -> Option<Job> {
        self.reading_done.store(true, Ordering::Release);
        None
    }

    fn read_failed(&self, e: &io::Error) {
        if self.stopping.load(Ordering::Acquire) {
            log::debug!("{}: stopped reading ({e})", self.peer);
        } else if e.kind() == io::ErrorKind::UnexpectedEof {
            log::debug!("{}: client closed the connection", self.peer);
        } else {
            log::info!("{}: read failed: {e}", self.peer);
        }
    }

    /// Runs a command and sends its reply.
    fn run(&self, cmd: Command, cookie: u64, buf: &mut Vec<u8>) {
        let b = &*self.backend;
        if let Command::Read { offset, len } = cmd {
            let n = SIMPLE_REPLY_LEN + len as usize;
            if buf.len() < n {
                *buf = vec![0u8; n];
            }
            match self.call(&cmd, || b.read_at(&mut buf[SIMPLE_REPLY_LEN..n], offset)) {
                0 => {
                    request::put_simple_reply(&mut buf[..SIMPLE_REPLY_LEN], cookie, 0);
                    self.send(&buf[..n]);
                }
                errno => self.send(&request::simple_reply(cookie, errno)),
            }
            return;
        }
        let errno = self.call(&cmd, || match cmd {
            Command::Write { offset, len, fua } => b.write_at(&buf[..len as usize], offset, fua),
            Command::Flush => b.flush(),
            Command::Trim { offset, len, fua } => b.trim(offset, len as u64, fua),
            Command::WriteZeroes { offset, len, no_hole, fua } => b.write_zeroes(offset, len as u64, no_hole, fua),
            Command::Read { .. } => unreachable!("handled above"),
        });
        self.send(&request::simple_reply(cookie, errno));
    }

    /// A backend call's errno (0 on success); a panic is answered with EIO.
    fn call(&self, cmd: &Command, f: impl FnOnce() -> io::Result<()>) -> u32 {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(Ok(())) => 0,
            Ok(Err(e)) => {
                log::debug!("{cmd:?} failed: {e}");
                request::errno_of(&e)
            }
            Err(_) => {
                log::error!("{}: {cmd:?} failed: the backend panicked", self.peer);
                EIO
            }
        }
    }

    fn send(&self, bytes: &[u8]) {
        let _g = lock(&self.writer);
        if let Err(e) = (&self.sock).write_all(bytes) {
            log::debug!("{}: reply not sent: {e}", self.peer);
        }
    }

    /// A worker took a request: when no other worker is left to read, start
    /// one (up to the limit).
    fn took_request(self: &Arc<Self>) {
        if self.idle.fetch_sub(1, Ordering::AcqRel) != 1 || self.reading_done.load(Ordering::Acquire) {
            return;
        }
        let max = self.max_workers;
        if self.workers.fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| (w < max).then_some(w + 1)).is_ok() {
            self.idle.fetch_add(1, Ordering::AcqRel);
            if let Err(e) = self.spawn_worker() {
                // This worker is alive, so the count cannot reach zero here.
                log::warn!("{}: cannot start a worker thread: {e}", self.peer);
                self.idle.fetch_sub(1, Ordering::AcqRel);
                self.workers.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// Starts a worker thread (the counts are already raised for it).
    fn spawn_worker(self: &Arc<Self>) -> io::Result<()> {
        let conn = self.clone();
        let token = self.tracker.token();
        std::thread::Builder::new().name("nbd-conn".into()).spawn(move || worker(conn, token)).map(drop)
    }

    /// A worker exits; the last one closes the connection.
    fn worker_exit(&self) {
        self.idle.fetch_sub(1, Ordering::AcqRel);
        if self.workers.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.finish();
        }
    }

    /// Every request read has been answered: close and report.
    fn finish(&self) {
        self.reading_done.store(true, Ordering::Release);
        let _ = self.sock.shutdown(Shutdown::Both);
        log::debug!("{}: connection closed: {}", self.peer, lock(&self.reader).stats);
        if let Some(tx) = lock(&self.done).take() {
            let _ = tx.send(());
        }
    }

    /// The server is stopping: read no new request (a reader blocked in
    /// `recv` wakes up with EOF; a partly read request is dropped).
    fn stop_reading(&self) {
        self.stopping.store(true, Ordering::Release);
        let _ = self.sock.shutdown(Shutdown::Read);
    }
}

fn worker(conn: Arc<Conn>, _token: TaskTrackerToken) {
    let mut buf = Vec::new();
    while let Some(job) = conn.next_job(&mut buf) {
        conn.took_request();
        let last = match job {
            Job::Run { cmd, cookie, bytes } => {
                conn.run(cmd, cookie, &mut buf);
                conn.bytes.give(bytes);
                false
            }
            Job::Reply { cookie, errno } => {
                conn.send(&request::simple_reply(cookie, errno));
                false
            }
            Job::Last { cookie, errno } => {
                conn.send(&request::simple_reply(cookie, errno));
                true
            }
        };
        if buf.len() > KEEP_BUFFER {
            buf = Vec::new();
        }
        conn.idle.fetch_add(1, Ordering::AcqRel);
        if last {
            break;
        }
    }
    conn.worker_exit();
}

/// Shuts the socket down both ways if the connection's task is dropped
/// (aborted after the drain timeout) before its workers are done.
struct AbortOnDrop(Option<Arc<Conn>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            conn.stopping.store(true, Ordering::Release);
            let _ = conn.sock.shutdown(Shutdown::Both);
        }
    }
}

/// Serves a negotiated connection until it closes or the server stops it.
pub(super) async fn transmission(
    sock: tokio::net::TcpStream,
    peer: SocketAddr,
    backend: Arc<dyn Backend>,
    params: ExportParams,
    config: &super::ServerConfig,
    mut stop: watch::Receiver<bool>,
    tracker: TaskTracker,
) {
    let socks = sock.into_std().and_then(|s| {
        s.set_nonblocking(false)?;
        let rd = s.try_clone()?;
        Ok((s, rd))
    });
    let (sock, rd) = match socks {
        Ok(s) => s,
        Err(e) => {
            log::warn!("{peer}: cannot set the connection up: {e}");
            return;
        }
    };
    let (done_tx, mut done_rx) = oneshot::channel();
    let conn = Arc::new(Conn {
        sock,
        peer,
        backend,
        params,
        max_workers: config.max_inflight_requests,
        reader: Mutex::new(Reader { rd: BufReader::with_capacity(READ_BUFFER, rd), stats: ConnStats::default() }),
        writer: Mutex::new(()),
        bytes: ByteBudget::new(config.max_inflight_bytes),
        stopping: AtomicBool::new(false),
        reading_done: AtomicBool::new(false),
        workers: AtomicUsize::new(1),
        idle: AtomicUsize::new(1),
        done: Mutex::new(Some(done_tx)),
        tracker,
    });
    if let Err(e) = conn.spawn_worker() {
        log::warn!("{peer}: cannot start a worker thread: {e}");
        conn.workers.store(0, Ordering::Release);
        conn.finish();
        return;
    }
    let mut guard = AbortOnDrop(Some(conn.clone()));
    tokio::select! {
        biased;
        _ = &mut done_rx => {}
        _ = stopped(&mut stop) => {
            conn.stop_reading();
            let _ = done_rx.await;
        }
    }
    guard.0 = None; // finished on its own: nothing to abort
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn byte_budget_waits_for_bytes_given_back() {
        let b = Arc::new(ByteBudget::new(10));
        b.take(6);
        b.take(4);
        assert!(!b.try_take(1));
        let b2 = b.clone();
        let waiter = std::thread::spawn(move || {
            b2.take(7);
            b2.avail.load(Ordering::SeqCst)
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished());
        b.give(4);
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiter.is_finished(), "4 bytes free, 7 wanted");
        b.give(6);
        assert_eq!(waiter.join().unwrap(), 3);
    }
}
