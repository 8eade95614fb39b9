//! MQ: multi-queue replacement for second-level buffer caches (Zhou, Philbin
//! & Li, USENIX ATC'01) — ssdcache's own setting: the cache below a host's
//! page cache, where recency is filtered out and frequency is what is left.
//!
//! - `m` LRU queues `Q0..Qm-1`; a page hit `f` times lives in `Q[min(⌊log2 f⌋, m-1)]`;
//! - a hit adds one to the page's count, moves it to the MRU end of its queue
//!   and sets its expiry to `now + lifetime`;
//! - a miss evicts, if the cache is full, the LRU page of the lowest non-empty
//!   queue, remembering its key and count in the ghost FIFO `Qout`; a missed
//!   page found in `Qout` comes back with its remembered count plus one,
//!   others start at one;
//! - after each hit and each insert, `Adjust`: the clock ticks, and the LRU
//!   page of each queue `Qk` (`k ≥ 1`) whose expiry has passed moves down to
//!   the MRU end of `Qk-1`, with a fresh expiry.
//!
//! Defaults are libCacheSim's `MQ` (`MQ.c`): `queues=8`, `lifetime=10000`
//! (accesses), `qout=400%` of the capacity in keys (the paper's `Qout` holds
//! four times the cache's blocks too). The paper sets `lifetime` adaptively
//! from the observed peak temporal distance; like libCacheSim, this rule takes
//! it as a fixed parameter. Miss counts equal libCacheSim's. `Qout`'s size is
//! worked out as libCacheSim does in bytes for 4 KiB pages:
//! `⌊trunc(C·4096·qout)/4096⌋` keys. A key leaves `Qout` when it misses again,
//! before anything is evicted for it.
//!
//! All queues are stretches of one list, the top queue first, each MRU end
//! first, so the LRU page of `Qk` sits right before the MRU end of `Qk-1`:
//! `Adjust` moves a page down by moving the boundary between two stretches,
//! without touching the list (at scale nearly every access moves a page down
//! in most queues, and each move would relink three cold nodes).
//!
//! Memory per tracked key (resident or ghost): a 24-byte arena node (key,
//! links, and count and expiry beside them, so that a page's list and its
//! expiry come in one cache line mostly), and the arena's hash index. To fit:
//! - no queue number is kept: a page's queue matters only when it leaves, and
//!   only if it is an end of its queue's stretch, which the stretches say;
//! - the count saturates at 2^31 instead of 2^32 - 1, which changes no queue
//!   (`⌊log2⌋` of both is 31), and the bit freed marks ghosts;
//! - the expiry is kept modulo 2^32, read back against the clock: a compared
//!   expiry is at most `lifetime` ahead of it (it was set that much ahead) and
//!   at most `capacity` behind (from the moment a page's expiry passes, every
//!   tick moves its queue's expired LRU page down, so it is compared within as
//!   many ticks as there are pages ahead of it). Hence `lifetime + capacity`
//!   must stay below 2^32 - 1, checked when the rule is made.

use crate::list::{Arena, List, NIL};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, ParamInfo, PolicyInfo, Replacement, Spec, SpecError};

/// The bit of [`Meta::count`] that marks a key remembered in `Qout`.
const GHOST: u32 = 1 << 31;
/// Where counts saturate: `⌊log2⌋` of it is that of `u32::MAX`, so no queue
/// changes, and `count - 1` fits below [`GHOST`].
const MAX_FREQ: u32 = 1 << 31;
/// The most queues (libCacheSim: `MQ_MAX_N_QUEUE`).
const MAX_QUEUES: u64 = 64;
/// libCacheSim's object size in our comparisons (4 KiB pages), for its byte rounding.
const LCS_PAGE: u64 = 4096;

#[derive(Clone, Copy, Debug)]
struct Meta {
    /// Clock value after which the page may move down a queue, modulo 2^32
    /// ([`Mq::expiry`] reads it back).
    expire: u32,
    /// Accesses counted (for a ghost: when it was evicted) minus one, and [`GHOST`].
    count: u32,
}

impl Meta {
    #[inline]
    fn freq(self) -> u32 {
        (self.count & !GHOST) + 1
    }
    #[inline]
    fn is_ghost(self) -> bool {
        self.count & GHOST != 0
    }
}

