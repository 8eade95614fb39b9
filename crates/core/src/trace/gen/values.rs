//! The values workload specs take beyond the common ones of [`Spec`]: counts with
//! decimal suffixes (`10M`), arrival gaps (`exp(100us)`), size laws
//! (`4KiB:70%,64KiB:30%`) and mixture weights, and the laws they stand for. (Specs themselves are parsed by
//! [`crate::spec`], the one parser of policies, devices and workloads.)

use crate::spec::{Spec, SpecError};
use crate::trace::Op;
use crate::units;
use rand::Rng as _;

/// The random number generator of every workload: portable and stable across platforms.
pub(crate) type Rng = rand_chacha::ChaCha8Rng;

/// Gaps between arrivals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Iat {
    Zero,
    Fixed(u64),
    /// Exponential with this mean in ns (Poisson arrivals).
    Exp(f64),
}

/// Request sizes in bytes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Sizes {
    Fixed(u32),
    /// Uniform over `lo, lo+step, …` up to `hi`.
    Range {
        lo: u32,
        hi: u32,
        step: u32,
    },
    /// `sizes[i]` with probability `cum[i] - cum[i-1]`.
    List {
        sizes: Vec<u32>,
        cum: Vec<f64>,
    },
}

impl Sizes {
    pub(super) fn sample(&self, rng: &mut Rng) -> u32 {
        match self {
            Sizes::Fixed(s) => *s,
            Sizes::Range { lo, hi, step } => lo + step * rng.gen_range(0..=(hi - lo) / step),
            Sizes::List { sizes, cum } => sizes[pick(cum, rng)],
        }
    }
    pub(super) fn max(&self) -> u32 {
        match self {
            Sizes::Fixed(s) => *s,
            Sizes::Range { hi, .. } => *hi,
            Sizes::List { sizes, .. } => *sizes.iter().max().unwrap(),
        }
    }
}

/// An index drawn with the probabilities given by cumulative weights `cum` (last = 1).
pub(super) fn pick(cum: &[f64], rng: &mut Rng) -> usize {
    let u: f64 = rng.gen();
    cum.iter().position(|&c| u < c).unwrap_or(cum.len() - 1)
}

/// A read with probability `read`, else a write.
pub(super) fn op(read: f64, rng: &mut Rng) -> Op {
    if rng.gen::<f64>() < read {
        Op::Read
    } else {
        Op::Write
    }
}

/// Workload values read from a [`Spec`].
pub(super) trait Values {
    /// A count: `1000`, `100k`, `10M`, `1.5G`, `1_000_000` (decimal suffixes).
    fn count(&self, key: &str) -> Result<u64, SpecError>;
    /// A count of at least 1.
    fn positive(&self, key: &str) -> Result<u64, SpecError>;
    /// `0` (every request at time 0), `100us` (fixed gap) or `exp(100us)` (exponential gaps with that mean).
    fn iat(&self, key: &str) -> Result<Iat, SpecError>;
    /// `4KiB` (fixed), `4KiB..64KiB` (uniform over whole 512-byte sectors, or over bytes when the
    /// bounds are not whole sectors) or `4KiB:70%,64KiB:30%` (weighted list; `/` separates too;
    /// without weights every size is equally likely).
    fn sizes(&self, key: &str) -> Result<Sizes, SpecError>;
    /// Mixture weights `90%/10%` or `9,1` (normalized), or `equal`.
    fn weights(&self, key: &str, n: usize) -> Result<Vec<f64>, SpecError>;
}

impl Values for Spec {
    /// A count: `1000`, `100k`, `10M`, `1.5G`, `1_000_000` (decimal suffixes).
    fn count(&self, key: &str) -> Result<u64, SpecError> {
        parse_count(self.raw(key)).ok_or_else(|| self.invalid(key, "expected a whole count like 1000, 100k, 10M or 1G"))
    }

    /// A count of at least 1.
    fn positive(&self, key: &str) -> Result<u64, SpecError> {
        match self.count(key)? {
            0 => Err(self.invalid(key, "must be at least 1")),
            n => Ok(n),
        }
    }

    /// `0` (every request at time 0), `100us` (fixed gap) or `exp(100us)` (exponential gaps with that mean).
    fn iat(&self, key: &str) -> Result<Iat, SpecError> {
        let v = self.raw(key);
        let lower = v.to_ascii_lowercase();
        let (exp, d) = match lower.strip_prefix("exp(").and_then(|r| r.strip_suffix(')')) {
            Some(inner) => (true, inner),
            None => (false, v),
        };
        let ns = units::parse_duration_ns(d).map_err(|e| self.invalid(key, e.why))?;
        Ok(match (exp, ns) {
            (_, 0) => Iat::Zero,
            (false, ns) => Iat::Fixed(ns),
            (true, ns) => Iat::Exp(ns as f64),
        })
    }

