//! TinyLFU's frequency estimate (Einziger, Friedman & Manes, ACM TOS'17): a
//! count-min sketch of 4-bit counters behind a doorkeeper Bloom filter, aged
//! by halving. Shared by W-TinyLFU (`classic/wtinylfu.rs`) and the `tinylfu`
//! admitter (`admission/tinylfu.rs`).
//!
//! 4 rows of counters, width the next power of two ≥ the entries it is sized
//! for; an access first sets the key's doorkeeper bits, and only once it is
//! there increments the sketch; the estimate adds one for a doorkeeper hit.
//! Every access counts as a sample; after `10 × capacity` samples all counters
//! are halved, the doorkeeper is cleared and the sample count halved. Keys
//! are hashed with fixed seeds, so runs are deterministic.

/// A 64-bit mix (splitmix64's finaliser): the sketch's and doorkeeper's hash.
#[inline]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// TinyLFU's frequency estimate: doorkeeper + count-min sketch of 4-bit counters.
pub struct Sketch {
    /// 4 rows of `width` counters, two per byte.
    rows: Vec<u8>,
    width_mask: u64,
    door: Vec<u64>,
    door_mask: u64,
    samples: u64,
    sample_size: u64,
    /// The cache's capacity: the most entries the sketch is ever sized for.
    capacity: u64,
}

const ROWS: u64 = 4;
/// Entries a new sketch is sized for; it grows with the cache (see [`Sketch::ensure`]).
const INITIAL_ENTRIES: u64 = 1 << 12;
const DOOR_HASHES: u64 = 3;

impl Sketch {
    pub fn new(capacity: usize) -> Sketch {
        let capacity = capacity.max(1) as u64;
        Sketch::sized(capacity, capacity.min(INITIAL_ENTRIES))
    }

    /// A sketch for `entries` resident pages of a cache of `capacity`.
    fn sized(capacity: u64, entries: u64) -> Sketch {
        let width = entries.max(16).next_power_of_two();
        // The doorkeeper holds a sample's distinct keys (at most 10 × entries)
        // at about 10 bits each: ~2% false positives with 3 hashes when full.
        let door_bits = (entries.max(8) * 100).next_power_of_two();
        Sketch {
            rows: vec![0; (ROWS * width / 2) as usize],
            width_mask: width - 1,
            door: vec![0; (door_bits / 64) as usize],
            door_mask: door_bits - 1,
            samples: 0,
            sample_size: 10 * capacity,
            capacity,
        }
    }

    /// Grows the sketch as the cache fills, as Caffeine's `ensureCapacity`
    /// does: sized up front for the capacity, a huge cache on a small trace
    /// would take gigabytes (8 TiB of 4 KiB pages: 36 GB). Growing starts the
    /// counts afresh; a cache of at most 4,096 pages never grows.
    pub fn ensure(&mut self, resident: usize) {
        let width = self.width_mask + 1;
        if resident as u64 > width && width < self.capacity {
            *self = Sketch::sized(self.capacity, (2 * resident as u64).min(self.capacity));
        }
    }

    #[inline]
    fn slot(&self, key: u64, row: u64) -> usize {
        let h = mix(key ^ (row + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        (row * (self.width_mask + 1) + (h & self.width_mask)) as usize
    }

    #[inline]
    fn counter(&self, slot: usize) -> u8 {
        (self.rows[slot / 2] >> ((slot % 2) * 4)) & 0xf
    }

    #[inline]
    fn door_bit(&self, key: u64, i: u64) -> (usize, u64) {
        let h = mix(key.wrapping_add((i + 11).wrapping_mul(0xc2b2_ae3d_27d4_eb4f))) & self.door_mask;
        ((h / 64) as usize, 1 << (h % 64))
    }

    fn in_door(&self, key: u64) -> bool {
        (0..DOOR_HASHES).all(|i| {
            let (w, b) = self.door_bit(key, i);
            self.door[w] & b != 0
        })
    }

    pub fn estimate(&self, key: u64) -> u32 {
        let min = (0..ROWS).map(|r| self.counter(self.slot(key, r))).min().unwrap_or(0);
        min as u32 + self.in_door(key) as u32
    }

    pub fn record(&mut self, key: u64) {
        if self.in_door(key) {
            for r in 0..ROWS {
                let s = self.slot(key, r);
                if self.counter(s) < 15 {
                    self.rows[s / 2] += 1 << ((s % 2) * 4);
                }
            }
        } else {
            for i in 0..DOOR_HASHES {
                let (w, b) = self.door_bit(key, i);
                self.door[w] |= b;
            }
        }
        self.samples += 1;
        if self.samples >= self.sample_size {
            self.reset();
        }
    }

    /// Ages every count: halves the counters, clears the doorkeeper.
    fn reset(&mut self) {
        for b in &mut self.rows {
            *b = (*b >> 1) & 0x77;
        }
        self.door.iter_mut().for_each(|w| *w = 0);
        self.samples /= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sketch_counts_after_the_doorkeeper_and_ages() {
        let mut s = Sketch::new(64);
        assert_eq!(s.estimate(7), 0);
        s.record(7);
        assert_eq!(s.estimate(7), 1); // doorkeeper only
        for _ in 0..5 {
            s.record(7);
        }
        assert_eq!(s.estimate(7), 6);
        for _ in 0..40 {
            s.record(7);
        }
        assert_eq!(s.estimate(7), 16, "4-bit counters saturate at 15, plus the doorkeeper");
        // 10 × 64 samples: the next ones trigger a reset.
        for k in 1000..1600 {
            s.record(k);
        }
        assert!(s.estimate(7) <= 8, "{}", s.estimate(7));
    }
}