/// One more access counted, saturating at [`MAX_FREQ`].
#[inline]
fn bump(freq: u32) -> u32 {
    freq.saturating_add(1).min(MAX_FREQ)
}

/// One queue's stretch of the list: its MRU and LRU nodes (`NIL` when empty).
#[derive(Clone, Copy, Debug)]
struct Stretch {
    mru: u32,
    lru: u32,
}

impl Stretch {
    const EMPTY: Stretch = Stretch { mru: NIL, lru: NIL };
    #[inline]
    fn is_empty(&self) -> bool {
        self.mru == NIL
    }
}

pub struct Mq {
    arena: Arena<Meta>,
    /// Every resident page: `Qm-1` first, each queue MRU first.
    order: List,
    /// Where each queue is in `order`.
    queues: Vec<Stretch>,
    /// The expiry of each queue's LRU page (`u64::MAX` while it is empty),
    /// kept here so that `Adjust` reads one array instead of a node a queue.
    /// `Q0`'s is never read (nothing moves down from it) and may be stale.
    lru_expire: Vec<u64>,
    /// Front = newest ghost.
    qout: List,
    qout_cap: usize,
    lifetime: u64,
    now: u64,
    /// A lower bound on the expiry of the LRU page of every queue above `Q0`
    /// (`u64::MAX` when they are empty): `Adjust` has nothing to do while the
    /// clock has not passed it. Expiries grow from LRU to MRU end (each is set
    /// as a page enters a queue's MRU end), so a queue's new LRU page never
    /// expires before the one that left.
    next_expire: u64,
    /// The last `touch` that missed: its key and node (`NIL`: not tracked), so
    /// that `insert`, called right after it for the same key, needs no lookup.
    missed: Option<(u64, u32)>,
    capacity: usize,
    /// How far behind the clock a compared expiry can be, plus one: `capacity + 1`.
    lag: u64,
}

impl Mq {
    pub fn new(capacity: usize, queues: usize, lifetime: u64, qout: f64) -> Self {
        let capacity = capacity.max(1);
        let qout_cap = (((capacity as u64 * LCS_PAGE) as f64 * qout) as u64 / LCS_PAGE) as usize;
        Mq {
            arena: Arena::with_capacity(capacity + qout_cap),
            order: List::new(),
            queues: vec![Stretch::EMPTY; queues.clamp(1, MAX_QUEUES as usize)],
            lru_expire: vec![u64::MAX; queues.clamp(1, MAX_QUEUES as usize)],
            qout: List::new(),
            qout_cap,
            lifetime,
            now: 0,
            next_expire: u64::MAX,
            missed: None,
            capacity,
            lag: capacity as u64 + 1,
        }
    }

    /// The clock value a stored expiry stands for: the one within `lag` behind
    /// the clock to `2^32 - lag` ahead of it (see the module's text).
    #[inline]
    fn expiry(&self, stored: u32) -> u64 {
        let floor = self.now.saturating_sub(self.lag);
        floor + stored.wrapping_sub(floor as u32) as u64
    }

    /// `⌊log2 freq⌋`, at most the top queue (0 for a count of 0 or 1).
    #[inline]
    fn queue_of(&self, freq: u32) -> usize {
        let log2 = u32::BITS - 1 - freq.max(1).leading_zeros();
        log2.min(self.queues.len() as u32 - 1) as usize
    }

    /// Puts `idx` (on no list, expiring at `expire`) at the MRU end of queue `q`.
    #[inline]
    fn push_mru(&mut self, q: usize, idx: u32, expire: u64) {
        let at = self.queues[q].mru;
        // Before the MRU node of `q`, or after the LRU node of the nearest
        // non-empty queue above it.
        let before = if at != NIL {
            self.order.prev_of(&self.arena, at)
        } else {
            self.queues[q + 1..].iter().find(|s| !s.is_empty()).map(|s| s.lru)
        };
        match before {
            Some(prev) => self.order.insert_after(&mut self.arena, prev, idx),
            None => self.order.push_front(&mut self.arena, idx),
        }
        let s = &mut self.queues[q];
        if s.is_empty() {
            s.lru = idx;
            self.lru_expire[q] = expire;
        }
        s.mru = idx;
    }

    /// Takes resident `idx` out of its queue and off the list. Its queue is
    /// not kept: only an end of a stretch moves that stretch's bounds, and the
    /// stretches say which ends they have (a few compares, no memory).
    #[inline]
    fn unlink(&mut self, idx: u32) {
        if let Some(q) = self.queues.iter().position(|s| s.mru == idx || s.lru == idx) {
            self.unlink_end(q, idx);
        }
        self.order.unlink(&mut self.arena, idx);
    }

