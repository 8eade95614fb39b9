//! S3-FIFO over bytes (Yang et al., SOSP'23), as libCacheSim's `S3FIFO` runs
//! it with sizes: a small FIFO `S` (`small` of the capacity, in bytes), a main
//! FIFO `M` (the rest) and a ghost FIFO `G` of keys dropped from `S`
//! (`ghost` of the capacity, in bytes of the objects it remembers).
//!
//! - a hit adds one to the object's counter;
//! - a miss on a key in `G` (which leaves `G` at the lookup) goes to `M`;
//!   any other miss to `S`, except that before the first eviction it goes to
//!   `M` once `S` has reached its share (libCacheSim's choice, as in page mode);
//! - an object of more bytes than `S`'s share is never cached (libCacheSim's
//!   `can_insert`): it would flush `S` by itself;
//! - to make room: from `M` when `M` is over its share or `S` is empty, else from `S`;
//! - evicting from `S`: the oldest object moves to `M` (counter reset, `M`
//!   may run over its share) if it was hit `threshold` times, else it leaves
//!   and its key and size enter `G` (oldest ghosts dropped to make room);
//!   repeat until one has left;
//! - evicting from `M`: the oldest object with a non-zero counter goes back to
//!   the front with `min(counter, 3) - 1`; the first at 0 leaves.

use super::{SizedInfo, SizedPolicy};
use crate::list::{Arena, List};
use crate::spec::{ParamInfo, Spec, SpecError};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Queue {
    Small,
    Main,
    Ghost,
}

#[derive(Clone, Copy, Debug)]
struct Obj {
    size: u64,
    queue: Queue,
    hits: u32,
}

pub struct SizedS3Fifo {
    arena: Arena<Obj>,
    /// Front = newest in each.
    small: List,
    main: List,
    ghost: List,
    small_used: u64,
    main_used: u64,
    ghost_used: u64,
    small_share: u64,
    main_share: u64,
    ghost_share: u64,
    capacity: u64,
    threshold: u32,
    has_evicted: bool,
    /// The last lookup found its key in `G` (and took it out).
    ghost_hit: bool,
    evictions: u64,
}

impl SizedS3Fifo {
    pub fn new(capacity: u64, small: f64, ghost: f64, threshold: u32) -> Self {
        // (libCacheSim's truncations of the shares, byte for byte)
        let small_share = (capacity as f64 * small) as u64;
        SizedS3Fifo {
            arena: Arena::with_capacity(1 << 16),
            small: List::new(),
            main: List::new(),
            ghost: List::new(),
            small_used: 0,
            main_used: 0,
            ghost_used: 0,
            small_share,
            main_share: capacity - small_share.min(capacity),
            ghost_share: (capacity as f64 * ghost) as u64,
            capacity,
            threshold,
            has_evicted: false,
            ghost_hit: false,
            evictions: 0,
        }
    }

    fn push(&mut self, idx: u32, queue: Queue) {
        let obj = self.arena.val_mut(idx);
        obj.queue = queue;
        obj.hits = 0;
        let size = obj.size;
        match queue {
            Queue::Small => {
                self.small.push_front(&mut self.arena, idx);
                self.small_used += size;
            }
            Queue::Main => {
                self.main.push_front(&mut self.arena, idx);
                self.main_used += size;
            }
            Queue::Ghost => {
                self.ghost.push_front(&mut self.arena, idx);
                self.ghost_used += size;
            }
        }
    }

    fn unlink(&mut self, idx: u32) {
        let Obj { size, queue, .. } = *self.arena.val(idx);
        match queue {
            Queue::Small => {
                self.small.unlink(&mut self.arena, idx);
                self.small_used -= size;
            }
            Queue::Main => {
                self.main.unlink(&mut self.arena, idx);
                self.main_used -= size;
            }
            Queue::Ghost => {
                self.ghost.unlink(&mut self.arena, idx);
                self.ghost_used -= size;
            }
        }
    }

