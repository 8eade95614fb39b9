//! CLOCK (second chance / FIFO-reinsertion) with an n-bit reference counter.
//!
//! Pages sit in a FIFO ring. A hit adds one to the page's counter, saturating at
//! `2^bits - 1`. To make room, the hand looks at the oldest page: a page whose
//! counter is non-zero loses one count and goes back to the head (a second
//! chance); the first page found with a zero counter is evicted. A new page
//! enters at the head with counter `init_freq`.
//!
//! This is libCacheSim's `Clock` (`Clock.c`) exactly, including its parameters
//! `init-freq` (here `init_freq`, default 0) and `n-bit-counter` (here `bits`,
//! default 1): `bits=1, init_freq=0` is the classic one-bit CLOCK; `bits=2` is
//! libCacheSim's `Clock2`. Moving the oldest page to the head is the same as
//! advancing a clock hand past it, which is what this rule does (as libCacheSim
//! does not): the list is a ring that the hand splits into oldest (at the hand)
//! and newest (the hand's neighbour), so a second chance moves the hand, not
//! the page, and a new page enters right beside the hand.
//!
//! Differences from libCacheSim: libCacheSim accepts an `init_freq` above the
//! counter maximum (the page then starts above the cap); here that is a
//! parameter error. `bits=0` makes the counter always zero, i.e. FIFO.
//!
//! Memory per resident page: a 16-byte arena node (key, links), the counter in
//! a side array indexed by node (1 byte), and the arena's hash index.

use crate::list::{cover, upfront, Arena, List, NIL};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, ParamInfo, PolicyInfo, Replacement, Spec, SpecError};

pub struct Clock {
    arena: Arena<()>,
    /// Reference counter of the page in arena node `i` (kept beside the arena
    /// so a node stays 16 bytes).
    freq: Vec<u8>,
    /// The ring: a node's `next` is the next older page, the back's is the
    /// front (wrapping around).
    ring: List,
    /// The oldest page, where the hand looks next (`NIL` when the ring is empty);
    /// the next one (wrapping around) is the newest.
    hand: u32,
    capacity: usize,
    max_freq: u8,
    init_freq: u8,
}

/// Largest supported counter width.
pub const MAX_BITS: u32 = 8;

impl Clock {
    /// A CLOCK with a `bits`-bit counter (0..=8) and pages entering with `init_freq`
    /// (at most `2^bits - 1`).
    pub fn new(capacity: usize, bits: u32, init_freq: u8) -> Self {
        assert!(bits <= MAX_BITS, "counter wider than {MAX_BITS} bits");
        let max_freq = ((1u32 << bits) - 1) as u8;
        assert!(init_freq <= max_freq, "init_freq above the counter maximum");
        Clock {
            arena: Arena::with_capacity(capacity),
            freq: upfront(capacity),
            ring: List::new(),
            hand: NIL,
            capacity: capacity.max(1),
            max_freq,
            init_freq,
        }
    }

    /// The page that entered the ring (or got its second chance) right after
    /// `idx`, wrapping around: the ring's order runs against the list's `next`.
    #[inline]
    fn newer(&self, idx: u32) -> u32 {
        self.ring.prev_of(&self.arena, idx).or(self.ring.back()).expect("the ring holds idx")
    }

    /// Takes `idx` off the ring; if the hand was on it, the page that entered
    /// after it is the oldest now.
    fn unlink(&mut self, idx: u32) {
        if idx == self.hand {
            self.hand = if self.ring.len() == 1 { NIL } else { self.newer(idx) };
        }
        self.ring.unlink(&mut self.arena, idx);
    }

    /// Keys from the newest page to the oldest (the hand), for tests.
    #[cfg(test)]
    fn ring_keys(&self) -> Vec<u64> {
        let mut keys = Vec::with_capacity(self.ring.len());
        if self.hand != NIL {
            let mut idx = self.hand;
            for _ in 0..self.ring.len() {
                idx = self.ring.next_of(&self.arena, idx).or(self.ring.front()).expect("a ring");
                keys.push(self.arena.key(idx));
            }
        }
        keys
    }
}