    /// Moves the bounds of queue `q`'s stretch past `idx`, one of its ends.
    fn unlink_end(&mut self, q: usize, idx: u32) {
        let s = self.queues[q];
        if s.mru == s.lru {
            self.queues[q] = Stretch::EMPTY;
            self.lru_expire[q] = u64::MAX;
        } else if s.mru == idx {
            self.queues[q].mru = self.order.next_of(&self.arena, idx).expect("queue has a next node");
        } else {
            let lru = self.order.prev_of(&self.arena, idx).expect("queue has a previous node");
            self.set_lru(q, lru);
        }
    }

    /// Makes `lru`, already in queue `q`'s stretch, its LRU page. Its expiry
    /// is read now; the page before it will be read when `lru` leaves, most
    /// often within a few accesses (it is cold by then), so its load starts now.
    #[inline]
    fn set_lru(&mut self, q: usize, lru: u32) {
        self.queues[q].lru = lru;
        self.lru_expire[q] = self.expiry(self.arena.val(lru).expire);
        if let Some(before) = self.order.prev_of(&self.arena, lru) {
            self.arena.prefetch_node(before);
        }
    }

    #[inline]
    fn link(&mut self, idx: u32, freq: u32) {
        let queue = self.queue_of(freq);
        let expire = self.now + self.lifetime;
        *self.arena.val_mut(idx) = Meta { expire: expire as u32, count: freq - 1 };
        self.push_mru(queue, idx, expire);
        if queue > 0 {
            self.next_expire = self.next_expire.min(expire);
        }
    }

    /// The paper's `Adjust`: tick, and move expired LRU pages down one queue.
    #[inline]
    fn adjust(&mut self) {
        self.now += 1;
        if self.next_expire >= self.now {
            return;
        }
        self.adjust_queues();
    }

    /// `Adjust`'s walk over the queues, when some LRU page may have expired;
    /// works out the next bound on the way.
    #[inline(never)]
    fn adjust_queues(&mut self) {
        let mut next = u64::MAX;
        for k in 1..self.queues.len() {
            // An empty queue's expiry is `u64::MAX`: never passed.
            let expire = self.lru_expire[k];
            if expire >= self.now {
                next = next.min(expire);
                continue;
            }
            let idx = self.queues[k].lru;
            let fresh = self.now + self.lifetime;
            self.arena.val_mut(idx).expire = fresh as u32;
            if k > 1 {
                next = next.min(fresh);
            }
            // The LRU node of `Qk` is already where the MRU node of `Qk-1` goes:
            // only the boundary moves.
            let above = self.queues[k];
            if above.mru == above.lru {
                self.queues[k] = Stretch::EMPTY;
                self.lru_expire[k] = u64::MAX;
            } else {
                let lru = self.order.prev_of(&self.arena, idx).expect("queue has a previous node");
                self.set_lru(k, lru);
                next = next.min(self.lru_expire[k]);
            }
            let below = &mut self.queues[k - 1];
            if below.is_empty() {
                below.lru = idx;
                self.lru_expire[k - 1] = fresh;
            }
            below.mru = idx;
        }
        self.next_expire = next;
    }

    /// Evicts the LRU page of the lowest non-empty queue (the back of the list) into `Qout`.
    fn evict(&mut self, evicted: &mut Vec<u64>) {
        let Some(idx) = self.order.back() else { return };
        self.unlink(idx);
        evicted.push(self.arena.key(idx));
        if self.qout_cap == 0 {
            self.arena.remove(idx);
            return;
        }
        self.arena.val_mut(idx).count |= GHOST;
        self.qout.push_front(&mut self.arena, idx);
        if self.qout.len() > self.qout_cap {
            let old = self.qout.pop_back(&mut self.arena).expect("Qout is not empty");
            self.arena.remove(old);
        }
    }

