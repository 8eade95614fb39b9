//! The queue between the request path and a watcher's thread (the
//! recording, the what-if): bounded, never blocking a request, and never
//! waking the watcher. A request appends under a mutex held for one push
//! (or drops, and counts, when the queue is full); the watcher swaps the
//! whole buffer out every [`POLL`]. A channel would do one futex wake-up per
//! request whenever the watcher had caught up and was asleep — a system call
//! on the request path at exactly the times the server is not busy.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use ssdcache_block::sync::lock;

/// How often the watcher looks.
pub const POLL: Duration = Duration::from_millis(5);

pub struct TapQueue<T> {
    buf: Mutex<Vec<T>>,
    cap: usize,
    dropped: AtomicU64,
    closed: AtomicBool,
}

impl<T> TapQueue<T> {
    /// A queue of at most `cap` items.
    pub fn new(cap: usize) -> TapQueue<T> {
        TapQueue {
            buf: Mutex::new(Vec::with_capacity(cap)),
            cap,
            dropped: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// Appends `t`, or drops it (counted) when the queue is full or closed.
    pub fn push(&self, t: T) {
        if !self.closed.load(Relaxed) {
            let mut b = lock(&self.buf);
            if b.len() < self.cap {
                b.push(t);
                return;
            }
        }
        self.dropped.fetch_add(1, Relaxed);
    }

    /// Moves what is queued into `into` (empty: its allocation becomes the queue's).
    pub fn take(&self, into: &mut Vec<T>) {
        debug_assert!(into.is_empty());
        std::mem::swap(&mut *lock(&self.buf), into);
    }

    /// No more pushes are kept; the watcher drains and ends.
    pub fn close(&self) {
        self.closed.store(true, Relaxed);
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Relaxed)
    }

    pub fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }
}

/// The watcher's loop: `look` gets what was queued (in order; it takes the
/// items out) and whether the queue is closed — then that was everything, and
/// the last call; sleeps [`POLL`] after a look that found nothing.
pub fn drain<T>(q: &TapQueue<T>, mut look: impl FnMut(&mut Vec<T>, bool)) {
    let mut batch = Vec::new();
    loop {
        let closed = q.is_closed();
        q.take(&mut batch);
        let idle = batch.is_empty();
        look(&mut batch, closed);
        batch.clear();
        if closed {
            return;
        }
        if idle {
            std::thread::sleep(POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_arrive_in_order_and_a_full_queue_drops_and_counts() {
        let q = std::sync::Arc::new(TapQueue::new(100));
        for i in 0..150 {
            q.push(i);
        }
        assert_eq!(q.dropped(), 50);
        q.close();
        q.push(999);
        let (mut got, mut ticks) = (Vec::new(), 0);
        drain(&q, |b, _| {
            got.append(b);
            ticks += 1
        });
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        assert_eq!((q.dropped(), ticks), (51, 1));
    }
}
