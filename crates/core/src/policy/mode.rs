//! Write semantics shared by every page policy: dirty pages, write-back on
//! eviction, each [`Mode`] (the modes themselves are part of the interface).

use super::{Access, BuildCtx, Effects, Io, Mode, PageRead, Policy, PolicyStats, ReadTally, Replacement, NEVER};
use crate::trace::Op;
use hashbrown::HashSet;

/// How many reads ahead [`Replacement::prefetch`] is told of a key (4 and 8
/// ran alike on MQ, 16 slower).
const AHEAD: usize = 8;

/// A rule as a page policy: `rule` plus the write semantics of [`ModeCache`]
/// in `ctx.mode`. The usual builder of a classic policy, from its rule.
pub fn with_mode<R: Replacement + 'static>(rule: R, ctx: &BuildCtx) -> Box<dyn Policy> {
    Box::new(ModeCache::new(rule, ctx.mode))
}

/// Defines the two builders of a policy that is a replacement rule, from the
/// file's `make(spec, ctx) -> Result<TheRule, SpecError>`: `build`, the rule
/// under [`ModeCache`] (for [`PolicyInfo::build`](super::PolicyInfo::build)),
/// and `rule`, the bare rule boxed (for [`PolicyInfo::rule`](super::PolicyInfo::rule)).
/// A macro rather than generic functions: the catalogue holds plain fn
/// pointers, which cannot carry the `make` they were made from.
macro_rules! rule_builders {
    ($make:ident) => {
        fn build(
            spec: &$crate::policy::Spec,
            ctx: &$crate::policy::BuildCtx,
            _: &$crate::policy::Rules,
        ) -> Result<Box<dyn $crate::policy::Policy>, $crate::policy::SpecError> {
            Ok($crate::policy::mode::with_mode($make(spec, ctx)?, ctx))
        }

        fn rule(
            spec: &$crate::policy::Spec,
            ctx: &$crate::policy::BuildCtx,
        ) -> Result<Box<dyn $crate::policy::Replacement>, $crate::policy::SpecError> {
            Ok(Box::new($make(spec, ctx)?))
        }
    };
}
pub(crate) use rule_builders;

/// A [`Replacement`] rule plus write semantics: the [`Policy`] every page policy becomes.
///
/// Pages the rule evicts, whether to admit a miss, during a hit or as a side
/// effect of a trim, leave with [`Io::Evict`] in that same access, followed by
/// an [`Io::WriteBack`] if dirty. A miss the rule declines to cache is served
/// from backing: a read by its `Fetch` alone, a write by an [`Io::WriteThrough`]
/// in every mode (no `CacheWrite`, no `ReadForWrite`, nothing left dirty).
pub struct ModeCache<R: Replacement> {
    repl: R,
    mode: Mode,
    dirty: HashSet<u64>,
    evicted: Vec<u64>,
}

impl<R: Replacement> ModeCache<R> {
    pub fn new(repl: R, mode: Mode) -> Self {
        ModeCache { repl, mode, dirty: HashSet::new(), evicted: Vec::with_capacity(8) }
    }

    pub fn replacement(&self) -> &R {
        &self.repl
    }

    /// Reports the pages the rule just evicted (in `self.evicted`): each leaves
    /// with `Evict`, and a dirty one is written back at once and is no longer dirty.
    #[inline]
    fn evictions(&mut self, fx: &mut Effects) {
        // Most calls (every hit) evict nothing, and most misses one clean page:
        // keep those paths inlined.
        match self.evicted.len() {
            0 => {}
            1 if self.dirty.is_empty() => {
                fx.push(Io::Evict { key: self.evicted[0], dirty: false });
                self.evicted.clear();
            }
            _ => self.report_evictions(fx),
        }
    }

