//! QLRU, the NCQ-aware LRU write buffer of paper 002 (S. Kim and T. Kim, "A
//! Write Buffer Management Scheme Exploiting the NCQ of SSDs", KIISE 2014;
//! also Electronics Letters 2013, "QLRU: NCQ-aware write buffer management").
//!
//! Commands waiting in an SSD's native command queue will certainly be served
//! soon, so the pages they reference are known future references. QLRU is LRU
//! plus a *virtual MRU* (§3, Fig. 2): when a command enters the NCQ and a page
//! it references is in the buffer, that page moves to the virtual MRU position,
//! so that it is not evicted before the command is dispatched (Fig. 4: C2
//! arrives, its page 5 moves to the virtual MRU; C1 is dispatched, misses and
//! evicts the LRU page, which is no longer 5; C2 is dispatched and hits, where
//! LRU would have evicted 5 and missed).
//!
//! The paper's setting is a write buffer that absorbs writes only and does not
//! insert read misses: `mode=write-only`. The notices come from the queueing
//! replay (`sim --queue-depth`, [`crate::sim::queue`]); without them QLRU is
//! exactly LRU.
//!
//! # Where the virtual MRU sits (paper silent)
//!
//! The figures that draw the pointer (Fig. 2, 3) are not in our copy of the
//! paper; the text says the virtual MRU is a pointer into the LRU list, that a
//! page moved there is kept "as long as possible" until its command is
//! dispatched, and that it costs no extra space. We read it as: the virtual MRU
//! is the head of the list, *above* the ordinary MRU position. The list is
//! `[pages moved to the virtual MRU, newest first] [ordinary pages, MRU … LRU]`
//! and the ordinary MRU pointer marks the boundary, so new pages and ordinary
//! hits enter below the moved ones and the victim is always the list's tail:
//! a moved page is evicted only when every resident page has been moved (the
//! oldest moved first). Two [`List`]s here, `protected` and `normal`, are
//! exactly that one list cut at the ordinary MRU pointer.
//!
//! # When a page leaves it: `vmru=pointer` (default) or `vmru=pin`
//!
//! The paper (§3): "가상 MRU(virtual MRU)라는 포인터를 구현하였다 … 이 기법은
//! 단순한 포인터 이동으로 구현되기 때문에, 발생하는 오버헤드가 매우 적고,
//! 추가적인 공간을 요구하지 않는다" — the virtual MRU is *a pointer*, and
//! "since it is implemented by simply moving a pointer, its overhead is very
//! small and it needs no additional space". So the default, `vmru=pointer`,
//! keeps nothing per key: a page leaves the virtual MRU segment at its next
//! reference, which puts it at the ordinary MRU as any LRU hit. If two queued
//! commands reference the page, the first one served ends its protection; the
//! second is protected again only if its notice came after that.
//!
//! `vmru=pin` is the stronger reading this file first implemented: it counts,
//! per key, the notices not yet matched by an access (`pending`; each page
//! access of a served command matches one notice of it, the caller forwards
//! only notices of accesses that will reach `touch`), and a page stays in the
//! segment until the *last* queued command that references it has been served
//! (served earlier, it moves to the segment's head). This costs a map bounded
//! by the pages of the commands in the queue — the extra space the paper says
//! QLRU does not need. The two differ only when one page is referenced by two
//! or more commands in the queue at once (sequential rewrites, small files).
//!
//! As in the paper, only a page that is *in the buffer when the notice comes*
//! moves to the virtual MRU: a page that a queued command references but that
//! enters the buffer later (written by an earlier command) is inserted at the
//! ordinary MRU, and is protected only by notices that arrive after it.
//!
//! With an idle device (every command served as soon as it arrives) QLRU still
//! sees each command's own pages before serving it, so a multi-page command's
//! later pages cannot be evicted by its earlier misses: then QLRU can differ
//! from LRU, within a command. For single-page commands it equals LRU.

use crate::list::{Arena, List};
use crate::policy::mode::ModeCache;
use crate::policy::{Access, BuildCtx, ParamInfo, Policy, PolicyInfo, Replacement, Rules, Spec, SpecError};
use hashbrown::HashMap;