impl Replacement for Clock {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        match self.arena.find(a.key) {
            Some(idx) => {
                let f = &mut self.freq[idx as usize];
                if *f < self.max_freq {
                    *f += 1;
                }
                true
            }
            None => false,
        }
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        if self.ring.len() >= self.capacity && self.hand != NIL {
            // Terminates: every pass over a page lowers its counter.
            loop {
                let idx = self.hand;
                let f = &mut self.freq[idx as usize];
                if *f == 0 {
                    self.unlink(idx);
                    evicted.push(self.arena.remove(idx));
                    break;
                }
                // A second chance: the page becomes the newest, the one that
                // entered after it the oldest.
                *f -= 1;
                self.hand = self.newer(idx);
            }
        }
        let idx = self.arena.insert(a.key, ());
        // Node indices are dense (freed nodes are reused), so this grows only
        // until the arena has reached its largest size.
        cover(&mut self.freq, idx as usize, self.arena.limit(), 0);
        self.freq[idx as usize] = self.init_freq;
        if self.hand == NIL {
            self.ring.push_front(&mut self.arena, idx);
            self.hand = idx;
        } else {
            // Newest: between the hand (oldest) and the page that was newest.
            self.ring.insert_after(&mut self.arena, self.hand, idx);
        }
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        self.unlink(idx);
        self.arena.remove(idx);
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some()
    }
    fn len(&self) -> usize {
        self.ring.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
}