    /// Keys of each queue, MRU first, `Q0` first (for tests).
    pub fn queues(&self) -> Vec<Vec<u64>> {
        let mut idx = self.order.front();
        let mut out = vec![Vec::new(); self.queues.len()];
        for (q, s) in self.queues.iter().enumerate().rev() {
            if s.is_empty() {
                assert_eq!(s.lru, NIL, "empty stretch with an LRU node");
                assert_eq!(self.lru_expire[q], u64::MAX, "empty Q{q} with an LRU expiry");
                continue;
            }
            assert_eq!(idx, Some(s.mru), "stretch of Q{q} not where the one above ends");
            // Q0 never moves a page down, so its LRU expiry is never read.
            if q > 0 {
                let lru_expire = self.expiry(self.arena.val(s.lru).expire);
                assert_eq!(self.lru_expire[q], lru_expire, "Q{q}'s LRU expiry is not its LRU page's");
            }
            loop {
                let i = idx.expect("stretches cover the list");
                assert!(!self.arena.val(i).is_ghost(), "ghost on the list");
                out[q].push(self.arena.key(i));
                idx = self.order.next_of(&self.arena, i);
                if i == s.lru {
                    break;
                }
            }
        }
        assert!(idx.is_none(), "list longer than its stretches");
        out
    }
}

impl Replacement for Mq {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(a.key) else {
            self.missed = Some((a.key, NIL));
            return false;
        };
        let m = *self.arena.val(idx);
        if m.is_ghost() {
            self.missed = Some((a.key, idx));
            return false;
        }
        self.missed = None;
        self.unlink(idx);
        self.link(idx, bump(m.freq()));
        self.adjust();
        true
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        let ghost = match self.missed.take() {
            Some((key, idx)) if key == a.key => idx,
            _ => self.arena.find(a.key).unwrap_or(NIL),
        };
        // A key back from Qout keeps its node: out of Qout before anything is
        // evicted, so the eviction sees Qout as libCacheSim does.
        let freq = if ghost != NIL {
            debug_assert!(self.arena.val(ghost).is_ghost(), "insert of a resident key");
            self.qout.unlink(&mut self.arena, ghost);
            bump(self.arena.val(ghost).freq())
        } else {
            1
        };
        while self.order.len() >= self.capacity {
            self.evict(evicted);
        }
        let idx = if ghost != NIL { ghost } else { self.arena.insert(a.key, Meta { expire: 0, count: 0 }) };
        self.link(idx, freq);
        self.adjust();
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        self.missed = None;
        let Some(idx) = self.arena.find(key) else { return false };
        if self.arena.val(idx).is_ghost() {
            // libCacheSim forgets a removed key's history too.
            self.qout.unlink(&mut self.arena, idx);
            self.arena.remove(idx);
            return false;
        }
        self.unlink(idx);
        self.arena.remove(idx);
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some_and(|idx| !self.arena.val(idx).is_ghost())
    }
    fn prefetch(&self, key: u64) {
        self.arena.prefetch(key);
    }
    fn len(&self) -> usize {
        self.order.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn ghosts(&self) -> usize {
        self.qout.len()
    }
}

