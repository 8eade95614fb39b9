//! LFU: evict a page with the fewest hits since it entered the cache.
//!
//! Matches libCacheSim's `LFU` (`LFU.c`, which the Python `libcachesim.LFU`
//! binds; `LFUCpp` breaks ties differently):
//! - a page enters with frequency 1 and its count is forgotten on eviction
//!   (in-cache LFU, no history);
//! - a hit adds one, with no cap and no aging;
//! - among pages of the lowest frequency the victim is the one that reached
//!   that frequency first. A page reaches its current frequency on its latest
//!   access, so ties go to the least recently used page.
//!
//! Structure: the classic O(1) LFU — a list of frequency buckets in increasing
//! order, each bucket a list of pages (front = newest arrival). A hit moves the
//! page to the bucket for `f + 1`, creating it right after its current bucket
//! if needed (or, if the page was alone in its bucket, raising that bucket's
//! frequency in place); the victim is the back of the first bucket. Every
//! operation is O(1); buckets are recycled through a free list, so nothing
//! allocates once the arena and bucket table have grown. The chain
//! ([`FreqChain`]) works on node indices of any store, so LeCaR keeps it over
//! the nodes of its own arena.

use crate::list::{Arena, LinkStore, List, Own, Which, NIL};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, PolicyInfo, Replacement, Spec, SpecError};

// The bucket chain is linked by hand rather than as a `crate::list::List`
// over the bucket vector: tried, the generic list (which also keeps a tail and
// a length, clears a node's links on unlink, and goes through one more bounds
// check per link) made LFU's own code run ~1% more instructions (cachegrind,
// Zipf 0.9, 2 M requests: 387.5 M against 382.8 M hand-linked), on the path
// every hit takes, for ~40 lines saved. The pages in each bucket are `List`s.
struct Bucket<W: Which> {
    freq: u64,
    pages: List<W>,
    /// Neighbouring buckets in increasing frequency order (or the free list in `next`).
    prev: u32,
    next: u32,
}

/// A store whose nodes each keep their LFU bucket (and, as a [`LinkStore`],
/// their links in it).
pub trait BucketStore<W: Which>: LinkStore<W> {
    fn bucket(&self, idx: u32) -> u32;
    fn set_bucket(&mut self, idx: u32, b: u32);
}

impl BucketStore<Own> for Arena<u32> {
    #[inline]
    fn bucket(&self, idx: u32) -> u32 {
        *self.val(idx)
    }
    #[inline]
    fn set_bucket(&mut self, idx: u32, b: u32) {
        *self.val_mut(idx) = b;
    }
}

/// LFU's order over the nodes of a caller's store: the O(1) chain of
/// frequency buckets, each a list of pages through the nodes' `W` links. The
/// caller keeps each page's bucket ([`BucketStore`]) and its key index, so a policy that also keeps other
/// orders over the same pages (LeCaR's LRU) looks a key up once, not once per
/// order.
pub struct FreqChain<W: Which = Own> {
    buckets: Vec<Bucket<W>>,
    /// Lowest-frequency bucket.
    head: u32,
    free: u32,
}

impl<W: Which> Default for FreqChain<W> {
    fn default() -> Self {
        FreqChain { buckets: Vec::new(), head: NIL, free: NIL }
    }
}

impl<W: Which> FreqChain<W> {
    /// The node LFU evicts next: of the least frequency, the earliest to reach it.
    #[inline]
    pub fn least_frequent(&self) -> Option<u32> {
        (self.head != NIL)
            .then(|| self.buckets[self.head as usize].pages.back().expect("buckets in the chain are never empty"))
    }

    /// The frequency of the pages in bucket `b`.
    pub fn freq(&self, b: u32) -> u64 {
        self.buckets[b as usize].freq
    }

    /// The bucket of frequency 1, made if there is none: where a page enters
    /// (then [`push`](Self::push) it there).
    #[inline]
    pub fn one(&mut self) -> u32 {
        if self.head != NIL && self.buckets[self.head as usize].freq == 1 {
            self.head
        } else {
            self.new_bucket(1, NIL, self.head)
        }
    }

    /// Adds page `idx` (in no bucket, its bucket already set to `b`) to bucket
    /// `b` as its newest arrival.
    #[inline]
    pub fn push<S: LinkStore<W> + ?Sized>(&mut self, s: &mut S, b: u32, idx: u32) {
        self.buckets[b as usize].pages.push_front(s, idx);
    }