/// When a page leaves the virtual MRU segment (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vmru {
    /// At its next reference (the paper's pointer: no per-key state).
    Pointer,
    /// When the last queued command referencing it is served (a per-key count).
    Pin,
}

pub struct Qlru {
    /// Node value: whether the page is in the virtual MRU segment.
    arena: Arena<bool>,
    /// The virtual MRU segment: front = the virtual MRU.
    protected: List,
    /// The ordinary LRU list: front = MRU, back = LRU.
    normal: List,
    /// Per key, queue notices not yet matched by an access (absent = 0).
    pending: HashMap<u64, u32>,
    vmru: Vmru,
    capacity: usize,
}

impl Qlru {
    pub fn new(capacity: usize, vmru: Vmru) -> Self {
        Qlru {
            arena: Arena::with_capacity(capacity),
            protected: List::new(),
            normal: List::new(),
            pending: HashMap::new(),
            vmru,
            capacity: capacity.max(1),
        }
    }

    /// Matches one notice of `key` with the access being served; returns how
    /// many queued commands still reference it.
    #[inline]
    fn served(&mut self, key: u64) -> u32 {
        if self.pending.is_empty() {
            return 0;
        }
        match self.pending.get_mut(&key) {
            Some(n) if *n > 1 => {
                *n -= 1;
                *n
            }
            Some(_) => {
                self.pending.remove(&key);
                0
            }
            None => 0,
        }
    }

    /// Pages in the virtual MRU segment (for tests and reports).
    pub fn protected_len(&self) -> usize {
        self.protected.len()
    }
}

impl Replacement for Qlru {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        let still_queued = self.served(a.key);
        let Some(idx) = self.arena.find(a.key) else {
            return false;
        };
        if *self.arena.val(idx) {
            if still_queued > 0 {
                self.protected.move_to_front(&mut self.arena, idx);
            } else {
                self.protected.unlink(&mut self.arena, idx);
                self.normal.push_front(&mut self.arena, idx);
                *self.arena.val_mut(idx) = false;
            }
        } else {
            self.normal.move_to_front(&mut self.arena, idx);
        }
        true
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        if self.len() >= self.capacity {
            // The tail of the one list: the LRU page, or, if every page is
            // protected, the one protected longest ago.
            let victim = match self.normal.pop_back(&mut self.arena) {
                Some(v) => Some(v),
                None => self.protected.pop_back(&mut self.arena),
            };
            if let Some(v) = victim {
                evicted.push(self.arena.remove(v));
            }
        }
        let idx = self.arena.insert(a.key, false);
        self.normal.push_front(&mut self.arena, idx);
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        match self.arena.find(key) {
            Some(idx) => {
                if *self.arena.val(idx) {
                    self.protected.unlink(&mut self.arena, idx);
                } else {
                    self.normal.unlink(&mut self.arena, idx);
                }
                self.arena.remove(idx);
                true
            }
            None => false,
        }
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some()
    }

    fn len(&self) -> usize {
        self.normal.len() + self.protected.len()
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    /// A command referencing `a.key` entered the NCQ: count it (`pin` only),
    /// and if the page is in the buffer, move it to the virtual MRU.
    fn queued(&mut self, a: &Access) {
        if self.vmru == Vmru::Pin {
            *self.pending.entry(a.key).or_insert(0) += 1;
        }
        if let Some(idx) = self.arena.find(a.key) {
            if *self.arena.val(idx) {
                self.protected.move_to_front(&mut self.arena, idx);
            } else {
                self.normal.unlink(&mut self.arena, idx);
                self.protected.push_front(&mut self.arena, idx);
                *self.arena.val_mut(idx) = true;
            }
        }
    }
}

fn build(spec: &Spec, ctx: &BuildCtx, _: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    let vmru = match spec.choice("vmru", &["pointer", "pin"])?.as_str() {
        "pin" => Vmru::Pin,
        _ => Vmru::Pointer,
    };
    Ok(Box::new(ModeCache::new(Qlru::new(ctx.capacity, vmru), ctx.mode)))
}

