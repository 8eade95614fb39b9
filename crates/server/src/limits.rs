//! Server-wide resources that every connection draws from: the byte
//! [`Budget`] for buffered request payloads and reply data, and the [`Pool`]
//! of worker threads. Both make a caller wait (back-pressure) instead of
//! failing, first come first served, so a request needing the whole budget
//! is not starved by a stream of small ones.

use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

pub(super) use ssdcache_block::sync::lock;

/// How often a thread waiting for bytes checks whether it should give up.
const BUDGET_SLICE: Duration = Duration::from_millis(50);

/// A counting budget of bytes that blocking threads wait on, in FIFO order:
/// a waiter is served only when every earlier waiter has been, so a request
/// for `total` bytes gets them as soon as the bytes held are given back.
pub(super) struct Budget {
    total: usize,
    state: Mutex<BudgetState>,
    cv: Condvar,
    /// Wakes the async waiters ([`Budget::take_async`]) as `cv` wakes the threads.
    notify: tokio::sync::Notify,
}

struct BudgetState {
    avail: usize,
    /// Most bytes ever taken at once.
    peak: usize,
    waiters: VecDeque<Waiter>,
    next_ticket: u64,
}

struct Waiter {
    ticket: u64,
    /// Which connection waits (for [`Budget::others_waiting`]).
    owner: u64,
}

impl BudgetState {
    fn grab(&mut self, total: usize, n: usize) {
        self.avail -= n;
        self.peak = self.peak.max(total - self.avail);
    }
}

impl Budget {
    pub(super) fn new(total: usize) -> Self {
        Budget {
            total,
            state: Mutex::new(BudgetState { avail: total, peak: 0, waiters: VecDeque::new(), next_ticket: 0 }),
            cv: Condvar::new(),
            notify: tokio::sync::Notify::new(),
        }
    }

    /// Wakes every waiter, threads and tasks: bytes came back, or the head
    /// of the queue changed.
    fn wake(&self) {
        self.cv.notify_all();
        self.notify.notify_waiters();
    }

    /// Bytes taken now.
    pub(super) fn in_use(&self) -> usize {
        self.total - lock(&self.state).avail
    }

    /// Most bytes taken at once so far.
    pub(super) fn peak(&self) -> usize {
        lock(&self.state).peak
    }

    /// Takes `n` bytes (at most the total), waiting behind earlier waiters
    /// until they are there. Returns false, taking nothing, if `cancelled`
    /// (polled while waiting) says so first.
    pub(super) fn take(&self, n: usize, owner: u64, cancelled: impl Fn() -> bool) -> bool {
        debug_assert!(n <= self.total);
        if n == 0 {
            return true;
        }
        let mut s = lock(&self.state);
        if s.waiters.is_empty() && s.avail >= n {
            s.grab(self.total, n);
            return true;
        }
        let ticket = s.next_ticket;
        s.next_ticket += 1;
        s.waiters.push_back(Waiter { ticket, owner });
        loop {
            if s.waiters.front().map(|w| w.ticket) == Some(ticket) && s.avail >= n {
                s.waiters.pop_front();
                s.grab(self.total, n);
                if !s.waiters.is_empty() {
                    self.wake(); // the next one may fit too
                }
                return true;
            }
            if cancelled() {
                s.waiters.retain(|w| w.ticket != ticket);
                self.wake(); // a new head may fit
                return false;
            }
            s = self.cv.wait_timeout(s, BUDGET_SLICE).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    pub(super) fn give(&self, n: usize) {
        if n == 0 {
            return;
        }
        let mut s = lock(&self.state);
        s.avail += n;
        debug_assert!(s.avail <= self.total);
        if !s.waiters.is_empty() {
            self.wake();
        }
    }

    /// [`take`](Self::take) for async code, in the same queue: `n` bytes
    /// (at most the total), given back when the returned [`Held`] is
    /// dropped. Dropping the future while it waits gives up its place.
    pub(super) async fn take_async(&self, n: usize, owner: u64) -> Held<'_> {
        let n = n.min(self.total);
        let ticket = {
            let mut s = lock(&self.state);
            if s.waiters.is_empty() && s.avail >= n {
                s.grab(self.total, n);
                return Held { budget: self, n };
            }
            let ticket = s.next_ticket;
            s.next_ticket += 1;
            s.waiters.push_back(Waiter { ticket, owner });
            ticket
        };
        let mut place = Place { budget: self, ticket, queued: true };
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable(); // no wake between the check and the wait is lost
            {
                let mut s = lock(&self.state);
                if s.waiters.front().map(|w| w.ticket) == Some(ticket) && s.avail >= n {
                    s.waiters.pop_front();
                    place.queued = false;
                    s.grab(self.total, n);
                    if !s.waiters.is_empty() {
                        self.wake();
                    }
                    return Held { budget: self, n };
                }
            }
            // (the slice as the threads have, should a wake go astray)
            let _ = tokio::time::timeout(BUDGET_SLICE, notified).await;
        }
    }