    #[inline(never)]
    fn report_evictions(&mut self, fx: &mut Effects) {
        for &key in &self.evicted {
            let was_dirty = !self.dirty.is_empty() && self.dirty.remove(&key);
            fx.push(Io::Evict { key, dirty: was_dirty });
            if was_dirty {
                fx.push(Io::WriteBack { key, pages: 1 });
            }
        }
        self.evicted.clear();
    }

    /// Looks the page up in the rule (which may evict others during a hit).
    #[inline]
    fn touch(&mut self, a: &Access, dirty: bool, fx: &mut Effects) -> bool {
        let hit = self.repl.touch(a, dirty, &mut self.evicted);
        self.evictions(fx);
        hit
    }

    /// Offers a page that missed to the rule, writing back what it evicts.
    /// Returns whether the rule admitted the page; if it declined, nothing is
    /// cached: no `CacheWrite`, no `ReadForWrite` (the old contents are not
    /// needed), and the page is not dirty.
    fn insert(&mut self, a: &Access, dirty: bool, fx: &mut Effects) -> bool {
        let at = fx.io.len();
        let admitted = self.repl.insert(a, dirty, &mut self.evicted);
        if admitted && a.partial {
            // Before the evictions, as the old contents are read first.
            fx.io.insert(at, Io::ReadForWrite { key: a.key });
        }
        self.evictions(fx);
        if admitted {
            fx.push(Io::CacheWrite { key: a.key });
            if dirty {
                self.dirty.insert(a.key);
            }
        }
        admitted
    }

    /// Drops a page the rule holds (trim, invalidation); returns whether it was resident.
    fn remove(&mut self, key: u64, fx: &mut Effects) -> bool {
        let was = self.repl.remove(key, &mut self.evicted);
        self.evictions(fx);
        was
    }

    fn read(&mut self, a: &Access, fx: &mut Effects) {
        // (skips hashing on read-only traces, where nothing is ever dirty)
        let dirty = !self.dirty.is_empty() && self.dirty.contains(&a.key);
        fx.hit = self.touch(a, dirty, fx);
        if !fx.hit {
            fx.push(Io::Fetch { key: a.key, pages: 1 });
            if self.mode != Mode::WriteOnly {
                self.insert(a, false, fx);
            }
        }
    }

    fn write(&mut self, a: &Access, fx: &mut Effects) {
        match self.mode {
            Mode::WriteBack | Mode::WriteOnly => {
                fx.hit = self.touch(a, true, fx);
                if fx.hit {
                    fx.push(Io::CacheWrite { key: a.key });
                    self.dirty.insert(a.key);
                } else if !self.insert(a, true, fx) {
                    // Declined: the data has nowhere to stay but the backing device.
                    fx.push(Io::WriteThrough { key: a.key });
                }
            }
            Mode::WriteThrough => {
                fx.hit = self.touch(a, false, fx);
                if fx.hit {
                    fx.push(Io::CacheWrite { key: a.key });
                } else {
                    self.insert(a, false, fx);
                }
                fx.push(Io::WriteThrough { key: a.key });
            }
            Mode::WriteAround => {
                fx.hit = self.touch(a, false, fx);
                if fx.hit {
                    fx.push(Io::CacheWrite { key: a.key });
                }
                fx.push(Io::WriteThrough { key: a.key });
            }
            Mode::ReadOnly => {
                // Not a hit: the cached copy is dropped and the write goes to
                // backing, so the cache served nothing (paper 000's baseline).
                if self.repl.contains(a.key) {
                    self.remove(a.key, fx);
                    fx.push(Io::Invalidate { key: a.key, dirty: false });
                }
                fx.push(Io::WriteThrough { key: a.key });
            }
        }
    }

    fn trim(&mut self, a: &Access, fx: &mut Effects) {
        fx.hit = self.remove(a.key, fx);
        if fx.hit {
            let dirty = self.dirty.remove(&a.key);
            fx.push(Io::Invalidate { key: a.key, dirty });
        }
    }
}

