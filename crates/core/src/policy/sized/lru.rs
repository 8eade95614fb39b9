//! LRU over bytes: a hit moves the object to the front; a miss evicts from the
//! back until the object fits (libCacheSim's `LRU` with sizes). Without the
//! move on a hit it is FIFO (`fifo.rs` builds it so).

use super::{queue_counts, ByteQueue, SizedInfo, SizedPolicy};
use crate::spec::{Spec, SpecError};

pub struct SizedLru {
    queue: ByteQueue<()>,
    /// Move a hit object to the front (LRU); false: FIFO.
    promote_hits: bool,
    capacity: u64,
}

impl SizedLru {
    pub fn new(capacity: u64, promote_hits: bool) -> Self {
        SizedLru { queue: ByteQueue::default(), promote_hits, capacity }
    }
}

impl SizedPolicy for SizedLru {
    fn lookup(&mut self, key: u64, _size: u64) -> bool {
        let Some(idx) = self.queue.find(key) else { return false };
        if self.promote_hits {
            self.queue.move_to_front(idx);
        }
        true
    }
    fn insert(&mut self, key: u64, size: u64) -> bool {
        self.queue.make_room(size, self.capacity, |q| q.back().expect("bytes in use, so objects cached"));
        self.queue.push_front(key, size, ());
        true
    }
    fn remove(&mut self, key: u64) -> bool {
        self.queue.remove(key)
    }
    queue_counts!();
}

fn build(_: &Spec, capacity: u64) -> Result<Box<dyn SizedPolicy>, SpecError> {
    Ok(Box::new(SizedLru::new(capacity, true)))
}

pub const INFO: SizedInfo = SizedInfo { name: "lru", about: "least recently used, over bytes", params: &[], build };
