//! The transmission phase of one connection: its requests are read and run
//! by threads of the server-wide worker pool ([`Pool`], nbdkit's model with a
//! shared cap), and an async task watches the socket while no thread does.
//!
//! Reading: one thread at a time is the connection's reader (the `slot`).
//! It reads one request (header, and the payload of a write) from the
//! connection's buffer, gives up the slot, asks the pool for another thread
//! to read the next request (up to [`ServerConfig::max_inflight_requests`]
//! in flight), runs the backend call itself and writes the whole reply in
//! one `send` under the writer lock. So a request costs no thread hop, and a
//! slow backend call blocks only its thread, never the async runtime. After
//! a reply, the thread reads the next request if nobody else is reading,
//! unless other connections wait for a thread: then it goes back to the
//! pool and this connection queues up behind them.
//!
//! Idle connections hold no thread: a reader that finds no request for
//! [`LINGER`] (at once if other connections wait for a thread) parks the
//! connection, frees its read buffer and returns to the pool; the async side
//! (`transmission`) then waits for the socket to become readable
//! (`AsyncFd`) and queues a reader again. A request only partly received
//! keeps its reader thread.
//!
//! Memory: the bytes of write payloads and read buffers are taken, under the
//! reader slot, after a header is parsed and before the payload is read or
//! the buffer allocated, from the connection's budget
//! ([`ServerConfig::max_inflight_bytes`]) and then from the server's
//! ([`ServerConfig::buffer_memory`]), and given back after the reply is
//! sent. A reader waiting for bytes stops the connection's reading, which
//! pushes back on the client through TCP.
//!
//! Stalls: socket calls block for at most a short slice (`SO_RCVTIMEO`,
//! `SO_SNDTIMEO`), then the thread checks for a stop and a stall. A transfer
//! (a request's remaining bytes, or a reply) that moves less than
//! [`STALL_MIN_RATE`] over [`ServerConfig::stall_timeout`] while another
//! connection waits for budget or for a thread ends the connection (a reply
//! stall aborts it: the memory and threads it holds are given back), so a
//! client that stops reading its replies, or trickles a payload, cannot
//! starve the others for ever. Without contention nobody is hurried.
//!
//! Reading ends on EOF, a read error, `NBD_CMD_DISC`, a protocol error, a
//! stall, the server's shutdown or an eviction ([`Conn::stop_reading`]: a flag
//! checked before every read and after every slice, plus `shutdown(SHUT_RD)`).
//! Requests already read are answered; the last thread to leave shuts the
//! socket down, logs the connection's stats line and tells the async side.
//! An abort (drain timeout) shuts the socket down both ways, so threads
//! blocked on a client that does not read fail their `send`; each queued or
//! running turn holds a [`TaskTrackerToken`], so the server still waits for
//! every backend call before `Backend::shutdown`.

use crate::limits::{lock, Budget};
use crate::socket::{Peer, Stream};
use crate::{stopped, Global, ServerConfig};
use ssdcache_block::Backend;
use ssdcache_nbd::consts::*;
use ssdcache_nbd::request::{self, Command, Decision, ExportParams};
use ssdcache_nbd::structured::Session;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::io::AsRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::{oneshot, watch, Notify};
use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;
use tokio_util::task::TaskTracker;