fn make(spec: &Spec, ctx: &BuildCtx) -> Result<Clock, SpecError> {
    let bits = spec.uint("bits")?;
    if bits > MAX_BITS as u64 {
        return Err(spec.invalid("bits", format!("at most {MAX_BITS}")));
    }
    let bits = bits as u32;
    let max_freq = (1u64 << bits) - 1;
    let init_freq = spec.uint("init_freq")?;
    if init_freq > max_freq {
        return Err(spec.invalid("init_freq", format!("at most 2^bits - 1 = {max_freq}")));
    }
    Ok(Clock::new(ctx.capacity, bits, init_freq as u8))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "clock",
    about: "CLOCK / second chance with an n-bit counter (libCacheSim Clock)",
    params: &[
        ParamInfo {
            name: "bits",
            default: "1",
            about: "counter width (libCacheSim n-bit-counter); hits saturate at 2^bits-1, 0 = FIFO",
        },
        ParamInfo {
            name: "init_freq",
            default: "0",
            about: "counter value of a newly inserted page (libCacheSim init-freq)",
        },
    ],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::{assert_bad_values, run_keys};
    use crate::policy::Mode;

    #[test]
    fn second_chance() {
        let mut c = Clock::new(3, 1, 0);
        // Fill 1 2 3 (ring front..back: 3 2 1). Hit 1 -> counter 1.
        // 4: hand at 1 (counter 1) -> 0, goes to head; hand at 2 (0) -> evict 2.
        // ring: 4 1 3. 2 misses: hand at 3 (0) -> evict 3. ring: 2 4 1.
        // 1 hits (counter 1). 3 misses: hand at 1 (1) -> 0 to head; 4 (0) evicted.
        let hits = run_keys(&mut c, &[1, 2, 3, 1, 4, 2, 1, 3]);
        assert_eq!(hits, vec![false, false, false, true, false, false, true, false]);
        assert_eq!(c.ring_keys(), vec![3, 1, 2]);
    }

    #[test]
    fn two_bit_counter_and_init_freq() {
        // bits=2: counter saturates at 3. 1 hit three times -> 3 (a fourth hit stays 3).
        let mut c = Clock::new(2, 2, 0);
        assert_eq!(run_keys(&mut c, &[1, 2, 1, 1, 1, 1]), vec![false, false, true, true, true, true]);
        assert_eq!(c.freq[c.arena.find(1).unwrap() as usize], 3);
        // 3: hand at 1 (3) -> 2, head; 2 (0) evicted. ring 3 1.
        // 4: hand at 1 (2) -> 1, head; 3 (0) evicted. ring 4 1.
        // 5: hand at 1 (1) -> 0, head; 4 evicted. ring 5 1.
        // 6: hand at 1 (0) -> evicted.
        assert_eq!(run_keys(&mut c, &[3, 4, 5, 6, 1]), vec![false; 5]);
        // init_freq=1: every page gets one second chance, so with no hits it is FIFO.
        let mut c = Clock::new(2, 1, 1);
        assert_eq!(run_keys(&mut c, &[1, 2, 3, 1, 2]), vec![false, false, false, false, false]);
    }

    #[test]
    fn bad_params() {
        let ctx = BuildCtx { capacity: 8, mode: Mode::WriteBack, page_bytes: 4096 };
        assert_bad_values(
            &[
                "clock(bits=9)",
                "clock(bits=x)",
                "clock(init_freq=2)",
                "clock(bits=2,init_freq=4)",
                "clock(init_freq=-1)",
            ],
            &ctx,
        );
        assert!(build_spec("clock(bits=2,init_freq=3)", &ctx).is_ok());
        assert!(build_spec("clock(bits=0)", &ctx).is_ok());
        assert!(build_spec("clock(bits=8,init_freq=255)", &ctx).is_ok());
    }

    proptest::proptest! {
        /// The hand must choose as FIFO-reinsertion does, literally: a queue,
        /// the oldest page going back to the head for its second chance.
        #[test]
        fn same_choices_as_moving_pages_to_the_head(
            capacity in 1usize..9,
            bits in 0u32..3,
            init in 0u8..4,
            // key, and what happens: 0 remove, 1 a miss is not cached, else an access
            ops in proptest::collection::vec((0u64..20, 0u8..10), 1..500),
        ) {
            let max = ((1u32 << bits) - 1) as u8;
            let init = init.min(max);
            let mut c = Clock::new(capacity, bits, init);
            // newest first: key, counter
            let mut queue: std::collections::VecDeque<(u64, u8)> = Default::default();
            let mut ev = Vec::new();
            for (i, (key, what)) in ops.into_iter().enumerate() {
                ev.clear();
                let mut ev_ref = Vec::new();
                let at = queue.iter().position(|&(k, _)| k == key);
                if what == 0 {
                    proptest::prop_assert_eq!(c.remove(key, &mut ev), at.is_some());
                    queue.retain(|&(k, _)| k != key);
                } else {
                    let a = crate::policy::testing::read(key, i as u64);
                    let hit = c.touch(&a, false, &mut ev);
                    proptest::prop_assert_eq!(hit, at.is_some(), "key {} at {}", key, i);
                    if let Some(at) = at {
                        queue[at].1 = (queue[at].1 + 1).min(max);
                    } else if what > 1 {
                        c.insert(&a, false, &mut ev);
                        if queue.len() >= capacity {
                            loop {
                                let (k, f) = queue.pop_back().unwrap();
                                if f == 0 {
                                    ev_ref.push(k);
                                    break;
                                }
                                queue.push_front((k, f - 1));
                            }
                        }
                        queue.push_front((key, init));
                    }
                }
                proptest::prop_assert_eq!(&ev, &ev_ref, "evicted at {}", i);
                proptest::prop_assert_eq!(c.ring_keys(), queue.iter().map(|&(k, _)| k).collect::<Vec<_>>());
                for &(k, f) in &queue {
                    proptest::prop_assert_eq!(c.freq[c.arena.find(k).unwrap() as usize], f);
                }
            }
        }
    }

    #[test]
    fn compact_nodes() {
        // 16-byte node + 1-byte counter per resident page (plus the hash index).
        assert_eq!(std::mem::size_of::<crate::list::Node<()>>(), 16);
    }
}