impl<R: Replacement> Policy for ModeCache<R> {
    #[inline]
    fn access(&mut self, a: &Access, fx: &mut Effects) {
        match a.op {
            Op::Read => self.read(a, fx),
            Op::Write => self.write(a, fx),
            Op::Trim => self.trim(a, fx),
        }
    }

    /// Forwards the notice to the rule when the access to come will reach
    /// [`Replacement::touch`]: a trim never touches, nor does a write in
    /// read-only mode (it invalidates), so their notices would never be matched
    /// by an access.
    fn queued(&mut self, a: &Access) {
        let touches = match a.op {
            Op::Read => true,
            Op::Write => self.mode != Mode::ReadOnly,
            Op::Trim => false,
        };
        if touches {
            self.repl.queued(a);
        }
    }

    /// [`read`](Self::read) without the effects list: while nothing is dirty, a
    /// read's only effects are its fetch, its fill and clean evictions.
    fn read_pages(&mut self, reads: &[PageRead], seq: u64, tally: &mut ReadTally) -> bool {
        if !self.dirty.is_empty() {
            return false;
        }
        let fills = self.mode != Mode::WriteOnly;
        for (i, r) in reads.iter().enumerate() {
            if let Some(ahead) = reads.get(i + AHEAD) {
                self.repl.prefetch(ahead.key);
            }
            let a = Access {
                time: r.time,
                key: r.key,
                op: Op::Read,
                partial: false,
                seq: seq + i as u64,
                next_use: NEVER,
                request_pages: 1,
            };
            if self.repl.touch(&a, false, &mut self.evicted) {
                tally.hits += 1;
                tally.hit_bytes += r.bytes;
            } else if fills && self.repl.insert(&a, false, &mut self.evicted) {
                tally.fills += 1;
            }
            tally.evictions += self.evicted.len() as u64;
            self.evicted.clear();
        }
        true
    }

    fn drain(&mut self, fx: &mut Effects) {
        // Sorted, so write-back order (and anything charged by address) is deterministic.
        let mut keys: Vec<u64> = self.dirty.drain().collect();
        keys.sort_unstable();
        for key in keys {
            self.repl.cleaned(key);
            fx.push(Io::WriteBack { key, pages: 1 });
        }
    }

    fn stats(&self) -> PolicyStats {
        PolicyStats {
            capacity: self.repl.capacity() as u64,
            resident: self.repl.len() as u64,
            dirty: self.dirty.len() as u64,
            ghosts: self.repl.ghosts() as u64,
        }
    }

