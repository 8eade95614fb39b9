//! Helpers for policy unit tests.

use super::list::{Arena, List};
use super::{Access, Replacement, NEVER};
use crate::trace::Op;

pub fn read(key: u64, seq: u64) -> Access {
    Access { time: seq, key, op: Op::Read, partial: false, seq, next_use: NEVER }
}

/// Replays reads of `keys` through a replacement rule (inserting on every miss)
/// and returns hit/miss per access. Checks the capacity after every step.
pub fn run_keys<R: Replacement>(r: &mut R, keys: &[u64]) -> Vec<bool> {
    let mut evicted = Vec::new();
    keys.iter()
        .enumerate()
        .map(|(i, &k)| {
            let a = read(k, i as u64);
            let hit = r.touch(&a, false);
            if !hit {
                r.insert(&a, false, &mut evicted);
            }
            assert!(r.len() <= r.capacity(), "capacity exceeded at access {i}");
            assert!(r.contains(k), "key {k} not resident right after access {i}");
            hit
        })
        .collect()
}

pub fn keys_of<T>(list: &List, arena: &Arena<T>) -> Vec<u64> {
    list.keys(arena)
}
