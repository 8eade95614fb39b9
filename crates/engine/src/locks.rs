//! Segment locks (paper 000, Fig. 5 lines 14, 17, 22–23): a request holds
//! the HDD segments it touches while its device I/O runs, and the
//! caching-and-eviction procedure holds the segments whose slot it moves, so
//! a segment is never copied while it is being written, and a request never
//! reads a slot being refilled. Requests on other segments run in parallel.
//!
//! A request takes all its segments in one step (all or nothing, under one
//! mutex), so no thread ever holds some segments while it waits for others:
//! no lock-order deadlock is possible. A condition variable wakes waiters
//! whenever segments are released. Requests span few segments and are short,
//! so a plain set is enough (no interval tree).

use std::collections::HashSet;
use std::sync::{Condvar, Mutex, MutexGuard};

/// The table of held segments.
#[derive(Debug, Default)]
pub struct SegmentLocks {
    held: Mutex<Held>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct Held {
    segments: HashSet<u64>,
    /// Everything is held (shutdown).
    all: bool,
}

/// Releases its segments when dropped.
#[must_use = "the segments are released when the guard is dropped"]
pub struct Guard<'a> {
    locks: &'a SegmentLocks,
    segments: Vec<u64>,
    all: bool,
}

impl SegmentLocks {
    pub fn new() -> Self {
        Self::default()
    }

    fn table(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds every segment in `segments` (duplicates allowed), waiting until
    /// none of them is held by anyone else.
    pub fn lock(&self, segments: impl IntoIterator<Item = u64>) -> Guard<'_> {
        let mut segments: Vec<u64> = segments.into_iter().collect();
        segments.sort_unstable();
        segments.dedup();
        let mut t = self.table();
        while t.all || segments.iter().any(|s| t.segments.contains(s)) {
            t = self.freed.wait(t).unwrap_or_else(|e| e.into_inner());
        }
        t.segments.extend(segments.iter().copied());
        Guard { locks: self, segments, all: false }
    }

    /// Holds every segment: waits until no segment is held, then blocks new
    /// holders until the guard is dropped.
    pub fn lock_all(&self) -> Guard<'_> {
        let mut t = self.table();
        while t.all || !t.segments.is_empty() {
            t = self.freed.wait(t).unwrap_or_else(|e| e.into_inner());
        }
        t.all = true;
        Guard { locks: self, segments: Vec::new(), all: true }
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let mut t = self.locks.table();
        for s in &self.segments {
            t.segments.remove(s);
        }
        if self.all {
            t.all = false;
        }
        drop(t);
        self.locks.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn disjoint_sets_do_not_wait_and_overlapping_ones_do() {
        let l = Arc::new(SegmentLocks::new());
        let a = l.lock([1, 2, 2]);
        let _b = l.lock([3]); // disjoint: immediate
        let done = Arc::new(AtomicBool::new(false));
        let t = {
            let (l, done) = (l.clone(), done.clone());
            std::thread::spawn(move || {
                let _g = l.lock([0, 2]);
                done.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!done.load(Ordering::SeqCst), "segment 2 is held");
        drop(a);
        t.join().unwrap();
        assert!(done.load(Ordering::SeqCst));
    }

    #[test]
    fn lock_all_waits_for_holders_and_blocks_new_ones() {
        let l = Arc::new(SegmentLocks::new());
        let g = l.lock([5]);
        let all_taken = Arc::new(AtomicBool::new(false));
        let t = {
            let (l, flag) = (l.clone(), all_taken.clone());
            std::thread::spawn(move || {
                let _all = l.lock_all();
                flag.store(true, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(30));
            })
        };
        std::thread::sleep(Duration::from_millis(30));
        assert!(!all_taken.load(Ordering::SeqCst));
        drop(g);
        while !all_taken.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        let _x = l.lock([9]); // waits for the whole-table guard
        t.join().unwrap();
    }

    #[test]
    fn many_threads_with_crossing_sets_never_share_a_segment() {
        let l = Arc::new(SegmentLocks::new());
        let owners: Arc<Vec<AtomicUsize>> = Arc::new((0..8).map(|_| AtomicUsize::new(0)).collect());
        let threads: Vec<_> = (0..4usize)
            .map(|t| {
                let (l, owners) = (l.clone(), owners.clone());
                std::thread::spawn(move || {
                    for i in 0..2000usize {
                        // Sets cross in both orders, which would deadlock
                        // one-at-a-time locking.
                        let (a, b) = ((t + i) % 8, (t * 3 + i * 5) % 8);
                        let _g = l.lock([a as u64, b as u64]);
                        for s in [a, b] {
                            let prev = owners[s].swap(t + 1, Ordering::SeqCst);
                            assert!(prev == 0 || (a == b && prev == t + 1), "segment {s} shared");
                        }
                        for s in [a, b] {
                            owners[s].store(0, Ordering::SeqCst);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
