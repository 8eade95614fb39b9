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
//! advancing a clock hand past it, so the list below is the ring.
//!
//! Differences from libCacheSim: libCacheSim accepts an `init_freq` above the
//! counter maximum (the page then starts above the cap); here that is a
//! parameter error. `bits=0` makes the counter always zero, i.e. FIFO.
//!
//! Memory per resident page: a 16-byte arena node (key, links), the counter in
//! a side array indexed by node (1 byte), and the arena's hash index.

use crate::list::{reserve_for, upfront, Arena, List};
use crate::policy::mode::with_mode;
use crate::policy::{Access, BuildCtx, ParamInfo, Policy, PolicyInfo, Replacement, Rules, Spec, SpecError};

pub struct Clock {
    arena: Arena<()>,
    /// Reference counter of the page in arena node `i` (kept beside the arena
    /// so a node stays 16 bytes).
    freq: Vec<u8>,
    /// Front = head (newest), back = where the hand looks next.
    ring: List,
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
            capacity: capacity.max(1),
            max_freq,
            init_freq,
        }
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
        if self.ring.len() >= self.capacity {
            // Terminates: every pass over a page lowers its counter.
            while let Some(idx) = self.ring.back() {
                let f = &mut self.freq[idx as usize];
                if *f == 0 {
                    self.ring.unlink(&mut self.arena, idx);
                    evicted.push(self.arena.remove(idx));
                    break;
                }
                *f -= 1;
                self.ring.move_to_front(&mut self.arena, idx);
            }
        }
        let idx = self.arena.insert(a.key, ());
        // Node indices are dense (freed nodes are reused), so this grows only
        // until the arena has reached its largest size.
        if idx as usize >= self.freq.len() {
            reserve_for(&mut self.freq, idx as usize + 1, self.arena.limit());
            self.freq.resize(idx as usize + 1, 0);
        }
        self.freq[idx as usize] = self.init_freq;
        self.ring.push_front(&mut self.arena, idx);
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        self.ring.remove_key(&mut self.arena, key)
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

fn build(spec: &Spec, ctx: &BuildCtx, _: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    Ok(with_mode(make(spec, ctx)?, ctx))
}

fn rule(spec: &Spec, ctx: &BuildCtx) -> Result<Box<dyn Replacement>, SpecError> {
    Ok(Box::new(make(spec, ctx)?))
}

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
    use crate::policy::testing::{keys_of, run_keys};
    use crate::policy::{Mode, SpecError};

    #[test]
    fn second_chance() {
        let mut c = Clock::new(3, 1, 0);
        // Fill 1 2 3 (ring front..back: 3 2 1). Hit 1 -> counter 1.
        // 4: hand at 1 (counter 1) -> 0, goes to head; hand at 2 (0) -> evict 2.
        // ring: 4 1 3. 2 misses: hand at 3 (0) -> evict 3. ring: 2 4 1.
        // 1 hits (counter 1). 3 misses: hand at 1 (1) -> 0 to head; 4 (0) evicted.
        let hits = run_keys(&mut c, &[1, 2, 3, 1, 4, 2, 1, 3]);
        assert_eq!(hits, vec![false, false, false, true, false, false, true, false]);
        assert_eq!(keys_of(&c.ring, &c.arena), vec![3, 1, 2]);
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
        for spec in
            ["clock(bits=9)", "clock(bits=x)", "clock(init_freq=2)", "clock(bits=2,init_freq=4)", "clock(init_freq=-1)"]
        {
            match build_spec(spec, &ctx) {
                Err(SpecError::BadValue { .. }) => {}
                Err(e) => panic!("{spec}: wrong error {e}"),
                Ok(_) => panic!("{spec}: accepted"),
            }
        }
        assert!(build_spec("clock(bits=2,init_freq=3)", &ctx).is_ok());
        assert!(build_spec("clock(bits=0)", &ctx).is_ok());
        assert!(build_spec("clock(bits=8,init_freq=255)", &ctx).is_ok());
    }

    #[test]
    fn compact_nodes() {
        // 16-byte node + 1-byte counter per resident page (plus the hash index).
        assert_eq!(std::mem::size_of::<crate::list::Node<()>>(), 16);
    }
}