fn make(spec: &Spec, ctx: &BuildCtx) -> Result<Mq, SpecError> {
    let queues = spec.uint("queues")?;
    if !(1..=MAX_QUEUES).contains(&queues) {
        return Err(spec.invalid("queues", format!("between 1 and {MAX_QUEUES}")));
    }
    let lifetime = spec.uint("lifetime")?;
    // Expiries are kept modulo 2^32 (see the module's text).
    let pages = ctx.capacity.max(1) as u64;
    if lifetime.saturating_add(pages) >= u32::MAX as u64 {
        let why = match (u32::MAX as u64 - 1).checked_sub(pages) {
            Some(most) => format!("at most 2^32-2 less the cache's pages ({most} accesses here)"),
            None => format!("none fits a cache of {pages} pages (lifetime + pages must stay below 2^32-1)"),
        };
        return Err(spec.invalid("lifetime", why));
    }
    let raw = spec.raw("qout");
    let qout = match raw.strip_suffix('%') {
        Some(pct) => pct.parse::<f64>().map(|v| v / 100.0),
        None => raw.parse::<f64>(),
    };
    let qout = match qout {
        Ok(v) if v.is_finite() && (0.0..=100.0).contains(&v) => v,
        _ => return Err(spec.invalid("qout", "expected a share of the capacity between 0 and 10000%")),
    };
    Ok(Mq::new(ctx.capacity, queues as usize, lifetime, qout))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "mq",
    about: "MQ: multi-queue by log2 frequency with lifetimes and a ghost Qout (Zhou et al.; libCacheSim MQ)",
    params: &[
        ParamInfo { name: "queues", default: "8", about: "number of LRU queues (n-queue), 1 to 64" },
        ParamInfo {
            name: "lifetime",
            default: "10000",
            about:
                "accesses a page may go unreferenced before moving down a queue (plus the cache's pages, below 2^32-1)",
        },
        ParamInfo {
            name: "qout",
            default: "400%",
            about: "ghost keys kept, as a share of the capacity (Qout-size-ratio)",
        },
    ],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::run_keys;
    use crate::policy::Mode;

    #[test]
    fn by_hand() {
        // 3 pages, 4 queues, lifetime 2, Qout 2 keys.
        let mut m = Mq::new(3, 4, 2, 0.67);
        assert_eq!(m.qout_cap, 2);
        // 1 misses (count 1, Q0, expiry 0+2; tick -> 1); its hit (count 2) moves it
        // to Q1 with expiry 1+2 = 3 (tick -> 2). 2 and 3 enter Q0 (ticks 3, 4): at
        // tick 4, 1's expiry (3) has passed and it moves down to Q0's MRU end.
        assert_eq!(run_keys(&mut m, &[1, 1, 2]), vec![false, true, false]);
        assert_eq!(m.queues(), vec![vec![2], vec![1], vec![], vec![]]);
        assert_eq!(run_keys(&mut m, &[3]), vec![false]);
        assert_eq!(m.queues(), vec![vec![1, 3, 2], vec![], vec![], vec![]]);
        // 4: Q0's LRU (2) leaves for Qout.
        assert_eq!(run_keys(&mut m, &[4]), vec![false]);
        assert_eq!(m.queues(), vec![vec![4, 1, 3], vec![], vec![], vec![]]);
        assert_eq!(m.ghosts(), 1);
        // 2 comes back from Qout with count 1 + 1 = 2: Q1. 3 (Q0's LRU) leaves.
        assert_eq!(run_keys(&mut m, &[2]), vec![false]);
        assert_eq!(m.queues(), vec![vec![4, 1], vec![2], vec![], vec![]]);
        assert_eq!(m.qout.keys(&m.arena), vec![3]);
    }

    #[test]
    fn bad_params() {
        let ctx = BuildCtx { capacity: 10, mode: Mode::WriteBack, page_bytes: 4096 };
        for bad in ["mq(queues=0)", "mq(queues=65)", "mq(lifetime=-1)", "mq(qout=-5%)", "mq(qout=nan)", "mq(qout=x)"] {
            assert!(build_spec(bad, &ctx).is_err(), "{bad}");
        }
        assert!(build_spec("mq(queues=1,lifetime=0,qout=0)", &ctx).is_ok());
        // Expiries are kept modulo 2^32: lifetime + pages must stay below 2^32 - 1.
        assert!(build_spec("mq(lifetime=4294967284)", &ctx).is_ok());
        let err = build_spec("mq(lifetime=4294967285)", &ctx).err().expect("lifetime over the bound").to_string();
        assert!(err.contains("lifetime") && err.contains("4294967284") && !err.contains('\n'), "{err}");
        let huge = BuildCtx { capacity: u32::MAX as usize, mode: Mode::WriteBack, page_bytes: 4096 };
        let err = build_spec("mq(lifetime=0)", &huge).err().expect("too many pages").to_string();
        assert!(err.contains("none fits") && !err.contains('\n'), "{err}");
        assert!(build_spec("mq(qout=2.5)", &ctx).is_ok());
    }

    /// MQ as the module's text states it, by brute force: a vector per queue
    /// (MRU first), a scan per lookup, every queue's LRU page checked on every
    /// access. The rule above must make the same choices.
    struct Reference {
        queues: Vec<Vec<u64>>,
        /// Resident keys: count and expiry.
        meta: std::collections::HashMap<u64, (u32, u64)>,
        /// Newest first: key and count.
        qout: std::collections::VecDeque<(u64, u32)>,
        qout_cap: usize,
        lifetime: u64,
        now: u64,
        capacity: usize,
    }

    impl Reference {
        fn queue_of(&self, freq: u32) -> usize {
            let (mut q, mut f) = (0, freq);
            while f > 1 && q + 1 < self.queues.len() {
                f /= 2;
                q += 1;
            }
            q
        }
        fn enter(&mut self, key: u64, freq: u32) {
            let q = self.queue_of(freq);
            self.queues[q].insert(0, key);
            self.meta.insert(key, (freq, self.now + self.lifetime));
        }
        fn adjust(&mut self) {
            self.now += 1;
            for k in 1..self.queues.len() {
                let Some(&lru) = self.queues[k].last() else { continue };
                if self.meta[&lru].1 < self.now {
                    self.queues[k].pop();
                    self.queues[k - 1].insert(0, lru);
                    self.meta.get_mut(&lru).unwrap().1 = self.now + self.lifetime;
                }
            }
        }
        /// An access; with `admit` false a miss is not cached (and changes nothing).
        fn access(&mut self, key: u64, admit: bool, evicted: &mut Vec<u64>) -> bool {
            if let Some(&(freq, _)) = self.meta.get(&key) {
                let q = self.queues.iter().position(|q| q.contains(&key)).unwrap();
                self.queues[q].retain(|&k| k != key);
                self.enter(key, freq + 1);
                self.adjust();
                return true;
            }
            if !admit {
                return false;
            }
            let freq = match self.qout.iter().position(|&(k, _)| k == key) {
                Some(at) => self.qout.remove(at).unwrap().1 + 1,
                None => 1,
            };
            while self.meta.len() >= self.capacity {
                let q = self.queues.iter().position(|q| !q.is_empty()).unwrap();
                let victim = self.queues[q].pop().unwrap();
                let (f, _) = self.meta.remove(&victim).unwrap();
                evicted.push(victim);
                if self.qout_cap > 0 {
                    self.qout.push_front((victim, f));
                    self.qout.truncate(self.qout_cap);
                }
            }
            self.enter(key, freq);
            self.adjust();
            false
        }
        fn remove(&mut self, key: u64) -> bool {
            self.qout.retain(|&(k, _)| k != key);
            for q in &mut self.queues {
                q.retain(|&k| k != key);
            }
            self.meta.remove(&key).is_some()
        }
    }

    proptest::proptest! {
        #[test]
        fn same_choices_as_the_brute_force_reference(
            capacity in 1usize..9,
            queues in 1usize..6,
            lifetime in 0u64..30,
            // the longest lifetime allowed instead (less `lifetime`), so stored expiries wrap
            far in proptest::bool::weighted(0.2),
            // where the clock starts: expiries kept modulo 2^32 must cross 2^32 and 2^33 right
            start in proptest::sample::select(vec![0u64, (1 << 32) - 40, (1 << 33) - 7]),
            qout in proptest::sample::select(vec![0.0, 0.5, 1.0, 4.0]),
            // key, and what happens: 0 remove, 1 a miss is not cached, else an access
            ops in proptest::collection::vec((0u64..24, 0u8..12), 1..600),
        ) {
            let lifetime = if far { u32::MAX as u64 - 1 - capacity as u64 - lifetime } else { lifetime };
            let mut mq = Mq::new(capacity, queues, lifetime, qout);
            mq.now = start;
            let mut reference = Reference {
                queues: vec![Vec::new(); queues],
                meta: Default::default(),
                qout: Default::default(),
                qout_cap: mq.qout_cap,
                lifetime,
                now: start,
                capacity,
            };
            let (mut ev, mut ev_ref) = (Vec::new(), Vec::new());
            for (i, (key, what)) in ops.into_iter().enumerate() {
                ev.clear();
                ev_ref.clear();
                if what == 0 {
                    proptest::prop_assert_eq!(mq.remove(key, &mut ev), reference.remove(key), "remove {} at {}", key, i);
                } else {
                    let a = crate::policy::testing::read(key, i as u64);
                    let mut hit = mq.touch(&a, false, &mut ev);
                    if !hit && what > 1 {
                        hit = !mq.insert(&a, false, &mut ev);
                    }
                    proptest::prop_assert_eq!(hit, reference.access(key, what > 1, &mut ev_ref), "key {} at {}", key, i);
                }
                proptest::prop_assert_eq!(&ev, &ev_ref, "evicted at {}", i);
                proptest::prop_assert_eq!(mq.queues(), reference.queues.clone(), "queues after {}", i);
                let qout: Vec<u64> = reference.qout.iter().map(|&(k, _)| k).collect();
                proptest::prop_assert_eq!(mq.qout.keys(&mq.arena), qout, "Qout after {}", i);
            }
        }
    }
}
