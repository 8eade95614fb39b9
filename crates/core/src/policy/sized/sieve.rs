//! SIEVE over bytes (Zhang et al., NSDI'24; libCacheSim's `Sieve`): new
//! objects enter at the head; a hit sets the object's visited bit; a hand
//! walks from the tail towards the head, clearing visited bits, and evicts the
//! first unvisited object, stopping there for the next eviction (back at the
//! tail after the head). Objects never move.

use super::{queue_counts, ByteQueue, SizedInfo, SizedPolicy};
use crate::spec::{Spec, SpecError};

pub struct SizedSieve {
    /// Per object: visited since the hand last passed.
    queue: ByteQueue<bool>,
    /// Where the next eviction looks first (`None`: the tail).
    hand: Option<u32>,
    capacity: u64,
}

impl SizedPolicy for SizedSieve {
    fn lookup(&mut self, key: u64, _size: u64) -> bool {
        let Some(idx) = self.queue.find(key) else { return false };
        *self.queue.extra(idx) = true;
        true
    }
    fn insert(&mut self, key: u64, size: u64) -> bool {
        let hand = &mut self.hand;
        self.queue.make_room(size, self.capacity, |q| {
            let mut at = hand.or(q.back()).expect("bytes in use, so objects cached");
            while std::mem::replace(q.extra(at), false) {
                at = q.newer(at).or(q.back()).expect("not empty");
            }
            *hand = q.newer(at);
            at
        });
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
    queue_counts!();
}

fn build(_: &Spec, capacity: u64) -> Result<Box<dyn SizedPolicy>, SpecError> {
    Ok(Box::new(SizedSieve { queue: ByteQueue::default(), hand: None, capacity }))
}

pub const INFO: SizedInfo =
    SizedInfo { name: "sieve", about: "SIEVE: a hand sweeping out unvisited objects, over bytes", params: &[], build };