/// Size of the per-connection read buffer: at high queue depths one `recv`
/// picks up several request headers (and small write payloads) at once.
/// Freed while the connection is parked.
const READ_BUFFER: usize = 64 << 10;
/// Largest buffer a thread keeps between requests (larger ones are freed
/// before their bytes go back to the budget).
const KEEP_BUFFER: usize = SIMPLE_REPLY_LEN + (128 << 10);
/// How long a reader waits at a request boundary for the next request
/// before it parks the connection (keeps a thread on a busy connection,
/// so a queue-depth-1 client does not pay a hand-over per request).
pub(super) const LINGER: Duration = Duration::from_secs(1);
/// While others wait for memory or a thread, a transfer slower than this
/// (over a window of the stall timeout) has stalled.
pub(super) const STALL_MIN_RATE: usize = 256 << 10;
/// Socket calls block at most this long (`SO_RCVTIMEO`, `SO_SNDTIMEO`),
/// between checks for a stop, a stall, and other connections waiting for a
/// thread.
const SLICE: Duration = Duration::from_millis(20);

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
    cache: u64,
    block_status: u64,
    fast_zero: u64,
    errors: u64,
    /// The connection negotiated extended headers (the real-client tests look for it).
    extended: bool,
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
            Command::WriteZeroes { no_hole, fast, fua, .. } => {
                self.zeroes += 1;
                self.no_hole += no_hole as u64;
                self.fast_zero += fast as u64;
                self.fua += fua as u64;
            }
            Command::Cache { .. } => self.cache += 1,
            Command::BlockStatus { .. } => self.block_status += 1,
        }
    }
}

impl std::fmt::Display for ConnStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self;
        write!(
            f,
            "requests={} read={} write={} fua={} flush={} trim={} zeroes={} no_hole={} fast_zero={} cache={} \
             block_status={} errors={} extended_headers={}",
            s.requests,
            s.read,
            s.write,
            s.fua,
            s.flush,
            s.trim,
            s.zeroes,
            s.no_hole,
            s.fast_zero,
            s.cache,
            s.block_status,
            s.errors,
            s.extended as u8
        )
    }
}

/// How far a transfer (the rest of a request, or a reply) has come: the
/// window restarts whenever the transfer has moved [`Global::stall_bytes`]
/// (the stall timeout's worth at [`STALL_MIN_RATE`]), so a transfer whose
/// window reaches the stall timeout is both slow and unfinished. A trickle
/// of bytes does not hold memory for ever.
struct Progress {
    window: Instant,
    moved: usize,
    need: usize,
}

impl Progress {
    fn new(global: &Global) -> Self {
        Progress { window: Instant::now(), moved: 0, need: global.stall_bytes }
    }

    fn moved(&mut self, n: usize) {
        self.moved += n;
        if self.moved >= self.need {
            (self.window, self.moved) = (Instant::now(), 0);
        }
    }
}

/// What the server's connection table sees of a connection in transmission:
/// whether it is idle, and since when.
#[derive(Debug, Default)]
pub(super) struct Activity {
    /// Milliseconds since [`Global::epoch`] of the last request read or reply sent.
    last_ms: AtomicU64,
    /// Requests read and not yet answered.
    inflight: AtomicUsize,
}

impl Activity {
    pub(super) fn new(now_ms: u64) -> Self {
        Activity { last_ms: AtomicU64::new(now_ms), inflight: AtomicUsize::new(0) }
    }

    /// How long the connection has had nothing to do (`None`: requests in flight).
    pub(super) fn idle_ms(&self, now_ms: u64) -> Option<u64> {
        if self.inflight.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(now_ms.saturating_sub(self.last_ms.load(Ordering::Acquire)))
    }
}

/// Who reads the connection's next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Nobody: a queued turn, or a thread that finishes a request, reads
    /// next (the read buffer may hold bytes).
    Free,
    /// A thread reads.
    Reading,
    /// Parked: the read buffer is empty and the async side waits until the
    /// socket is readable.
    Watching,
    /// Reading has ended for good.
    Ended,
}

struct Sched {
    slot: Slot,
    /// Requests read and not yet answered.
    inflight: usize,
    /// Turns claimed, queued in the pool or running for this connection.
    turns: usize,
    /// A turn is claimed or queued and has not started.
    queued: bool,
}

impl Sched {
    /// Counts a turn about to be submitted (after unlocking); true.
    fn claim_turn(&mut self) -> bool {
        self.queued = true;
        self.turns += 1;
        true
    }
}

struct Reader {
    /// Bytes received and not yet parsed are `buf[pos..end]`; empty (no
    /// allocation) while the connection is parked.
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    stats: ConnStats,
}

impl Reader {
    /// Moves buffered bytes into `out`; how many.
    fn take_buffered(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.end - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        n
    }
}

