//! Helpers for policy unit tests.

use super::mode::ModeCache;
use super::MODES;
use super::{Access, BuildCtx, Effects, Io, Policy, Replacement, SpecError, NEVER};
use crate::list::{Arena, List};
use crate::trace::Op;

pub fn read(key: u64, seq: u64) -> Access {
    Access { time: seq, key, op: Op::Read, partial: false, seq, next_use: NEVER, request_pages: 1 }
}

pub fn write(key: u64, seq: u64) -> Access {
    Access { op: Op::Write, ..read(key, seq) }
}

/// Replays reads of `keys` through a replacement rule (offering every miss to
/// `insert`) and returns hit/miss per access. Checks after every step that the
/// capacity holds, that a page is resident exactly when it hit or was admitted,
/// and that no key is reported evicted twice or without having been resident.
pub fn run_keys<R: Replacement>(r: &mut R, keys: &[u64]) -> Vec<bool> {
    let mut evicted = Vec::new();
    keys.iter()
        .enumerate()
        .map(|(i, &k)| {
            let a = read(k, i as u64);
            evicted.clear();
            let hit = r.touch(&a, false, &mut evicted);
            assert!(!evicted.contains(&k), "key {k} evicted during its own hit at access {i}");
            let resident = hit || r.insert(&a, false, &mut evicted);
            assert!(r.len() <= r.capacity(), "capacity exceeded at access {i}");
            assert_eq!(r.contains(k), resident, "key {k}: residency after access {i}");
            for (j, e) in evicted.iter().enumerate() {
                assert!(!r.contains(*e) && !evicted[..j].contains(e), "key {e} evicted but resident, or twice");
            }
            hit
        })
        .collect()
}

/// One access through a policy: whether it hit, and its effects.
pub fn run(p: &mut dyn Policy, a: Access) -> (bool, Vec<Io>) {
    let mut fx = Effects::new();
    p.access(&a, &mut fx);
    (fx.hit, fx.io)
}

/// Reads of `keys` through a policy; returns the misses.
pub fn misses(p: &mut dyn Policy, keys: &[u64]) -> usize {
    let mut fx = Effects::new();
    keys.iter()
        .enumerate()
        .filter(|&(i, &k)| {
            fx.clear();
            p.access(&read(k, i as u64), &mut fx);
            !fx.hit
        })
        .count()
}

/// Asserts that building each of `specs` fails with a bad-value error (not
/// another error, and not success).
pub fn assert_bad_values(specs: &[&str], ctx: &BuildCtx) {
    for spec in specs {
        match super::registry::build(spec, ctx) {
            Err(SpecError::BadValue { .. }) => {}
            Err(e) => panic!("{spec}: wrong error {e}"),
            Ok(_) => panic!("{spec}: accepted"),
        }
    }
}

pub fn keys_of<T>(list: &List, arena: &Arena<T>) -> Vec<u64> {
    list.keys(arena)
}

/// Random reads, writes and trims through every mode; after each access, calls
/// `check` with the rule and the resident set the effects emitted so far imply.
pub fn churn<R: Replacement>(make: impl Fn() -> R, keys: u64, mut check: impl FnMut(&R, &hashbrown::HashSet<u64>)) {
    for (_, mode, _) in MODES {
        let mode = *mode;
        let mut p = ModeCache::new(make(), mode);
        let mut shadow = hashbrown::HashSet::new();
        let mut fx = Effects::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..10_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = (x >> 8) % keys;
            let op = match x % 10 {
                0..=5 => Op::Read,
                6..=8 => Op::Write,
                _ => Op::Trim,
            };
            let a =
                Access { time: i, key, op, partial: x.is_multiple_of(7), seq: i, next_use: NEVER, request_pages: 1 };
            fx.clear();
            p.access(&a, &mut fx);
            for io in &fx.io {
                match *io {
                    Io::CacheWrite { key } => {
                        shadow.insert(key);
                    }
                    Io::Evict { key, .. } | Io::Invalidate { key, .. } => {
                        assert!(shadow.remove(&key), "{mode}: {key} left but was not cached");
                    }
                    _ => {}
                }
            }
            check(p.replacement(), &shadow);
        }
    }
}