    /// `4KiB` (fixed), `4KiB..64KiB` (uniform over whole 512-byte sectors, or over bytes when the
    /// bounds are not whole sectors) or `4KiB:70%,64KiB:30%` (weighted list; `/` separates too;
    /// without weights every size is equally likely).
    fn sizes(&self, key: &str) -> Result<Sizes, SpecError> {
        let v = self.raw(key);
        let size = |s: &str| -> Result<u32, SpecError> {
            let b = units::parse_bytes(s).map_err(|e| self.invalid(key, e.why))?;
            u32::try_from(b).map_err(|_| self.invalid(key, format!("{s} is over the 4GiB a request may have")))
        };
        if let Some((lo, hi)) = v.split_once("..") {
            let (lo, hi) = (size(lo)?, size(hi)?);
            if lo > hi {
                return Err(self.invalid(key, "the range's lower bound is above its upper bound"));
            }
            let step = if lo % 512 == 0 && hi % 512 == 0 { 512 } else { 1 };
            return Ok(Sizes::Range { lo, hi, step });
        }
        let items: Vec<&str> = v.split([',', '/']).collect();
        if items.len() == 1 && !v.contains(':') {
            return Ok(Sizes::Fixed(size(v)?));
        }
        let weighted = items.iter().filter(|i| i.contains(':')).count();
        if weighted != 0 && weighted != items.len() {
            return Err(self.invalid(key, "give a weight to every size (4KiB:70%,64KiB:30%) or to none"));
        }
        let mut list = Vec::new();
        for item in items {
            let (s, w) = match item.split_once(':') {
                Some((s, w)) => (
                    s,
                    weight(w)
                        .ok_or_else(|| self.invalid(key, format!("weight {w:?} is not a number or percentage")))?,
                ),
                None => (item, 1.0),
            };
            list.push((size(s)?, w));
        }
        let weights: Vec<f64> = list.iter().map(|(_, w)| *w).collect();
        let cum = cumulative(&weights).ok_or_else(|| self.invalid(key, "the weights must not all be zero"))?;
        Ok(Sizes::List { sizes: list.into_iter().map(|(s, _)| s).collect(), cum })
    }

    /// Mixture weights `90%/10%` or `9,1` (normalized), or `equal`.
    fn weights(&self, key: &str, n: usize) -> Result<Vec<f64>, SpecError> {
        let v = self.raw(key);
        let weights: Vec<f64> = if v.eq_ignore_ascii_case("equal") {
            vec![1.0; n]
        } else {
            v.split([',', '/'])
                .map(|w| {
                    weight(w).ok_or_else(|| self.invalid(key, format!("weight {w:?} is not a number or percentage")))
                })
                .collect::<Result<_, _>>()?
        };
        if weights.len() != n {
            return Err(self.invalid(key, format!("{} weights for {n} components", weights.len())));
        }
        cumulative(&weights).ok_or_else(|| self.invalid(key, "the weights must not all be zero"))
    }
}

/// A count with an optional decimal suffix.
pub(super) fn parse_count(text: &str) -> Option<u64> {
    let t = text.trim().replace('_', "");
    let (num, mult) = match t.char_indices().last()? {
        (i, 'k' | 'K') => (&t[..i], 1e3),
        (i, 'm' | 'M') => (&t[..i], 1e6),
        (i, 'g' | 'G') => (&t[..i], 1e9),
        (i, 't' | 'T') => (&t[..i], 1e12),
        _ => (t.as_str(), 1.0),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let v = num.parse::<f64>().ok()? * mult;
    (v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < u64::MAX as f64).then_some(v as u64)
}

/// A non-negative weight: `70%` or `0.7` or `7`.
fn weight(text: &str) -> Option<f64> {
    let v = match text.strip_suffix('%') {
        Some(p) => p.parse::<f64>().ok()? / 100.0,
        None => text.parse::<f64>().ok()?,
    };
    (v.is_finite() && v >= 0.0).then_some(v)
}

/// Normalized running sums of `weights` (the last is exactly 1), or None if they sum to 0.
fn cumulative(weights: &[f64]) -> Option<Vec<f64>> {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let mut acc = 0.0;
    let mut cum: Vec<f64> = weights
        .iter()
        .map(|w| {
            acc += w;
            acc / total
        })
        .collect();
    *cum.last_mut().unwrap() = 1.0;
    Some(cum)
}