pub const INFO: PolicyInfo = PolicyInfo {
    name: "qlru",
    about: "NCQ-aware LRU (paper 002): pages of queued commands moved to a virtual MRU above the ordinary MRU; \
            LRU without --queue-depth",
    params: &[ParamInfo {
        name: "vmru",
        default: "pointer",
        about: "when a page leaves the virtual MRU: pointer = at its next reference (the paper's pointer, no \
                extra space); pin = when the last queued command referencing it is served (per-key counts)",
    }],
    build,
    rule: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::classic::lru::Lru;
    use crate::policy::testing::{churn, keys_of, run_keys, write};
    use crate::policy::MODES;
    use crate::policy::{Effects, Io, Mode};
    use crate::trace::Op;

    /// Writes `keys` in order through a rule, offering each miss to `insert`;
    /// returns hit per access and every evicted key.
    fn writes<R: Replacement>(r: &mut R, keys: &[u64], seq0: u64) -> (Vec<bool>, Vec<u64>) {
        let mut evicted = Vec::new();
        let hits = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| {
                let a = write(k, seq0 + i as u64);
                r.touch(&a, true, &mut evicted) || {
                    r.insert(&a, true, &mut evicted);
                    false
                }
            })
            .collect();
        (hits, evicted)
    }

    /// Paper 002 Fig. 4, step by step, LRU and QLRU side by side: the same
    /// under both readings of the virtual MRU.
    #[test]
    fn paper_002_fig_4() {
        for vmru in [Vmru::Pointer, Vmru::Pin] {
            fig_4(vmru);
        }
    }

    fn fig_4(vmru: Vmru) {
        let mut q = Qlru::new(4, vmru);
        let mut l = Lru::new(4);
        // (1) The buffer holds 1 2 4 5 (MRU … LRU); C1 (page 3) waits in the NCQ.
        for r in [&mut q as &mut dyn Replacement, &mut l] {
            writes_dyn(r, &[5, 4, 2, 1]);
        }
        q.queued(&write(3, 10));
        assert_eq!(keys_of(&q.normal, &q.arena), vec![1, 2, 4, 5]);
        // (2) C2 (page 5) arrives: QLRU moves 5 to the virtual MRU.
        q.queued(&write(5, 11));
        assert_eq!(keys_of(&q.protected, &q.arena), vec![5]);
        assert_eq!(keys_of(&q.normal, &q.arena), vec![1, 2, 4]);
        // (3) C1 is dispatched: both miss on 3 and evict their LRU page.
        let (hq, eq) = writes(&mut q, &[3], 20);
        let (hl, el) = writes(&mut l, &[3], 20);
        assert_eq!((hq, hl), (vec![false], vec![false]));
        assert_eq!(el, vec![5], "LRU evicts 5, the page C2 is about to write");
        assert_eq!(eq, vec![4], "QLRU evicts the LRU page below the virtual MRU");
        assert_eq!(keys_of(&q.normal, &q.arena), vec![3, 1, 2]);
        // (4) C2 is dispatched: QLRU hits, LRU misses.
        let (hq, _) = writes(&mut q, &[5], 21);
        let (hl, _) = writes(&mut l, &[5], 21);
        assert_eq!((hq, hl), (vec![true], vec![false]));
        // Served, 5 is an ordinary MRU page again and nothing is pending.
        assert_eq!(q.protected_len(), 0);
        assert_eq!(keys_of(&q.normal, &q.arena), vec![5, 3, 1, 2]);
        assert!(q.pending.is_empty());
    }

    fn writes_dyn(r: &mut dyn Replacement, keys: &[u64]) {
        let mut evicted = Vec::new();
        for (i, &k) in keys.iter().enumerate() {
            let a = write(k, i as u64);
            if !r.touch(&a, true, &mut evicted) {
                r.insert(&a, true, &mut evicted);
            }
        }
        assert!(evicted.is_empty());
    }

    #[test]
    fn stays_protected_until_the_last_queued_command_is_served() {
        let mut q = Qlru::new(2, Vmru::Pin);
        writes(&mut q, &[1, 2], 0);
        // Two queued commands reference 1.
        q.queued(&write(1, 2));
        q.queued(&write(1, 2));
        let (h, _) = writes(&mut q, &[1], 2);
        assert_eq!(h, vec![true]);
        assert_eq!(keys_of(&q.protected, &q.arena), vec![1], "one still queued");
        // Misses evict 2, then... only 1 is protected: 3 evicts 2, 4 evicts 3.
        let (_, ev) = writes(&mut q, &[3, 4], 3);
        assert_eq!(ev, vec![2, 3]);
        let (h, _) = writes(&mut q, &[1], 5);
        assert_eq!(h, vec![true]);
        assert_eq!(q.protected_len(), 0);
        // Every page protected: the oldest protected one goes.
        q.queued(&write(4, 6));
        q.queued(&write(1, 6));
        let (_, ev) = writes(&mut q, &[9], 6);
        assert_eq!(ev, vec![4]);
        assert!(q.len() <= q.capacity());
    }

    #[test]
    fn a_page_entering_after_its_notice_is_not_protected() {
        let mut q = Qlru::new(2, Vmru::Pin);
        q.queued(&write(1, 0)); // not resident yet
        q.queued(&write(1, 0)); // a second command on 1, also queued early
        writes(&mut q, &[1], 0); // the first command writes 1
        assert_eq!(q.protected_len(), 0);
        assert_eq!(q.pending.get(&1), Some(&1));
        let (_, ev) = writes(&mut q, &[2, 3], 1);
        assert_eq!(ev, vec![1], "1 was at the ordinary LRU end");
        writes(&mut q, &[1], 3);
        assert!(q.pending.is_empty());
    }

    /// Without notices QLRU is LRU, miss for miss and victim for victim, in every mode.
    #[test]
    fn without_notices_equals_lru() {
        for (_, mode, _) in MODES {
            for cap in [1usize, 3, 16, 64] {
                let vmru = if cap % 2 == 0 { Vmru::Pin } else { Vmru::Pointer };
                let mut q = ModeCache::new(Qlru::new(cap, vmru), *mode);
                let mut l = ModeCache::new(Lru::new(cap), *mode);
                let (mut fq, mut fl) = (Effects::new(), Effects::new());
                let mut x: u64 = 0x2545_f491_4f6c_dd1d ^ cap as u64;
                for i in 0..20_000u64 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let op = match x % 10 {
                        0..=5 => Op::Read,
                        6..=8 => Op::Write,
                        _ => Op::Trim,
                    };
                    let a = Access { op, partial: x.is_multiple_of(5), ..write((x >> 8) % 200, i) };
                    fq.clear();
                    fl.clear();
                    q.access(&a, &mut fq);
                    l.access(&a, &mut fl);
                    assert_eq!((fq.hit, &fq.io), (fl.hit, &fl.io), "{mode} cap {cap} step {i}");
                }
            }
        }
    }

    /// A notice right before each single-page access (an idle device, or a
    /// queue of depth 1) changes nothing either.
    #[test]
    fn notice_then_access_equals_lru() {
        for vmru in [Vmru::Pointer, Vmru::Pin] {
            notice_then_access(vmru);
        }
    }

    fn notice_then_access(vmru: Vmru) {
        let mut q = ModeCache::new(Qlru::new(32, vmru), Mode::WriteOnly);
        let mut l = ModeCache::new(Lru::new(32), Mode::WriteOnly);
        let (mut fq, mut fl) = (Effects::new(), Effects::new());
        let mut x: u64 = 7;
        for i in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let op = if (x >> 60) < 5 { Op::Read } else { Op::Write };
            let a = Access { op, ..write((x >> 20) % 100, i) };
            q.queued(&a);
            fq.clear();
            fl.clear();
            q.access(&a, &mut fq);
            l.access(&a, &mut fl);
            assert_eq!((fq.hit, &fq.io), (fl.hit, &fl.io), "step {i}");
        }
        assert!(q.replacement().pending.is_empty());
    }

    /// Against a naive model of the one-list-with-pointer reading, with random
    /// notices ahead of the accesses (commands queued, served in order).
    #[test]
    fn matches_a_naive_model_under_random_lookahead() {
        #[derive(Default)]
        struct Naive {
            /// Front = virtual MRU; `bool` = protected.
            list: Vec<(u64, bool)>,
            pending: std::collections::HashMap<u64, u32>,
            cap: usize,
            /// `vmru=pointer`: no counts, a page leaves at its next reference.
            pointer: bool,
        }
        impl Naive {
            fn pos(&self, k: u64) -> Option<usize> {
                self.list.iter().position(|e| e.0 == k)
            }
            fn boundary(&self) -> usize {
                self.list.iter().take_while(|e| e.1).count()
            }
            fn queued(&mut self, k: u64) {
                if !self.pointer {
                    *self.pending.entry(k).or_default() += 1;
                }
                if let Some(p) = self.pos(k) {
                    self.list.remove(p);
                    self.list.insert(0, (k, true));
                }
            }
            fn access(&mut self, k: u64) -> (bool, Option<u64>) {
                let left = match self.pending.get_mut(&k) {
                    Some(n) => {
                        *n -= 1;
                        let left = *n;
                        if left == 0 {
                            self.pending.remove(&k);
                        }
                        left
                    }
                    None => 0,
                };
                if let Some(p) = self.pos(k) {
                    let (_, prot) = self.list.remove(p);
                    if prot && left > 0 {
                        self.list.insert(0, (k, true));
                    } else {
                        let b = self.boundary();
                        self.list.insert(b, (k, false));
                    }
                    return (true, None);
                }
                let victim = (self.list.len() >= self.cap).then(|| self.list.pop().unwrap().0);
                let b = self.boundary();
                self.list.insert(b, (k, false));
                (false, victim)
            }
        }
        let mut x: u64 = 99;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for (cap, vmru) in [1usize, 2, 5, 12].into_iter().flat_map(|c| [(c, Vmru::Pin), (c, Vmru::Pointer)]) {
            let mut q = Qlru::new(cap, vmru);
            let mut m = Naive { cap, pointer: vmru == Vmru::Pointer, ..Naive::default() };
            let mut queue = std::collections::VecDeque::new();
            let mut evicted = Vec::new();
            for i in 0..30_000u64 {
                if queue.is_empty() || (queue.len() < 8 && rnd(2) == 0) {
                    let k = rnd(20);
                    queue.push_back(k);
                    q.queued(&write(k, i));
                    m.queued(k);
                } else {
                    let k = queue.pop_front().unwrap();
                    evicted.clear();
                    let a = write(k, i);
                    let hit = q.touch(&a, true, &mut evicted) || {
                        q.insert(&a, true, &mut evicted);
                        false
                    };
                    let (mhit, mvictim) = m.access(k);
                    assert_eq!(hit, mhit, "cap {cap} {vmru:?} step {i}");
                    assert_eq!(evicted.first().copied(), mvictim, "cap {cap} {vmru:?} step {i}");
                    let mut lists = keys_of(&q.protected, &q.arena);
                    lists.extend(keys_of(&q.normal, &q.arena));
                    let model: Vec<u64> = m.list.iter().map(|e| e.0).collect();
                    assert_eq!(lists, model, "cap {cap} {vmru:?} step {i}");
                }
            }
        }
    }

    #[test]
    fn plain_reads_evict_least_recent() {
        let mut q = Qlru::new(3, Vmru::Pin);
        let hits = run_keys(&mut q, &[1, 2, 3, 1, 4, 2, 1]);
        assert_eq!(hits, vec![false, false, false, true, false, false, true]);
    }

    #[test]
    fn resident_set_matches_effects_in_every_mode() {
        churn(
            || Qlru::new(16, Vmru::Pin),
            64,
            |r, shadow| {
                assert_eq!(r.len(), shadow.len());
                assert!(shadow.iter().all(|&k| r.contains(k)));
            },
        );
    }

    #[test]
    fn mode_cache_forwards_only_notices_that_will_touch() {
        let mut p = ModeCache::new(Qlru::new(4, Vmru::Pin), Mode::ReadOnly);
        let trim = Access { op: Op::Trim, ..write(1, 0) };
        p.queued(&trim);
        p.queued(&write(1, 0)); // read-only: a write never touches
        assert!(p.replacement().pending.is_empty());
        let mut p = ModeCache::new(Qlru::new(4, Vmru::Pin), Mode::WriteOnly);
        p.queued(&write(1, 0));
        let mut fx = Effects::new();
        p.access(&write(1, 0), &mut fx);
        assert_eq!(fx.io, vec![Io::CacheWrite { key: 1 }]);
        assert!(p.replacement().pending.is_empty());
    }
    /// Where the readings differ: two queued commands on one page. `pin`
    /// keeps it at the virtual MRU until the second is served; `pointer`
    /// drops it to the ordinary MRU at the first, so misses in between evict
    /// it and the second command misses.
    #[test]
    fn pin_and_pointer_differ_on_a_page_queued_twice() {
        let run = |vmru| {
            let mut q = Qlru::new(3, vmru);
            writes(&mut q, &[1, 2, 3], 0);
            // Queue: C1 writes 1, C2..C4 write 4, 5, 6 (misses), C5 writes 1 again.
            for k in [1, 4, 5, 6, 1] {
                q.queued(&write(k, 3));
            }
            let (hits, evicted) = writes(&mut q, &[1, 4, 5, 6, 1], 3);
            (hits, evicted, q.protected_len(), q.pending.len())
        };
        let (hits, evicted, prot, pend) = run(Vmru::Pin);
        assert_eq!(hits, vec![true, false, false, false, true], "pin: C5 hits");
        assert_eq!(evicted, vec![2, 3, 4], "pin: 1 stays while C5 waits");
        assert_eq!((prot, pend), (0, 0));
        let (hits, evicted, prot, pend) = run(Vmru::Pointer);
        assert_eq!(hits, vec![true, false, false, false, false], "pointer: C5 misses");
        assert_eq!(evicted, vec![2, 3, 1, 4], "pointer: 1 is ordinary after C1");
        assert_eq!((prot, pend), (0, 0), "pointer keeps no counts");
    }

    /// With at most one queued command per page the two readings agree, move
    /// for move, whatever the lookahead.
    #[test]
    fn pin_equals_pointer_without_repeated_pages_in_the_queue() {
        let (mut a, mut b) = (Qlru::new(6, Vmru::Pin), Qlru::new(6, Vmru::Pointer));
        let mut queue = std::collections::VecDeque::new();
        let (mut ea, mut eb) = (Vec::new(), Vec::new());
        let mut x: u64 = 5;
        for i in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let k = (x >> 33) % 24;
            if queue.len() < 10 && !queue.contains(&k) && !(x >> 20).is_multiple_of(3) {
                queue.push_back(k);
                a.queued(&write(k, i));
                b.queued(&write(k, i));
            } else if let Some(k) = queue.pop_front() {
                let w = write(k, i);
                ea.clear();
                eb.clear();
                let ha = a.touch(&w, true, &mut ea) || !a.insert(&w, true, &mut ea);
                let hb = b.touch(&w, true, &mut eb) || !b.insert(&w, true, &mut eb);
                assert_eq!((ha, &ea), (hb, &eb), "step {i}");
            }
        }
    }

    #[test]
    fn vmru_parameter_parses_and_defaults_to_pointer() {
        use crate::policy::registry::build as build_spec;
        let ctx = BuildCtx { capacity: 8, mode: Mode::WriteOnly, page_bytes: 4096 };
        // The scenario of `pin_and_pointer_differ_on_a_page_queued_twice`, through the registry.
        let hits = |t: &str| {
            let (mut p, _) = build_spec(t, &BuildCtx { capacity: 3, ..ctx }).unwrap();
            let mut fx = Effects::new();
            for k in [1, 2, 3] {
                p.access(&write(k, 0), &mut fx);
            }
            for k in [1, 4, 5, 6, 1] {
                p.queued(&write(k, 3));
            }
            [1, 4, 5, 6, 1].map(|k| {
                fx.clear();
                p.access(&write(k, 3), &mut fx);
                fx.hit
            })
        };
        assert_eq!(hits("qlru"), hits("qlru(vmru=pointer)"), "pointer is the default");
        assert_eq!(hits("qlru(vmru=pin)"), [true, false, false, false, true]);
        assert_eq!(hits("qlru"), [true, false, false, false, false]);
        let e = build_spec("qlru(vmru=sticky)", &ctx).err().unwrap().to_string();
        assert!(e.contains("vmru") && e.contains("pointer, pin"), "{e}");
    }
}