    fn needs_future(&self) -> bool {
        self.repl.needs_future()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{read, run, write};

    /// A scripted rule: unbounded, but a hit on `on_hit.0` evicts `on_hit.1`, and
    /// an insert of a key in `declines` evicts `decline_evicts` (if resident)
    /// and declines.
    #[derive(Default)]
    struct Stub {
        resident: Vec<u64>,
        on_hit: Option<(u64, u64)>,
        declines: Vec<u64>,
        decline_evicts: Option<u64>,
    }

    impl Stub {
        fn drop_key(&mut self, key: u64) -> bool {
            let before = self.resident.len();
            self.resident.retain(|&k| k != key);
            self.resident.len() < before
        }
    }

    impl Replacement for Stub {
        fn touch(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
            if !self.resident.contains(&a.key) {
                return false;
            }
            if let Some((trigger, victim)) = self.on_hit {
                if trigger == a.key && self.drop_key(victim) {
                    evicted.push(victim);
                }
            }
            true
        }
        fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
            if self.declines.contains(&a.key) {
                if let Some(victim) = self.decline_evicts {
                    if self.drop_key(victim) {
                        evicted.push(victim);
                    }
                }
                return false;
            }
            self.resident.push(a.key);
            true
        }
        fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
            self.drop_key(key)
        }
        fn contains(&self, key: u64) -> bool {
            self.resident.contains(&key)
        }
        fn len(&self) -> usize {
            self.resident.len()
        }
        fn capacity(&self) -> usize {
            100
        }
    }

    fn drained(p: &mut ModeCache<Stub>) -> Vec<Io> {
        let mut fx = Effects::new();
        p.drain(&mut fx);
        fx.io
    }

    #[test]
    fn evictions_during_a_hit_are_written_back_at_once() {
        let stub = Stub { on_hit: Some((2, 1)), ..Stub::default() };
        let mut p = ModeCache::new(stub, Mode::WriteBack);
        assert_eq!(run(&mut p, write(1, 0)), (false, vec![Io::CacheWrite { key: 1 }]));
        run(&mut p, read(2, 1));
        assert_eq!(p.stats().dirty, 1);
        // The hit on 2 pushes the dirty page 1 out: evicted and written back in
        // the same access, and no longer dirty.
        let (hit, io) = run(&mut p, read(2, 2));
        assert!(hit);
        assert_eq!(io, vec![Io::Evict { key: 1, dirty: true }, Io::WriteBack { key: 1, pages: 1 }]);
        assert_eq!((p.stats().resident, p.stats().dirty), (1, 0));
        // So a read of 1 now fetches what was written back.
        assert_eq!(run(&mut p, read(1, 3)), (false, vec![Io::Fetch { key: 1, pages: 1 }, Io::CacheWrite { key: 1 }]));
        assert!(drained(&mut p).is_empty());
    }

    #[test]
    fn a_declined_write_goes_to_backing() {
        for mode in [Mode::WriteBack, Mode::WriteOnly] {
            let stub = Stub { declines: vec![5], ..Stub::default() };
            let mut p = ModeCache::new(stub, mode);
            // A partial write that is declined needs no read-for-write.
            let a = Access { partial: true, ..write(5, 0) };
            assert_eq!(run(&mut p, a), (false, vec![Io::WriteThrough { key: 5 }]), "{mode}");
            assert_eq!((p.stats().resident, p.stats().dirty), (0, 0), "{mode}");
            assert!(drained(&mut p).is_empty(), "{mode}");
            // A declined read is served from backing and not cached.
            assert_eq!(run(&mut p, read(5, 1)), (false, vec![Io::Fetch { key: 5, pages: 1 }]), "{mode}");
        }
        // Write-through: the write goes to backing anyway, once.
        let mut p = ModeCache::new(Stub { declines: vec![5], ..Stub::default() }, Mode::WriteThrough);
        assert_eq!(run(&mut p, write(5, 0)), (false, vec![Io::WriteThrough { key: 5 }]));
    }

    #[test]
    fn a_declined_insert_still_writes_back_what_it_evicted() {
        // (libCacheSim's 2Q without a page for Am makes room, then declines.)
        let stub = Stub { declines: vec![5], decline_evicts: Some(1), ..Stub::default() };
        let mut p = ModeCache::new(stub, Mode::WriteBack);
        run(&mut p, write(1, 0));
        let (hit, io) = run(&mut p, Access { partial: true, ..write(5, 1) });
        assert!(!hit);
        assert_eq!(
            io,
            vec![Io::Evict { key: 1, dirty: true }, Io::WriteBack { key: 1, pages: 1 }, Io::WriteThrough { key: 5 }]
        );
        assert_eq!((p.stats().resident, p.stats().dirty), (0, 0));
        assert!(drained(&mut p).is_empty());
    }

    #[test]
    fn an_admitted_partial_write_reads_first() {
        let mut p = ModeCache::new(Stub::default(), Mode::WriteBack);
        let (_, io) = run(&mut p, Access { partial: true, ..write(3, 0) });
        assert_eq!(io, vec![Io::ReadForWrite { key: 3 }, Io::CacheWrite { key: 3 }]);
        assert_eq!(drained(&mut p), vec![Io::WriteBack { key: 3, pages: 1 }]);
    }
}