    /// Remembers an object dropped from `S` (libCacheSim inserts it into the ghost FIFO as a cache).
    fn remember(&mut self, idx: u32) {
        let size = self.arena.val(idx).size;
        if size > self.ghost_share {
            self.arena.remove(idx);
            return;
        }
        while self.ghost_used + size > self.ghost_share {
            let old = self.ghost.back().expect("ghost bytes in use");
            self.unlink(old);
            self.arena.remove(old);
        }
        self.push(idx, Queue::Ghost);
    }

    fn evict_small(&mut self) {
        while let Some(idx) = self.small.back() {
            self.unlink(idx);
            if self.arena.val(idx).hits >= self.threshold {
                self.push(idx, Queue::Main);
            } else {
                self.evictions += 1;
                self.remember(idx);
                return;
            }
        }
    }

    fn evict_main(&mut self) {
        while let Some(idx) = self.main.back() {
            let hits = self.arena.val(idx).hits;
            self.unlink(idx);
            if hits == 0 {
                self.arena.remove(idx);
                self.evictions += 1;
                return;
            }
            self.push(idx, Queue::Main);
            self.arena.val_mut(idx).hits = hits.min(3) - 1;
        }
    }

    fn evict(&mut self) {
        self.has_evicted = true;
        if self.main_used > self.main_share || self.small_used == 0 {
            self.evict_main();
        } else {
            self.evict_small();
        }
    }
}

impl SizedPolicy for SizedS3Fifo {
    fn lookup(&mut self, key: u64, _size: u64) -> bool {
        self.ghost_hit = false;
        let Some(idx) = self.arena.find(key) else { return false };
        if self.arena.val(idx).queue == Queue::Ghost {
            self.unlink(idx);
            self.arena.remove(idx);
            self.ghost_hit = true;
            return false;
        }
        let obj = self.arena.val_mut(idx);
        obj.hits = obj.hits.saturating_add(1);
        true
    }
    fn insert(&mut self, key: u64, size: u64) -> bool {
        let ghost_hit = std::mem::take(&mut self.ghost_hit);
        if size > self.small_share {
            return false;
        }
        while self.small_used + self.main_used + size > self.capacity {
            self.evict();
        }
        let queue = if ghost_hit {
            Queue::Main
        } else if size >= self.small_share {
            // (libCacheSim: `S` refuses an object of exactly its share, after the evictions)
            return false;
        } else if !self.has_evicted && self.small_used >= self.small_share {
            Queue::Main
        } else {
            Queue::Small
        };
        let idx = self.arena.insert(key, Obj { size, queue, hits: 0 });
        self.push(idx, queue);
        true
    }
    fn remove(&mut self, key: u64) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        let resident = self.arena.val(idx).queue != Queue::Ghost;
        self.unlink(idx);
        self.arena.remove(idx);
        resident
    }
    fn used_bytes(&self) -> u64 {
        self.small_used + self.main_used
    }
    fn len(&self) -> usize {
        self.small.len() + self.main.len()
    }
    fn evictions(&self) -> u64 {
        self.evictions
    }
}

fn build(spec: &Spec, capacity: u64) -> Result<Box<dyn SizedPolicy>, SpecError> {
    let small = spec.ratio("small")?;
    if !(small > 0.0 && small < 1.0) {
        return Err(spec.invalid("small", "must be above 0 and below 100%"));
    }
    let ghost = spec.ratio("ghost")?;
    let threshold = u32::try_from(spec.uint("threshold")?).map_err(|_| spec.invalid("threshold", "too large"))?;
    Ok(Box::new(SizedS3Fifo::new(capacity, small, ghost, threshold)))
}

pub const INFO: SizedInfo = SizedInfo {
    name: "s3fifo",
    about: "S3-FIFO over bytes: small FIFO filter, main FIFO with reinsertion, ghost FIFO (libCacheSim's S3FIFO)",
    params: &[
        ParamInfo { name: "small", default: "10%", about: "small queue's share of the capacity in bytes" },
        ParamInfo { name: "ghost", default: "90%", about: "ghost queue's share, in bytes of the objects it remembers" },
        ParamInfo { name: "threshold", default: "2", about: "hits in the small queue that earn the move to main" },
    ],
    build,
};