    /// Whether a connection other than `owner` waits for bytes.
    pub(super) fn others_waiting(&self, owner: u64) -> bool {
        lock(&self.state).waiters.iter().any(|w| w.owner != owner)
    }
}

/// Bytes taken by [`Budget::take_async`], given back on drop.
pub(super) struct Held<'a> {
    budget: &'a Budget,
    n: usize,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.budget.give(self.n);
    }
}

/// An async waiter's place in the queue, left if it stops waiting.
struct Place<'a> {
    budget: &'a Budget,
    ticket: u64,
    queued: bool,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        if self.queued {
            let mut s = lock(&self.budget.state);
            s.waiters.retain(|w| w.ticket != self.ticket);
            self.budget.wake(); // a new head may fit
        }
    }
}

/// Handshakes of at least this much memory are followed by
/// [`return_freed_memory`].
pub(super) const TRIM_AFTER: usize = 1 << 20;

/// Asks the allocator to return the memory freed since to the system, on a
/// blocking thread, once however many ask at the same time. glibc keeps
/// freed memory for reuse rather than return it, and rustls frees a large
/// certificate chain's flight in 16 KiB records: without this, the memory
/// of handshakes that ended stays with the process. Elsewhere a no-op.
pub(super) fn return_freed_memory() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static PENDING: AtomicBool = AtomicBool::new(false);
    if PENDING.swap(true, Ordering::AcqRel) {
        return;
    }
    let trim = || {
        PENDING.store(false, Ordering::Release);
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only releases free memory; it takes the
        // allocator's own locks.
        unsafe {
            libc::malloc_trim(0);
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => drop(rt.spawn_blocking(trim)),
        Err(_) => trim(),
    }
}

/// A job for a pool thread; it gets the thread's reusable buffer.
pub(super) type Job = Box<dyn FnOnce(&mut Vec<u8>) + Send>;

/// An idle pool thread exits after this long without work.
const IDLE_EXIT: Duration = Duration::from_secs(10);

/// At most `max` worker threads, started on demand and shared by every
/// connection, in fair shares: while `n` connections have jobs running or
/// waiting, none is given a thread beyond ⌈max / (n + 1)⌉ of them, so one
/// connection's flood of requests cannot take every thread (a share is kept
/// free for a connection that arrives), and a waiting job whose connection
/// runs fewer jobs goes first. A job beyond its share waits until one of
/// its connection's own jobs ends, or the share grows.
pub(super) struct Pool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    max: usize,
    state: Mutex<PoolState>,
    cv: Condvar,
}

struct PoolState {
    /// Jobs waiting for a thread, with the connection they are for.
    queue: VecDeque<(u64, Job)>,
    /// Per connection with jobs running or waiting: (running, waiting).
    owners: HashMap<u64, (usize, usize)>,
    threads: usize,
    peak: usize,
    /// Threads waiting for a job.
    idle: usize,
    /// Idle threads woken for a job and not yet running.
    signaled: usize,
    closed: bool,
}

impl PoolState {
    /// Most threads one connection may hold now.
    fn share(&self, max: usize) -> usize {
        max.div_ceil(self.owners.len() + 1).max(1)
    }

    /// Waiting jobs a thread may take now (within their connection's share).
    fn runnable(&self, max: usize) -> usize {
        let share = self.share(max);
        self.owners.values().map(|&(running, waiting)| waiting.min(share.saturating_sub(running))).sum()
    }