    /// A hit on page `idx`: it moves to the bucket one frequency up.
    #[inline]
    pub fn bump<S: BucketStore<W> + ?Sized>(&mut self, s: &mut S, idx: u32) {
        let b = s.bucket(idx);
        let bucket = &self.buckets[b as usize];
        let (freq, next, alone) = (bucket.freq + 1, bucket.next, bucket.pages.len() == 1);
        let next_fits = next != NIL && self.buckets[next as usize].freq == freq;
        if alone && !next_fits {
            // The page's bucket would be made for `freq` right after its own,
            // which would then be dropped: the bucket itself moves up instead
            // (the order of buckets and pages is the same either way).
            self.buckets[b as usize].freq = freq;
            return;
        }
        let nb = if next_fits { next } else { self.new_bucket(freq, b, next) };
        self.buckets[b as usize].pages.unlink(s, idx);
        self.buckets[nb as usize].pages.push_front(s, idx);
        s.set_bucket(idx, nb);
        self.drop_if_empty(b);
    }

    /// Takes page `idx` out of its bucket (dropping the bucket if empty).
    #[inline(always)]
    pub fn leave<S: BucketStore<W> + ?Sized>(&mut self, s: &mut S, idx: u32) {
        let b = s.bucket(idx);
        self.buckets[b as usize].pages.unlink(s, idx);
        self.drop_if_empty(b);
    }

    /// A new empty bucket for `freq`, linked between `prev` and `next`.
    fn new_bucket(&mut self, freq: u64, prev: u32, next: u32) -> u32 {
        let b = Bucket { freq, pages: List::default(), prev, next };
        let idx = if self.free != NIL {
            let idx = self.free;
            self.free = self.buckets[idx as usize].next;
            self.buckets[idx as usize] = b;
            idx
        } else {
            self.buckets.push(b);
            (self.buckets.len() - 1) as u32
        };
        if prev != NIL {
            self.buckets[prev as usize].next = idx;
        } else {
            self.head = idx;
        }
        if next != NIL {
            self.buckets[next as usize].prev = idx;
        }
        idx
    }

    /// Unlinks bucket `b` if it has no pages left.
    fn drop_if_empty(&mut self, b: u32) {
        let bucket = &self.buckets[b as usize];
        if !bucket.pages.is_empty() {
            return;
        }
        let (prev, next) = (bucket.prev, bucket.next);
        if prev != NIL {
            self.buckets[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.buckets[next as usize].prev = prev;
        }
        self.buckets[b as usize].next = self.free;
        self.free = b;
    }

    /// Buckets allocated (for tests of the recycling).
    #[cfg(test)]
    fn allocated(&self) -> usize {
        self.buckets.len()
    }
}

pub struct Lfu {
    /// Each page's value is the index of its bucket.
    arena: Arena<u32>,
    chain: FreqChain,
    len: usize,
    capacity: usize,
}

impl Lfu {
    pub fn new(capacity: usize) -> Self {
        Lfu { arena: Arena::with_capacity(capacity), chain: FreqChain::default(), len: 0, capacity: capacity.max(1) }
    }

