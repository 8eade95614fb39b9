//! Size-aware policies for object mode (`--unit object`): each object has a
//! size in bytes and the capacity is in bytes. One policy per file; the
//! registry lists them in `SIZED_POLICIES`.
//!
//! The simulator drives them as libCacheSim's `cache_get` does: [`SizedPolicy::lookup`]
//! first (a hit updates the policy's state; a new size on a hit is ignored, as
//! libCacheSim ignores it); on a miss an object larger than the whole cache
//! is never offered (counted as `too_large`); any other miss goes to
//! [`SizedPolicy::insert`], which evicts until the object fits and caches it
//! (or declines it: admission).

use crate::spec::{ParamInfo, Spec, SpecError};

pub mod adaptsize;
pub mod clock;
pub mod fifo;
pub mod gdsf;
pub mod lru;
pub mod s3fifo;
pub mod sieve;

/// A cache of variable-size objects.
pub trait SizedPolicy: Send {
    /// Whether `key` is cached; a hit updates recency, frequency or priority.
    /// `size` is the request's (statistics: a cached object keeps its size).
    fn lookup(&mut self, key: u64, size: u64) -> bool;
    /// A miss on `key` of `size` bytes (`size <= capacity`, `key` not cached):
    /// evicts until it fits and caches it. Returns false if the policy declined it.
    fn insert(&mut self, key: u64, size: u64) -> bool;
    /// Drops `key` if cached (a delete); whether it was.
    fn remove(&mut self, key: u64) -> bool;
    /// Bytes of the cached objects.
    fn used_bytes(&self) -> u64;
    /// Objects cached.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Objects evicted so far.
    fn evictions(&self) -> u64;
}

/// Builds a size-aware policy for a capacity in bytes from a spec of its name.
pub type SizedBuilder = fn(&Spec, u64) -> Result<Box<dyn SizedPolicy>, SpecError>;

/// A size-aware policy's catalogue entry.
pub struct SizedInfo {
    pub name: &'static str,
    pub about: &'static str,
    pub params: &'static [ParamInfo],
    pub build: SizedBuilder,
}

use crate::list::{Arena, List};

/// The [`SizedPolicy`] methods that a policy keeping its objects in one
/// [`ByteQueue`] (`self.queue`) answers from it.
macro_rules! queue_counts {
    () => {
        fn used_bytes(&self) -> u64 {
            self.queue.used()
        }
        fn len(&self) -> usize {
            self.queue.len()
        }
        fn evictions(&self) -> u64 {
            self.queue.evictions()
        }
    };
}
pub(crate) use queue_counts;

/// Objects in one list with their sizes and bytes in use: the building block
/// of the queue-shaped policies (LRU, FIFO, CLOCK, SIEVE). `T` is what a
/// policy keeps per object beside its size (a reference bit, a counter).
pub struct ByteQueue<T> {
    arena: Arena<(u64, T)>,
    /// Front = newest (or most recent).
    list: List,
    used: u64,
    evictions: u64,
}

impl<T> Default for ByteQueue<T> {
    fn default() -> Self {
        ByteQueue { arena: Arena::with_capacity(1 << 16), list: List::new(), used: 0, evictions: 0 }
    }
}

impl<T> ByteQueue<T> {
    pub fn find(&self, key: u64) -> Option<u32> {
        self.arena.find(key)
    }
    pub fn size(&self, idx: u32) -> u64 {
        self.arena.val(idx).0
    }
    pub fn extra(&mut self, idx: u32) -> &mut T {
        &mut self.arena.val_mut(idx).1
    }
    pub fn push_front(&mut self, key: u64, size: u64, extra: T) -> u32 {
        let idx = self.arena.insert(key, (size, extra));
        self.list.push_front(&mut self.arena, idx);
        self.used += size;
        idx
    }
    pub fn move_to_front(&mut self, idx: u32) {
        self.list.move_to_front(&mut self.arena, idx);
    }
    /// The oldest object.
    pub fn back(&self) -> Option<u32> {
        self.list.back()
    }
    /// The next newer object than `idx`.
    pub fn newer(&self, idx: u32) -> Option<u32> {
        self.list.prev_of(&self.arena, idx)
    }
    /// Drops node `idx`; its key.
    pub fn remove_at(&mut self, idx: u32) -> u64 {
        self.list.unlink(&mut self.arena, idx);
        self.used -= self.arena.val(idx).0;
        self.arena.remove(idx)
    }
    pub fn remove(&mut self, key: u64) -> bool {
        self.arena.find(key).map(|idx| self.remove_at(idx)).is_some()
    }
    /// Evicts until `size` more bytes fit in `capacity`, each victim the node
    /// `victim` picks (the policy's rule; the queue is not empty when asked).
    pub fn make_room(&mut self, size: u64, capacity: u64, mut victim: impl FnMut(&mut Self) -> u32) {
        while self.used + size > capacity {
            let idx = victim(self);
            self.remove_at(idx);
            self.evictions += 1;
        }
    }
    /// Objects evicted by [`make_room`](Self::make_room) so far.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }
    pub fn used(&self) -> u64 {
        self.used
    }
    pub fn len(&self) -> usize {
        self.list.len()
    }
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}