/// One connection in transmission, shared by its turns and its async task.
pub(super) struct Conn {
    /// The connection's number (whose waits for budget and threads are whose).
    id: u64,
    /// The socket (blocking, with send and receive timeouts of one slice):
    /// requests are read and replies written here. TCP, Unix, or the
    /// threads' end of a TLS session's socket pair (`tls.rs`).
    sock: Stream,
    peer: Peer,
    backend: Arc<dyn Backend>,
    params: ExportParams,
    /// Structured replies and metadata contexts the client negotiated.
    session: Session,
    global: Arc<Global>,
    max_inflight: usize,
    /// The reading side's buffer and the stats, counted as requests are read
    /// (only the thread holding the reader slot locks it).
    reader: Mutex<Reader>,
    /// Held while a reply is written, so replies go out whole.
    writer: Mutex<()>,
    /// This connection's own byte budget.
    bytes: Budget,
    /// The server is stopping (or evicting, or aborting) this connection: read no more.
    stopping: AtomicBool,
    sched: Mutex<Sched>,
    /// A reader parked the connection: the async side should watch the socket.
    parked: Notify,
    activity: Arc<Activity>,
    /// Fired when the connection is done (every request read was answered).
    done: Mutex<Option<oneshot::Sender<()>>>,
    tracker: TaskTracker,
}

/// What a turn got from the reading side.
enum Next {
    Job(Job),
    /// No request came: park the connection.
    Park,
    /// Reading has ended.
    End,
}

/// A request to answer.
enum Job {
    /// Run a command; a write's payload is in the thread's buffer. `bytes`
    /// were taken from both budgets.
    Run { cmd: Command, cookie: u64, bytes: usize },
    /// Send an error reply (to a request at `offset`) and read on.
    Reply { cookie: u64, offset: u64, errno: u32 },
    /// Send this error reply; reading has ended.
    Last { cookie: u64, offset: u64, errno: u32 },
}

fn stopping_error() -> io::Error {
    io::Error::other("the connection is stopping")
}

