//! Helpers shared by the flash policies' unit tests: drivers, random access
//! streams, and comparisons against another policy or a plain model.

use crate::list::{Arena, List};
use crate::policy::testing::{churn, read, write};
use crate::policy::{Access, Effects, Io, Policy, Replacement};
use crate::trace::Op;

/// A random stream (xorshift, `seed`) of `n` accesses over `keys` keys: half
/// reads, the rest writes (some partial) and, if `trims`, a tenth trims.
pub fn stream(n: usize, keys: u64, seed: u64, trims: bool) -> Vec<Access> {
    let mut x = seed | 1;
    (0..n as u64)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = (x >> 8) % keys;
            let op = match x % 10 {
                0..=4 => Op::Read,
                9 if trims => Op::Trim,
                _ => Op::Write,
            };
            Access { op, partial: x.is_multiple_of(7) && op == Op::Write, ..read(key, i) }
        })
        .collect()
}

/// Checks a write buffer against a plain model of block-level LRU by writes
/// (reads neither inserted nor reordering): per access, the hit and the pages
/// evicted. `reference_first`: a write makes its block the most recent before
/// the victim is chosen (BPLRU), else after (CLC).
pub fn check_block_lru(p: &mut dyn Policy, capacity: usize, block: u64, accesses: &[Access], reference_first: bool) {
    let mut model: Vec<(u64, Vec<u64>)> = Vec::new(); // front = LRU
    let mut fx = Effects::new();
    for a in accesses {
        fx.clear();
        p.access(a, &mut fx);
        let b = a.key / block;
        let pos = model.iter().position(|(x, _)| *x == b);
        let resident = pos.is_some_and(|i| model[i].1.contains(&a.key));
        assert_eq!(fx.hit, resident, "{a:?}");
        let mut flushed = Vec::new();
        match a.op {
            Op::Read => {}
            Op::Trim => {
                if let Some(i) = pos {
                    model[i].1.retain(|&k| k != a.key);
                    if model[i].1.is_empty() {
                        model.remove(i);
                    }
                }
            }
            Op::Write if resident => {
                let entry = model.remove(pos.unwrap());
                model.push(entry);
            }
            Op::Write => {
                let total: usize = model.iter().map(|(_, v)| v.len()).sum();
                let mut entry = if reference_first { pos.map(|i| model.remove(i)) } else { None };
                if total >= capacity {
                    flushed = if model.is_empty() { entry.take().unwrap().1 } else { model.remove(0).1 };
                }
                let pos = model.iter().position(|(x, _)| *x == b);
                let mut entry = entry.or_else(|| pos.map(|i| model.remove(i))).unwrap_or((b, Vec::new()));
                entry.1.push(a.key);
                model.push(entry);
            }
        }
        flushed.sort_unstable();
        let evicted: Vec<u64> =
            fx.io.iter().filter_map(|io| if let Io::Evict { key, .. } = io { Some(*key) } else { None }).collect();
        assert_eq!(evicted, flushed, "{a:?}");
    }
}

/// Runs `accesses` through both policies and asserts, access by access, the
/// same hit and the same effects. Returns the misses.
pub fn same_accesses(a: &mut dyn Policy, b: &mut dyn Policy, accesses: &[Access], what: &str) -> usize {
    let (mut f1, mut f2) = (Effects::new(), Effects::new());
    let mut misses = 0;
    for x in accesses {
        f1.clear();
        f2.clear();
        a.access(x, &mut f1);
        b.access(x, &mut f2);
        assert_eq!((f1.hit, &f1.io), (f2.hit, &f2.io), "{what}: {x:?}");
        misses += usize::from(!f1.hit);
    }
    misses
}

/// Drains both policies and asserts the same effects.
pub fn same_drain(a: &mut dyn Policy, b: &mut dyn Policy, what: &str) {
    let (mut f1, mut f2) = (Effects::new(), Effects::new());
    a.drain(&mut f1);
    b.drain(&mut f2);
    assert_eq!(f1.io, f2.io, "{what}: drain");
}

/// [`same_accesses`], then [`same_drain`].
pub fn same_effects(a: &mut dyn Policy, b: &mut dyn Policy, accesses: &[Access], what: &str) {
    same_accesses(a, b, accesses, what);
    same_drain(a, b, what);
}

/// Drives a rule as write-back [`ModeCache`](crate::policy::ModeCache) would:
/// every miss is inserted, a page is dirty from its first write until it is
/// evicted or cleaned. Access `seq`s continue across calls.
pub struct WriteBack<R> {
    pub rule: R,
    dirty: hashbrown::HashSet<u64>,
    seq: u64,
}

impl<R: Replacement> WriteBack<R> {
    pub fn new(rule: R) -> Self {
        WriteBack { rule, dirty: hashbrown::HashSet::new(), seq: 0 }
    }

    /// Replays (key, is_write) steps; returns the keys evicted at each step.
    pub fn run(&mut self, steps: &[(u64, bool)]) -> Vec<Vec<u64>> {
        steps
            .iter()
            .map(|&(k, w)| {
                let a = if w { write(k, self.seq) } else { read(k, self.seq) };
                self.seq += 1;
                let d = w || self.dirty.contains(&k);
                let mut ev = Vec::new();
                if !self.rule.touch(&a, d, &mut ev) {
                    assert!(self.rule.insert(&a, d, &mut ev));
                }
                for e in &ev {
                    self.dirty.remove(e);
                }
                if d {
                    self.dirty.insert(k);
                }
                ev
            })
            .collect()
    }

    /// The page was written back (drain).
    pub fn clean(&mut self, key: u64) {
        self.dirty.remove(&key);
        self.rule.cleaned(key);
    }
}

/// A random (xorshift, `seed`) stream of `n` (key, is_write) steps over `keys`
/// keys, `writes_per_10` in ten of them writes.
pub fn rw_steps(n: usize, keys: u64, writes_per_10: u64, seed: u64) -> Vec<(u64, bool)> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 8) % keys, x % 10 < writes_per_10)
        })
        .collect()
}

/// `n` random keys skewed towards small ones: `min(x % a, x % b)` over a
/// xorshift sequence from `seed`.
pub fn skewed_keys(n: usize, seed: u64, a: u64, b: u64) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % a).min(x % b)
        })
        .collect()
}

/// The keys of `lists`, most recent first by `stamp`: the recency order of a
/// rule that spreads one LRU order over several lists.
pub fn by_recency<T>(arena: &Arena<T>, lists: &[List], stamp: impl Fn(&T) -> u64) -> Vec<u64> {
    let mut all: Vec<(u64, u64)> =
        lists.iter().flat_map(|l| l.keys(arena)).map(|k| (stamp(arena.val(arena.find(k).unwrap())), k)).collect();
    all.sort_unstable_by(|a, b| b.cmp(a));
    all.into_iter().map(|(_, k)| k).collect()
}

/// [`churn`] over 30 keys with the checks every rule shares: it holds exactly
/// the pages the effects say are cached, and at most `capacity`; `check` adds
/// the rule's own invariants.
pub fn churn_resident<R: Replacement>(make: impl Fn() -> R, capacity: usize, check: impl Fn(&R)) {
    churn(make, 30, |r, shadow| {
        assert!(r.len() <= capacity && r.len() == shadow.len());
        assert!(shadow.iter().all(|&k| r.contains(k)));
        check(r);
    });
}