    /// Takes the waiting job of the connection running the fewest, if it is
    /// within its share (first queued among equals).
    fn take(&mut self, max: usize) -> Option<(u64, Job)> {
        let share = self.share(max);
        let (i, running) = self
            .queue
            .iter()
            .enumerate()
            .map(|(i, (o, _))| (i, self.owners[o].0))
            .min_by_key(|&(i, running)| (running, i))?;
        if running >= share {
            return None;
        }
        let (owner, job) = self.queue.remove(i)?;
        let e = self.owners.get_mut(&owner).expect("a waiting job's connection is known");
        e.0 += 1;
        e.1 -= 1;
        Some((owner, job))
    }

    /// A job of `owner` ended.
    fn ended(&mut self, owner: u64) {
        let e = self.owners.get_mut(&owner).expect("a running job's connection is known");
        e.0 -= 1;
        if *e == (0, 0) {
            self.owners.remove(&owner);
        }
    }
}

impl Pool {
    pub(super) fn new(max: usize) -> Self {
        Pool {
            inner: Arc::new(PoolInner {
                max,
                state: Mutex::new(PoolState {
                    queue: VecDeque::new(),
                    owners: HashMap::new(),
                    threads: 0,
                    peak: 0,
                    idle: 0,
                    signaled: 0,
                    closed: false,
                }),
                cv: Condvar::new(),
            }),
        }
    }

    /// Runs `job` on a pool thread, within its connection's share: an idle
    /// thread, a new one while there are fewer than the maximum, else the
    /// first that comes free.
    pub(super) fn submit(&self, owner: u64, job: Job) {
        let mut s = lock(&self.inner.state);
        if s.closed {
            return;
        }
        s.queue.push_back((owner, job));
        s.owners.entry(owner).or_default().1 += 1;
        self.inner.dispatch(s);
    }

    /// Whether a job of a connection other than `owner` waits for a thread
    /// that no running or woken thread is about to take, and may have one
    /// (is within its connection's share).
    pub(super) fn pressure(&self, owner: u64) -> bool {
        let s = lock(&self.inner.state);
        let share = s.share(self.inner.max);
        s.runnable(self.inner.max) > s.signaled
            && s.owners.iter().any(|(&o, &(running, waiting))| o != owner && waiting > 0 && running < share)
    }

    /// (threads alive, most threads alive at once).
    pub(super) fn threads(&self) -> (usize, usize) {
        let s = lock(&self.inner.state);
        (s.threads, s.peak)
    }

    /// Lets the threads exit once the queue is empty.
    pub(super) fn close(&self) {
        lock(&self.inner.state).closed = true;
        self.inner.cv.notify_all();
    }
}

