//! CLOCK over bytes with a one-bit reference (libCacheSim's `Clock`, one-bit
//! counter): a hit sets the bit; to make room the oldest object with its bit
//! set goes back to the front with it cleared, the first without leaves.

use super::{queue_counts, ByteQueue, SizedInfo, SizedPolicy};
use crate::spec::{Spec, SpecError};

pub struct SizedClock {
    /// Per object: referenced since it last came round.
    queue: ByteQueue<bool>,
    capacity: u64,
}

impl SizedPolicy for SizedClock {
    fn lookup(&mut self, key: u64, _size: u64) -> bool {
        let Some(idx) = self.queue.find(key) else { return false };
        *self.queue.extra(idx) = true;
        true
    }
    fn insert(&mut self, key: u64, size: u64) -> bool {
        self.queue.make_room(size, self.capacity, |q| loop {
            let oldest = q.back().expect("bytes in use, so objects cached");
            if !std::mem::replace(q.extra(oldest), false) {
                return oldest;
            }
            q.move_to_front(oldest);
        });
        self.queue.push_front(key, size, false);
        true
    }
    fn remove(&mut self, key: u64) -> bool {
        self.queue.remove(key)
    }
    queue_counts!();
}

fn build(_: &Spec, capacity: u64) -> Result<Box<dyn SizedPolicy>, SpecError> {
    Ok(Box::new(SizedClock { queue: ByteQueue::default(), capacity }))
}

pub const INFO: SizedInfo =
    SizedInfo { name: "clock", about: "CLOCK (second chance, one reference bit), over bytes", params: &[], build };
