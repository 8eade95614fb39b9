//! SIEVE over bytes (Zhang et al., NSDI'24; libCacheSim's `Sieve`): new
//! objects enter at the head; a hit sets the object's visited bit; a hand
//! walks from the tail towards the head, clearing visited bits, and evicts the
//! first unvisited object, stopping there for the next eviction (back at the
//! tail after the head). Objects never move.

use super::{ByteQueue, SizedInfo, SizedPolicy};
use crate::spec::{Spec, SpecError};

pub struct SizedSieve {
    /// Per object: visited since the hand last passed.
    queue: ByteQueue<bool>,
    /// Where the next eviction looks first (`None`: the tail).
    hand: Option<u32>,
    capacity: u64,
    evictions: u64,
}

impl SizedSieve {
    fn evict_one(&mut self) {
        let mut at = self.hand.or(self.queue.back()).expect("bytes in use, so objects cached");
        while std::mem::replace(self.queue.extra(at), false) {
            at = self.queue.newer(at).or(self.queue.back()).expect("not empty");
        }
        self.hand = self.queue.newer(at);
        self.queue.remove_at(at);
        self.evictions += 1;
    }
}

impl SizedPolicy for SizedSieve {
    fn lookup(&mut self, key: u64, _size: u64) -> bool {
        let Some(idx) = self.queue.find(key) else { return false };
        *self.queue.extra(idx) = true;
        true
    }
    fn insert(&mut self, key: u64, size: u64) -> bool {
        while self.queue.used() + size > self.capacity {
            self.evict_one();
        }
        self.queue.push_front(key, size, false);
        true
    }
    fn remove(&mut self, key: u64) -> bool {
        let Some(idx) = self.queue.find(key) else { return false };
        if self.hand == Some(idx) {
            self.hand = self.queue.newer(idx);
        }
        self.queue.remove_at(idx);
        true
    }
    fn used_bytes(&self) -> u64 {
        self.queue.used()
    }
    fn len(&self) -> usize {
        self.queue.len()
    }
    fn evictions(&self) -> u64 {
        self.evictions
    }
}

fn build(_: &Spec, capacity: u64) -> Result<Box<dyn SizedPolicy>, SpecError> {
    Ok(Box::new(SizedSieve { queue: ByteQueue::default(), hand: None, capacity, evictions: 0 }))
}

pub const INFO: SizedInfo =
    SizedInfo { name: "sieve", about: "SIEVE: a hand sweeping out unvisited objects, over bytes", params: &[], build };
