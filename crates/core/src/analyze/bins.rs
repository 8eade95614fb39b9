//! Log-binned histograms: bin k holds the values v with ⌊ln v / ln base⌋ = k,
//! the binning of libCacheSim's trace analyzer (`reuse.cpp`), so that with the
//! same base the counts compare bin for bin.

use serde::Serialize;

/// The most bins a histogram may need: a base so close to 1 that more would
/// cover the values of a u64 is refused, as the counts (and the bins the
/// report lists) grow with the values (base 1.000001 needs 44 million).
pub const MAX_BINS: usize = 1 << 16;

/// Bins covering every u64 value at `base` (> 1), as [`LogHistogram::bin_of`] numbers them.
pub fn bins_needed(base: f64) -> f64 {
    ((u64::MAX as f64).ln() / base.ln()).floor() + 1.0
}

/// The least base (to 6 decimals) whose bins number at most [`MAX_BINS`].
pub fn min_base() -> f64 {
    (((u64::MAX as f64).ln() / MAX_BINS as f64).exp() * 1e6).ceil() / 1e6
}

/// Counts of positive values in logarithmic bins, and of zeros apart.
#[derive(Clone, Debug)]
pub struct LogHistogram {
    base: f64,
    ln_base: f64,
    counts: Vec<u64>,
    zero: u64,
}

/// One bin as reports show it: values in `lo..hi` (`hi` excluded).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bin {
    pub lo: f64,
    pub hi: f64,
    pub count: u64,
}

/// A histogram as reports show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Histogram {
    pub base: f64,
    /// Values equal to 0 (outside every bin).
    pub zero: u64,
    /// Non-empty and empty bins from the first to the last non-empty one.
    pub bins: Vec<Bin>,
}

impl LogHistogram {
    /// `base` must be finite and > 1 (checked by [`super::Options::check`]).
    pub fn new(base: f64) -> Self {
        LogHistogram { base, ln_base: base.ln(), counts: Vec::new(), zero: 0 }
    }

    /// The bin of `v` ≥ 1.
    #[inline]
    pub fn bin_of(&self, v: u64) -> usize {
        if self.base == 2.0 {
            v.ilog2() as usize // exact, and without a logarithm per access
        } else {
            ((v as f64).ln() / self.ln_base) as usize
        }
    }

    #[inline]
    pub fn add(&mut self, v: u64) {
        self.add_n(v, 1);
    }

    #[inline]
    pub fn add_n(&mut self, v: u64, n: u64) {
        if v == 0 {
            self.zero += n;
            return;
        }
        let k = self.bin_of(v);
        if k >= self.counts.len() {
            self.counts.resize(k + 1, 0);
        }
        self.counts[k] += n;
    }

    /// Values counted, zeros included.
    pub fn total(&self) -> u64 {
        self.zero + self.counts.iter().sum::<u64>()
    }

    pub fn report(&self) -> Histogram {
        let first = self.counts.iter().position(|&c| c > 0).unwrap_or(self.counts.len());
        let bins = (first..self.counts.len())
            .map(|k| Bin { lo: self.base.powi(k as i32), hi: self.base.powi(k as i32 + 1), count: self.counts[k] })
            .collect();
        Histogram { base: self.base, zero: self.zero, bins }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_base_keeps_the_bins_bounded() {
        // At the least base u64's values fit MAX_BINS bins (the last one's
        // bin number is below it); a millionth less, they would not.
        let least = min_base();
        assert!(bins_needed(least) <= MAX_BINS as f64, "{least}");
        assert!(bins_needed(least - 1e-6) > MAX_BINS as f64, "{least}");
        assert!(LogHistogram::new(least).bin_of(u64::MAX) < MAX_BINS);
    }

    #[test]
    fn values_fall_in_the_bin_their_logarithm_names() {
        for base in [2.0, 1.5, 1.25] {
            let mut h = LogHistogram::new(base);
            for v in 1..5000u64 {
                h.add(v);
            }
            h.add(0);
            let r = h.report();
            assert_eq!(r.zero, 1);
            assert_eq!(h.total(), 5000);
            for b in &r.bins {
                // brute force: count the values in [lo, hi)
                let want = (1..5000u64).filter(|&v| (v as f64) >= b.lo && (v as f64) < b.hi).count() as u64;
                assert_eq!(b.count, want, "base {base} bin {}..{}", b.lo, b.hi);
            }
        }
    }
}