impl PoolInner {
    /// Finds a thread for each waiting job that may run now: wakes idle
    /// threads, then starts new ones up to the maximum.
    fn dispatch(self: &Arc<Self>, mut s: MutexGuard<'_, PoolState>) {
        let mut wanted = s.runnable(self.max).saturating_sub(s.signaled);
        let wake = wanted.min(s.idle.saturating_sub(s.signaled));
        s.signaled += wake;
        wanted -= wake;
        let spawn = wanted.min(self.max - s.threads);
        s.threads += spawn;
        s.peak = s.peak.max(s.threads);
        drop(s);
        for _ in 0..wake {
            self.cv.notify_one();
        }
        for _ in 0..spawn {
            let inner = self.clone();
            if let Err(e) = std::thread::Builder::new().name("nbd-worker".into()).spawn(move || worker(inner)) {
                // The job stays queued for a thread that comes free.
                log::warn!("cannot start a worker thread: {e}");
                lock(&self.state).threads -= 1;
            }
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.close();
    }
}

fn worker(inner: Arc<PoolInner>) {
    let mut buf = Vec::new();
    let mut s = lock(&inner.state);
    loop {
        if let Some((owner, job)) = s.take(inner.max) {
            if s.runnable(inner.max) > s.signaled {
                inner.dispatch(s); // (more jobs may run: the share grew, or several came within it)
            } else {
                drop(s);
            }
            // Jobs catch the backend's panics themselves; this keeps the
            // thread count right if anything else panics.
            if catch_unwind(AssertUnwindSafe(|| job(&mut buf))).is_err() {
                log::error!("a worker job panicked");
                buf = Vec::new();
            }
            s = lock(&inner.state);
            s.ended(owner);
            continue;
        }
        if s.closed && s.queue.is_empty() {
            break;
        }
        s.idle += 1;
        let (g, wait) = inner.cv.wait_timeout(s, IDLE_EXIT).unwrap_or_else(|e| e.into_inner());
        s = g;
        s.idle -= 1;
        if s.signaled > 0 {
            s.signaled -= 1;
        } else if wait.timed_out() && s.queue.is_empty() {
            break;
        }
    }
    s.threads -= 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Instant;

    #[test]
    fn budget_waits_for_bytes_given_back() {
        let b = Arc::new(Budget::new(10));
        assert!(b.take(6, 1, || false));
        assert!(b.take(4, 1, || false));
        assert_eq!(b.in_use(), 10);
        let b2 = b.clone();
        let waiter = std::thread::spawn(move || {
            assert!(b2.take(7, 2, || false));
            b2.in_use()
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished());
        assert!(b.others_waiting(1));
        assert!(!b.others_waiting(2));
        b.give(4);
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiter.is_finished(), "4 bytes free, 7 wanted");
        b.give(6);
        assert_eq!(waiter.join().unwrap(), 7);
        assert_eq!(b.peak(), 10);
    }

    #[test]
    fn budget_is_first_come_first_served() {
        // A big request waiting at the head is not overtaken by small ones.
        let b = Arc::new(Budget::new(10));
        assert!(b.take(5, 1, || false));
        let b2 = b.clone();
        let big = std::thread::spawn(move || assert!(b2.take(10, 2, || false)));
        while !b.others_waiting(1) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let b3 = b.clone();
        let small_done = Arc::new(AtomicBool::new(false));
        let sd = small_done.clone();
        let small = std::thread::spawn(move || {
            assert!(b3.take(1, 3, || false));
            sd.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!small_done.load(Ordering::SeqCst), "a small request overtook the big one at the head");
        b.give(5);
        big.join().unwrap();
        assert!(!small_done.load(Ordering::SeqCst));
        b.give(10);
        small.join().unwrap();
    }

    #[test]
    fn budget_wait_can_be_cancelled() {
        let b = Budget::new(4);
        assert!(b.take(4, 1, || false));
        let t = Instant::now();
        let stop = AtomicBool::new(false);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                std::thread::sleep(Duration::from_millis(100));
                stop.store(true, Ordering::SeqCst);
            });
            assert!(!b.take(1, 2, || stop.load(Ordering::SeqCst)));
        });
        assert!(t.elapsed() < Duration::from_secs(2));
        assert!(!b.others_waiting(1));
        b.give(4);
        assert_eq!(b.in_use(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn async_takers_wait_in_the_same_queue_and_leave_it_when_dropped() {
        let b = Arc::new(Budget::new(10));
        assert!(b.take(8, 1, || false));
        let b2 = b.clone();
        let waiter = tokio::spawn(async move {
            let held = b2.take_async(5, 2).await;
            let in_use = b2.in_use();
            drop(held);
            in_use
        });
        while !b.others_waiting(1) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // 2 bytes are free, but a later taker of 1 waits behind the 5 (first
        // come, first served); given up, it leaves the queue
        assert!(tokio::time::timeout(Duration::from_millis(50), b.take_async(1, 3)).await.is_err());
        assert!(!b.others_waiting(2), "a dropped waiter is still queued");
        // a thread queued behind the async waiter is served after it
        let b3 = b.clone();
        let thread = std::thread::spawn(move || b3.take(10, 4, || false));
        while !b.others_waiting(2) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        b.give(8);
        assert_eq!(waiter.await.unwrap(), 5);
        assert!(tokio::task::spawn_blocking(move || thread.join().unwrap()).await.unwrap());
        assert_eq!(b.in_use(), 10);
        b.give(10);
        let held = b.take_async(100, 5).await; // more than the total: the total
        assert_eq!(b.in_use(), 10);
        drop(held);
        assert_eq!(b.in_use(), 0);
    }

    /// Submits a job for `owner` that counts itself in `running[owner]` and
    /// blocks until `release` is set.
    fn blocked_job(
        pool: &Pool,
        owner: u64,
        running: &Arc<[AtomicUsize; 3]>,
        most: &Arc<[AtomicUsize; 3]>,
        release: &Arc<AtomicBool>,
    ) {
        let (running, most, release) = (running.clone(), most.clone(), release.clone());
        pool.submit(
            owner,
            Box::new(move |_buf| {
                let i = owner as usize;
                let now = running[i].fetch_add(1, Ordering::SeqCst) + 1;
                most[i].fetch_max(now, Ordering::SeqCst);
                while !release.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                running[i].fetch_sub(1, Ordering::SeqCst);
            }),
        );
    }

    fn wait_until(what: &str, cond: impl Fn() -> bool) {
        let t = Instant::now();
        while !cond() {
            assert!(t.elapsed() < Duration::from_secs(10), "timed out waiting until {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_flooding_connection_leaves_threads_for_another() {
        // One connection submits far more blocked jobs than there are threads:
        // alone it gets a share (half of 8, one share kept free), so a second
        // connection's job runs at once, while the first's are still blocked.
        let pool = Pool::new(8);
        let running: Arc<[AtomicUsize; 3]> = Arc::new(Default::default());
        let most: Arc<[AtomicUsize; 3]> = Arc::new(Default::default());
        let hold = Arc::new(AtomicBool::new(false));
        for _ in 0..20 {
            blocked_job(&pool, 1, &running, &most, &hold);
        }
        wait_until("the flood runs", || running[1].load(Ordering::SeqCst) == 4);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(most[1].load(Ordering::SeqCst), 4, "one connection took more than its share");
        let free = Arc::new(AtomicBool::new(true));
        blocked_job(&pool, 2, &running, &most, &free);
        wait_until("the second connection's job ran", || most[2].load(Ordering::SeqCst) == 1);
        assert_eq!(running[1].load(Ordering::SeqCst), 4, "the flood's jobs are still blocked");
        // with two connections busy the flood's share is ⌈8/3⌉ = 3: it stays at
        // the 4 it has until they end, then every job of it runs
        hold.store(true, Ordering::SeqCst);
        wait_until("every job ran", || {
            running[1].load(Ordering::SeqCst) == 0 && pool.inner.state.lock().unwrap().queue.is_empty()
        });
        assert!(most[1].load(Ordering::SeqCst) <= 4);
        pool.close();
    }

    #[test]
    fn a_waiting_job_of_the_connection_running_fewest_goes_first() {
        let mut s = PoolState {
            queue: VecDeque::new(),
            owners: HashMap::new(),
            threads: 2,
            peak: 2,
            idle: 0,
            signaled: 0,
            closed: false,
        };
        let job = || -> Job { Box::new(|_buf| {}) };
        // connection 1 runs one job and waits with another, queued first;
        // connection 0 runs none: with 8 threads both are within their share
        // (⌈8/3⌉ = 3), and 0's goes first
        s.queue.push_back((1, job()));
        s.queue.push_back((0, job()));
        s.owners.insert(1, (1, 1));
        s.owners.insert(0, (0, 1));
        assert_eq!(s.runnable(8), 2);
        assert_eq!(s.take(8).map(|(o, _)| o), Some(0));
        assert_eq!(s.take(8).map(|(o, _)| o), Some(1));
        assert_eq!(s.owners[&1], (2, 0));
        // beyond its share a job waits: 4 threads, two connections -> share 2
        s.queue.push_back((1, job()));
        s.owners.get_mut(&1).unwrap().1 += 1;
        assert_eq!(s.share(4), 2);
        assert_eq!(s.runnable(4), 0);
        assert!(s.take(4).is_none());
        s.ended(1);
        assert_eq!(s.take(4).map(|(o, _)| o), Some(1));
        s.ended(1);
        s.ended(1);
        s.ended(0);
        assert!(s.owners.is_empty(), "{:?}", s.owners);
    }

    #[test]
    fn pool_runs_at_most_max_jobs_at_once_and_all_of_them() {
        let pool = Pool::new(3);
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        for i in 0..20 {
            let (running, most, done) = (running.clone(), most.clone(), done.clone());
            pool.submit(
                i,
                Box::new(move |_buf| {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(10));
                    running.fetch_sub(1, Ordering::SeqCst);
                    done.fetch_add(1, Ordering::SeqCst);
                }),
            );
        }
        let t = Instant::now();
        while done.load(Ordering::SeqCst) < 20 {
            assert!(t.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(most.load(Ordering::SeqCst), 3);
        assert_eq!(pool.threads().1, 3);
        pool.close();
    }
}
