//! GDSF, Greedy-Dual-Size-Frequency (Cherkasova, 1998): each object has the
//! priority `L + frequency · 10^6 / size`, where `L` is the priority of the
//! last object evicted (the inflation that ages what is no longer hit); the
//! lowest priority leaves first, ties by the oldest last access.
//!
//! As libCacheSim's `GDSF` runs it: the frequency is 1 when an object enters
//! and counts its hits since; a hit recomputes the priority with the current
//! `L`; a miss caches the object first and then evicts while the cache is
//! over its capacity, so an object whose priority is the lowest of all leaves
//! at once (a miss, and an eviction). Priorities are `f64`, computed with
//! libCacheSim's expression so that ties fall alike.

use super::{SizedInfo, SizedPolicy};
use crate::spec::{Spec, SpecError};
use std::collections::BTreeSet;

/// An object's place in the eviction order: priority (a non-negative `f64`,
/// whose bits order as the number does), then the request count of its last
/// access, then the key (never reached: counts are distinct).
type Rank = (u64, u64, u64);

pub struct Gdsf {
    /// Key → (size, hits + 1, rank).
    objects: hashbrown::HashMap<u64, (u64, u64, Rank)>,
    order: BTreeSet<Rank>,
    /// `L`: the priority of the last eviction.
    inflation: f64,
    /// Requests seen (libCacheSim's `n_req`, which ranks ties).
    requests: u64,
    used: u64,
    capacity: u64,
    evictions: u64,
}

impl Gdsf {
    pub fn new(capacity: u64) -> Self {
        Gdsf {
            objects: hashbrown::HashMap::new(),
            order: BTreeSet::new(),
            inflation: 0.0,
            requests: 0,
            used: 0,
            capacity,
            evictions: 0,
        }
    }

    fn rank(&self, key: u64, size: u64, frequency: u64) -> Rank {
        let priority = self.inflation + frequency as f64 * 1.0e6 / size as f64;
        (priority.to_bits(), self.requests, key)
    }
}

impl SizedPolicy for Gdsf {
    fn lookup(&mut self, key: u64, _size: u64) -> bool {
        self.requests += 1;
        let Some(&(size, frequency, old)) = self.objects.get(&key) else { return false };
        let rank = self.rank(key, size, frequency + 1);
        self.order.remove(&old);
        self.order.insert(rank);
        self.objects.insert(key, (size, frequency + 1, rank));
        true
    }
    fn insert(&mut self, key: u64, size: u64) -> bool {
        let rank = self.rank(key, size, 1);
        self.order.insert(rank);
        self.objects.insert(key, (size, 1, rank));
        self.used += size;
        while self.used > self.capacity {
            let lowest = self.order.pop_first().expect("bytes in use, so objects cached");
            self.inflation = f64::from_bits(lowest.0);
            let (size, _, _) = self.objects.remove(&lowest.2).expect("ranked objects are cached");
            self.used -= size;
            self.evictions += 1;
        }
        true
    }
    fn remove(&mut self, key: u64) -> bool {
        let Some((size, _, rank)) = self.objects.remove(&key) else { return false };
        self.order.remove(&rank);
        self.used -= size;
        true
    }
    fn used_bytes(&self) -> u64 {
        self.used
    }
    fn len(&self) -> usize {
        self.objects.len()
    }
    fn evictions(&self) -> u64 {
        self.evictions
    }
}

fn build(_: &Spec, capacity: u64) -> Result<Box<dyn SizedPolicy>, SpecError> {
    Ok(Box::new(Gdsf::new(capacity)))
}

pub const INFO: SizedInfo = SizedInfo {
    name: "gdsf",
    about: "Greedy-Dual-Size-Frequency: evict the lowest L + frequency/size (Cherkasova)",
    params: &[],
    build,
};