    /// Frequency of a resident key (for tests and debugging).
    pub fn freq(&self, key: u64) -> Option<u64> {
        self.arena.find(key).map(|idx| self.chain.freq(*self.arena.val(idx)))
    }
}

impl Replacement for Lfu {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(a.key) else { return false };
        self.chain.bump(&mut self.arena, idx);
        true
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        // A full cache gives its victim's node to the new page.
        let victim = if self.len >= self.capacity { self.chain.least_frequent() } else { None };
        if let Some(v) = victim {
            self.chain.leave(&mut self.arena, v);
        }
        let b = self.chain.one();
        let idx = match victim {
            Some(v) => {
                evicted.push(self.arena.rekey(v, a.key, b));
                v
            }
            None => {
                self.len += 1;
                self.arena.insert(a.key, b)
            }
        };
        self.chain.push(&mut self.arena, b, idx);
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        self.chain.leave(&mut self.arena, idx);
        self.arena.remove(idx);
        self.len -= 1;
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some()
    }
    fn len(&self) -> usize {
        self.len
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn victim(&self) -> Option<u64> {
        if self.len < self.capacity {
            return None;
        }
        self.chain.least_frequent().map(|idx| self.arena.key(idx))
    }
}

fn make(_spec: &Spec, ctx: &BuildCtx) -> Result<Lfu, SpecError> {
    Ok(Lfu::new(ctx.capacity))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lfu",
    about: "least frequently used, ties to the least recent (libCacheSim LFU)",
    params: &[],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::run_keys;

    #[test]
    fn evicts_least_frequent_then_least_recent() {
        let mut l = Lfu::new(3);
        // 1 2 3 fill (all f=1). 1 hit -> f=2; 2 hit -> f=2.
        // 4: lowest f=1 is only 3 -> evict 3.
        // 5: f=1 holds only 4 -> evict 4.
        // 3: f=1 holds only 5 -> evict 5. 3 hit -> f=2.
        // 6: f=1 empty; f=2 holds 1 (reached f=2 first), 2, 3 -> evict 1.
        let hits = run_keys(&mut l, &[1, 2, 1, 2, 3, 4, 5, 3, 3, 6]);
        assert_eq!(hits, vec![false, false, true, true, false, false, false, false, true, false]);
        assert!(!l.contains(1));
        assert_eq!(l.freq(2), Some(2));
        assert_eq!(l.freq(3), Some(2));
        assert_eq!(l.freq(6), Some(1));
        // 2 hit -> f=3. 7 evicts 6 (f=1). 8 evicts 7. 9 evicts 8, 3 hit -> 3.
        // 10: f=1 holds 9 -> evict. Now 2 (f=3), 3 (f=3): 11 evicts 10, then 12 evicts 11.
        assert_eq!(
            run_keys(&mut l, &[2, 7, 8, 9, 3, 10, 11, 12]),
            vec![true, false, false, false, true, false, false, false]
        );
        assert_eq!(l.freq(2), Some(3));
        assert_eq!(l.freq(3), Some(3));
        // Tie at f=4: raise 3 then 2 to f=4, and 12 past them to f=5; the next
        // miss must evict 3, the page that reached the lowest frequency first.
        assert_eq!(run_keys(&mut l, &[3, 2, 12, 12, 12, 12, 13]), vec![true, true, true, true, true, true, false]);
        assert_eq!(l.freq(12), Some(5));
        assert!(l.contains(2) && !l.contains(3), "3 reached f=4 first, so it is the victim");
        let mut ev = Vec::new();
        assert!(l.remove(2, &mut ev) && !l.remove(2, &mut ev));
        assert_eq!(run_keys(&mut l, &[14, 15]), vec![false, false]);
        assert!(l.contains(12) && l.contains(14) && l.contains(15) && !l.contains(13));
    }

    /// The chain against the rule spelt out: each page's frequency and the
    /// access at which it reached it; the victim is the least (frequency,
    /// access). Skewed keys make hot pages sit alone in their buckets (which
    /// then move up in place) next to shared buckets.
    #[test]
    fn victims_follow_the_rule_spelt_out() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
        let mut l = Lfu::new(20);
        let mut model: std::collections::HashMap<u64, (u64, usize)> = Default::default();
        let mut evicted = Vec::new();
        for i in 0..20_000 {
            let k = (rng.gen::<f64>().powi(4) * 200.0) as u64;
            let a = crate::policy::testing::read(k, i as u64);
            let expected = model.iter().min_by_key(|(_, &fa)| fa).map(|(&k, _)| k);
            assert_eq!(l.victim().is_some(), model.len() == 20);
            if let Some(v) = l.victim() {
                assert_eq!(Some(v), expected, "victim at access {i}");
            }
            evicted.clear();
            if l.touch(&a, false, &mut evicted) {
                model.get_mut(&k).unwrap().0 += 1;
                model.get_mut(&k).unwrap().1 = i;
            } else {
                l.insert(&a, false, &mut evicted);
                for e in &evicted {
                    model.remove(e);
                }
                model.insert(k, (1, i));
            }
            assert_eq!(l.freq(k), Some(model[&k].0));
        }
    }

    #[test]
    fn buckets_are_recycled() {
        let mut l = Lfu::new(2);
        let keys: Vec<u64> = (0..1000).map(|i| if i % 3 == 0 { 1 } else { 100 + i }).collect();
        run_keys(&mut l, &keys);
        assert!(l.chain.allocated() <= 4, "bucket table grew to {}", l.chain.allocated());
    }
}