impl Conn {
    fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// After a socket call timed out (one slice): fails when the transfer
    /// has stalled (see [`Progress`]) while another connection waits for
    /// memory or a thread, and, if `stop` is set, when the connection is
    /// stopping.
    fn check_wait(&self, progress: &Progress, stop: bool) -> io::Result<()> {
        if stop && self.is_stopping() {
            return Err(stopping_error());
        }
        let stall = self.global.stall_timeout;
        if progress.window.elapsed() >= stall && self.global.contended(self.id) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "less than {} KiB/s for {stall:?} while other connections wait for memory or a thread",
                    STALL_MIN_RATE >> 10
                ),
            ));
        }
        Ok(())
    }

    /// Waits for the first bytes of the next request: `Ok(true)` when there
    /// are some, `Ok(false)` to park the connection (none came within the
    /// linger time, or another connection waits for a thread).
    fn wait_request(&self, rd: &mut Reader) -> io::Result<bool> {
        if rd.pos < rd.end {
            return Ok(true);
        }
        if rd.buf.is_empty() {
            rd.buf = vec![0u8; READ_BUFFER];
        }
        let start = Instant::now();
        loop {
            // Blocks for at most one slice (SO_RCVTIMEO).
            match (&self.sock).read(&mut rd.buf) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    (rd.pos, rd.end) = (0, n);
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            if self.is_stopping() {
                return Err(stopping_error());
            }
            if start.elapsed() >= LINGER || self.global.pool.pressure(self.id) {
                rd.buf = Vec::new();
                (rd.pos, rd.end) = (0, 0);
                return Ok(false);
            }
        }
    }

    /// Fills `out` from the buffer, then from the socket (large reads go
    /// straight into `out`), waiting as needed.
    fn read_exact(&self, rd: &mut Reader, out: &mut [u8]) -> io::Result<()> {
        if rd.buf.is_empty() {
            rd.buf = vec![0u8; READ_BUFFER];
        }
        let mut filled = rd.take_buffered(out);
        let mut progress = Progress::new(&self.global);
        while filled < out.len() {
            let direct = out.len() - filled >= READ_BUFFER;
            let r = if direct { (&self.sock).read(&mut out[filled..]) } else { (&self.sock).read(&mut rd.buf) };
            match r {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    if direct {
                        filled += n;
                    } else {
                        (rd.pos, rd.end) = (0, n);
                        filled += rd.take_buffered(&mut out[filled..]);
                    }
                    progress.moved(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.check_wait(&progress, true)?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Reads and drops `n` bytes (a rejected write's payload).
    fn discard(&self, rd: &mut Reader, mut n: usize) -> io::Result<()> {
        let mut scratch = [0u8; 4096];
        while n > 0 {
            let k = n.min(scratch.len());
            self.read_exact(rd, &mut scratch[..k])?;
            n -= k;
        }
        Ok(())
    }

    /// Reads the next request (holding the reader slot).
    fn next_job(&self, rd: &mut Reader, buf: &mut Vec<u8>) -> Next {
        if self.is_stopping() {
            return Next::End;
        }
        match self.wait_request(rd) {
            Ok(true) => {}
            Ok(false) => return Next::Park,
            Err(e) => {
                self.read_failed(&e);
                return Next::End;
            }
        }
        // 28 bytes, or 32 with extended headers (and their magic).
        let mut h = [0u8; EXTENDED_REQUEST_HEADER_LEN];
        let h = &mut h[..self.session.request_header_len()];
        if let Err(e) = self.read_exact(rd, h) {
            self.read_failed(&e);
            return Next::End;
        }
        let hdr = match request::parse_request_header(h) {
            Ok(hdr) => hdr,
            Err(e) => {
                log::info!("{}: closing: {e}", self.peer);
                return Next::End;
            }
        };
        // Not idle while it waits for the budget.
        self.activity.last_ms.store(self.global.now_ms(), Ordering::Release);
        match request::decide(&hdr, &self.params) {
            Decision::Execute(cmd) => {
                rd.stats.count(&cmd);
                // The budgets first, then the buffer and the payload: a
                // connection at a limit stops reading until replies go out.
                let bytes = cmd.buffer_len() as usize;
                let cancelled = || self.is_stopping();
                if !self.bytes.take(bytes, self.id, cancelled) {
                    return Next::End;
                }
                if !self.global.budget.take(bytes, self.id, cancelled) {
                    self.bytes.give(bytes);
                    return Next::End;
                }
                if let Command::Write { len, .. } = cmd {
                    let len = len as usize; // <= max_block, checked by decide
                    if buf.len() < len {
                        *buf = Vec::new(); // free the old one first: the budget counts one
                        *buf = vec![0u8; len];
                    }
                    if let Err(e) = self.read_exact(rd, &mut buf[..len]) {
                        self.release(buf, bytes);
                        self.read_failed(&e);
                        return Next::End;
                    }
                }
                Next::Job(Job::Run { cmd, cookie: hdr.cookie, bytes })
            }
            Decision::Reject { errno, discard } => {
                rd.stats.requests += 1;
                rd.stats.errors += 1;
                self.global.rejected.fetch_add(1, Ordering::Relaxed);
                match self.discard(rd, discard as usize) {
                    Ok(()) => Next::Job(Job::Reply { cookie: hdr.cookie, offset: hdr.offset, errno }),
                    Err(e) => {
                        self.read_failed(&e);
                        Next::End
                    }
                }
            }
            Decision::Disconnect => Next::End,
            Decision::Fatal { errno } => {
                log::info!("{}: closing: request of {} bytes over the maximum block size", self.peer, hdr.length);
                rd.stats.requests += 1;
                rd.stats.errors += 1;
                self.global.rejected.fetch_add(1, Ordering::Relaxed);
                Next::Job(Job::Last { cookie: hdr.cookie, offset: hdr.offset, errno })
            }
        }
    }

    fn read_failed(&self, e: &io::Error) {
        if e.kind() == io::ErrorKind::TimedOut {
            log::warn!("{}: closing: request stalled: {e}", self.peer);
        } else if self.is_stopping() {
            log::debug!("{}: stopped reading ({e})", self.peer);
        } else if e.kind() == io::ErrorKind::UnexpectedEof {
            log::debug!("{}: client closed the connection", self.peer);
        } else {
            log::info!("{}: read failed: {e}", self.peer);
        }
    }

    /// Frees a large buffer, then gives its bytes back to both budgets.
    fn release(&self, buf: &mut Vec<u8>, bytes: usize) {
        if buf.len() > KEEP_BUFFER {
            *buf = Vec::new();
        }
        self.bytes.give(bytes);
        self.global.budget.give(bytes);
    }

    /// Answers a request.
    fn execute(&self, job: Job, buf: &mut Vec<u8>) {
        match job {
            Job::Run { cmd, cookie, bytes } => {
                self.run(cmd, cookie, buf);
                self.release(buf, bytes);
            }
            Job::Reply { cookie, offset, errno } | Job::Last { cookie, offset, errno } => {
                self.send(&request::error_reply(&self.session, cookie, offset, errno))
            }
        }
    }

    /// Runs a command (the protocol's one executor) and sends its reply.
    fn run(&self, cmd: Command, cookie: u64, buf: &mut Vec<u8>) {
        let reply = request::execute(&self.session, &*self.backend, &cmd, cookie, buf, |f| self.call(&cmd, f));
        self.send(&reply);
    }

    /// Makes a backend call; a panic is answered with EIO.
    fn call(&self, cmd: &Command, f: &mut dyn FnMut() -> io::Result<()>) -> io::Result<()> {
        catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
            log::error!("{}: {cmd:?} failed: the backend panicked", self.peer);
            Err(io::Error::from_raw_os_error(libc::EIO))
        })
    }

    /// Writes a whole reply. A reply the client does not take for the stall
    /// timeout while others wait aborts the connection.
    fn send(&self, bytes: &[u8]) {
        let _g = lock(&self.writer);
        let mut off = 0;
        let mut progress = Progress::new(&self.global);
        while off < bytes.len() {
            match (&self.sock).write(&bytes[off..]) {
                Ok(0) => {
                    log::debug!("{}: reply not sent: the socket took nothing", self.peer);
                    return;
                }
                Ok(n) => {
                    off += n;
                    progress.moved(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Replies still go out while the connection drains: no stop check.
                    if let Err(e) = self.check_wait(&progress, false) {
                        if e.kind() == io::ErrorKind::TimedOut {
                            log::warn!("{}: closing: the client does not read its replies: {e}", self.peer);
                            self.abort();
                        } else {
                            log::debug!("{}: reply not sent: {e}", self.peer);
                        }
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    log::debug!("{}: reply not sent: {e}", self.peer);
                    return;
                }
            }
        }
    }

    /// Queues a turn in the pool (claimed with [`Sched::claim_turn`]).
    fn submit_turn(self: &Arc<Self>) {
        let conn = self.clone();
        let token = self.tracker.token();
        self.global.pool.submit(self.id, Box::new(move |buf: &mut Vec<u8>| turn(conn, buf, token)));
    }

    /// The socket became readable while parked: queue a reader.
    fn dispatch(self: &Arc<Self>) {
        let claimed = {
            let mut s = lock(&self.sched);
            s.slot == Slot::Watching && {
                s.slot = Slot::Free;
                s.claim_turn()
            }
        };
        if claimed {
            self.submit_turn();
        }
    }

    fn is_watching(&self) -> bool {
        lock(&self.sched).slot == Slot::Watching
    }

    /// Read no new request (the server stops, or evicts this connection): a
    /// reader blocked in `recv` wakes up with EOF; a partly read request is
    /// dropped; requests already read are answered.
    fn stop_reading(&self) {
        self.stopping.store(true, Ordering::Release);
        let _ = self.sock.shutdown(Shutdown::Read);
        let finished = {
            let mut s = lock(&self.sched);
            if s.slot == Slot::Watching {
                s.slot = Slot::Ended;
                s.turns == 0
            } else {
                false
            }
        };
        if finished {
            self.finish();
        }
    }

    /// Stops everything at once: senders blocked on the client fail.
    fn abort(&self) {
        self.stopping.store(true, Ordering::Release);
        let _ = self.sock.shutdown(Shutdown::Both);
    }

    /// Every request read has been answered: close and report.
    fn finish(&self) {
        let _ = self.sock.shutdown(Shutdown::Both);
        log::debug!("{}: connection closed: {}", self.peer, lock(&self.reader).stats);
        if let Some(tx) = lock(&self.done).take() {
            let _ = tx.send(());
        }
    }
}

/// A pool thread working for a connection: reads a request if nobody else
/// is, answers it, and goes on reading while it can. Turns are submitted to
/// the pool after `sched` is unlocked: the woken thread takes it at once.
fn turn(conn: Arc<Conn>, buf: &mut Vec<u8>, _token: TaskTrackerToken) {
    let mut s = lock(&conn.sched);
    s.queued = false;
    loop {
        if s.slot != Slot::Free || s.inflight >= conn.max_inflight {
            break;
        }
        s.slot = Slot::Reading;
        drop(s);
        let next = conn.next_job(&mut lock(&conn.reader), buf);
        s = lock(&conn.sched);
        let job = match next {
            Next::Job(job) => job,
            Next::Park => {
                // stop_reading sets the flag before it looks at the slot.
                if conn.is_stopping() {
                    s.slot = Slot::Ended;
                } else {
                    s.slot = Slot::Watching;
                    conn.parked.notify_one();
                }
                break;
            }
            Next::End => {
                s.slot = Slot::Ended;
                break;
            }
        };
        s.inflight += 1;
        let mut another = false;
        if matches!(job, Job::Last { .. }) {
            s.slot = Slot::Ended;
        } else {
            s.slot = Slot::Free;
            // Someone reads the next request while this one runs.
            another = s.inflight < conn.max_inflight && !s.queued && s.claim_turn();
        }
        drop(s);
        if another {
            conn.submit_turn();
        }
        conn.activity.inflight.fetch_add(1, Ordering::AcqRel);
        conn.activity.last_ms.store(conn.global.now_ms(), Ordering::Release);
        conn.execute(job, buf);
        conn.activity.last_ms.store(conn.global.now_ms(), Ordering::Release);
        conn.activity.inflight.fetch_sub(1, Ordering::AcqRel);
        s = lock(&conn.sched);
        s.inflight -= 1;
        if s.slot != Slot::Free {
            break; // someone reads
        }
        if conn.global.pool.pressure(conn.id) {
            // Others wait for a thread: queue up behind them.
            if !s.queued {
                s.claim_turn();
                drop(s);
                conn.submit_turn();
                s = lock(&conn.sched);
            }
            break;
        }
        // Read on, even if a turn is queued: it will find the slot taken
        // (a wasted wake-up is cheaper than sleeping and waking another).
    }
    s.turns -= 1;
    let finished = s.turns == 0 && s.slot == Slot::Ended;
    drop(s);
    if finished {
        conn.finish();
    }
}

/// Whether the socket has something to read (data, EOF or an error), without
/// blocking: `WouldBlock` if not.
fn peek(sock: &Stream) -> io::Result<()> {
    let mut b = 0u8;
    // SAFETY: a one-byte buffer valid for the call.
    let r = unsafe { libc::recv(sock.as_raw_fd(), (&mut b as *mut u8).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Shuts the socket down both ways if the connection's task is dropped
/// (aborted after the drain timeout) before it is done.
struct AbortOnDrop(Option<Arc<Conn>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            conn.abort();
        }
    }
}

/// A negotiated connection, handed to [`transmission`].
pub(super) struct Negotiated {
    pub sock: Stream,
    pub peer: Peer,
    pub id: u64,
    pub backend: Arc<dyn Backend>,
    pub params: ExportParams,
    pub session: Session,
    pub activity: Arc<Activity>,
    /// Cancelled to evict the connection (stop reading, answer, close).
    pub kick: CancellationToken,
}

/// Serves a negotiated connection until it closes or the server stops it.
pub(super) async fn transmission(
    n: Negotiated,
    config: &ServerConfig,
    global: Arc<Global>,
    mut stop: watch::Receiver<bool>,
    tracker: TaskTracker,
) {
    let peer = n.peer.clone();
    // Threads use the socket in blocking mode, each call bounded by one
    // slice. While the connection is parked, a duplicate is registered with
    // the runtime to learn when there is something to read; only then, so
    // that requests arriving while a thread reads do not wake the runtime too.
    let socks = n.sock.set_blocking_slices(SLICE).and_then(|()| Ok((n.sock.try_clone()?, n.sock)));
    let (sock, dup) = match socks {
        Ok(s) => s,
        Err(e) => {
            log::warn!("{peer}: cannot set the connection up: {e}");
            return;
        }
    };
    let (done_tx, mut done_rx) = oneshot::channel();
    let conn = Arc::new(Conn {
        id: n.id,
        sock,
        peer: n.peer,
        backend: n.backend,
        params: n.params.for_session(&n.session),
        session: n.session,
        global,
        max_inflight: config.max_inflight_requests,
        reader: Mutex::new(Reader {
            buf: Vec::new(),
            pos: 0,
            end: 0,
            stats: ConnStats { extended: n.session.extended, ..ConnStats::default() },
        }),
        writer: Mutex::new(()),
        bytes: Budget::new(config.max_inflight_bytes),
        stopping: AtomicBool::new(false),
        sched: Mutex::new(Sched { slot: Slot::Watching, inflight: 0, turns: 0, queued: false }),
        parked: Notify::new(),
        activity: n.activity,
        done: Mutex::new(Some(done_tx)),
        tracker,
    });
    let mut guard = AbortOnDrop(Some(conn.clone()));
    let mut stopping = false;
    let mut dup = Some(dup);
    loop {
        let watch = match dup.take() {
            Some(d) if conn.is_watching() => Some(d),
            other => {
                dup = other;
                None
            }
        };
        let watch = if let Some(dup) = watch {
            // SAFETY: the AsyncFd owns the duplicate, which stays open (and
            // the same socket) until `into_inner` gives it back.
            match unsafe { AsyncFd::register_with_interest(dup, Interest::READABLE) } {
                Ok(w) => Some(w),
                Err(e) => {
                    let (_, e) = e.into_parts();
                    log::warn!("{peer}: cannot watch the connection: {e}");
                    conn.stop_reading();
                    let _ = done_rx.await;
                    break;
                }
            }
        } else {
            None
        };
        let readable = async {
            match &watch {
                // Data, EOF or an error: a reader finds out which. A peek
                // that would block (nothing there after all) clears the
                // readiness and waits again.
                Some(w) => loop {
                    match w.readable().await {
                        Ok(mut g) => {
                            if g.try_io(|s| peek(s.get_ref())).is_ok() {
                                return Ok(());
                            }
                        }
                        Err(e) => return Err(e),
                    }
                },
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = &mut done_rx => break,
            _ = stopped(&mut stop), if !stopping => {
                stopping = true;
                conn.stop_reading();
            }
            _ = n.kick.cancelled(), if !stopping => {
                stopping = true;
                conn.stop_reading();
            }
            _ = conn.parked.notified(), if watch.is_none() => {}
            r = readable => match r {
                Ok(()) => conn.dispatch(),
                Err(e) => {
                    log::warn!("{peer}: cannot watch the connection: {e}");
                    stopping = true;
                    conn.stop_reading();
                }
            },
        }
        if let Some(w) = watch {
            dup = Some(w.into_inner());
        }
    }
    guard.0 = None; // finished on its own: nothing to abort
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_only_without_requests_in_flight() {
        let a = Activity::new(1000);
        assert_eq!(a.idle_ms(1500), Some(500));
        a.inflight.fetch_add(1, Ordering::SeqCst);
        assert_eq!(a.idle_ms(99_999), None);
    }
}
