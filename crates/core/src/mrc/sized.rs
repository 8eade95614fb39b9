//! The exact LRU curve at sizes given as users give them (`--cache 1%,64MiB`)
//! after a warm-up (`--warmup`): the same parsing and resolution as `sim`
//! ([`crate::sim::relative`]), for `ssdcache mrc` and Python's `mrc` alike.
//!
//! A share needs the footprint, which the profile's own pass counts (no pass
//! before it), except on traces with trims, where the profile counts a page
//! again after a trim: then a first pass counts distinct pages as `sim` does.
//! A warm-up given as a share or a duration needs a first pass too.

use super::{exact_lru_warm, Curve};
use crate::sim::flags::{CacheSize, Warmup};
use crate::sim::relative::{self, check_source, pages_of_size};
use crate::sim::source::TraceSource;
use crate::sim::SimError;

/// A curve with what its sizes and warm-up were.
pub struct SizedCurve {
    pub curve: Curve,
    /// Each point's share of the footprint, when given as one.
    pub shares: Vec<Option<f64>>,
    /// The `--warmup` text.
    pub warmup: Option<String>,
}

impl SizedCurve {
    /// A curve at sizes given in bytes, without a warm-up (a sampled curve).
    pub fn plain(curve: Curve) -> Self {
        SizedCurve { shares: vec![None; curve.points.len()], curve, warmup: None }
    }

    /// The curve as `ssdcache mrc --json` prints it: [`Curve`]'s fields, and
    /// `warmup`, and `cache_share` in every point.
    pub fn to_json(&self) -> Result<serde_json::Value, SimError> {
        let mut v = serde_json::to_value(&self.curve).map_err(|e| SimError::Config(format!("curve to JSON: {e}")))?;
        v["warmup"] = self.warmup.clone().into();
        if let Some(points) = v["points"].as_array_mut() {
            for (p, share) in points.iter_mut().zip(&self.shares) {
                p["cache_share"] = (*share).into();
            }
        }
        Ok(v)
    }
}

/// The exact LRU curve of `source` at `sizes` (or `points` sizes evenly
/// spaced up to the footprint), after `warmup`.
pub fn exact_lru_sized(
    source: &TraceSource,
    page_bytes: u64,
    sizes: Option<&[CacheSize]>,
    points: u64,
    warmup: Option<&Warmup>,
) -> Result<SizedCurve, SimError> {
    check_source(source, &[], warmup)?;
    let warmup_requests = relative::facts(source, page_bytes, &[], warmup)?.warmup_requests;
    let profile = exact_lru_warm(source, page_bytes, warmup_requests)?;
    let name = source.name();
    let (pages, shares) = match sizes {
        None => {
            let pages = profile.even_sizes(points);
            let shares = vec![None; pages.len()];
            (pages, shares)
        }
        Some(sizes) => {
            let any_share = sizes.iter().any(CacheSize::is_share);
            let footprint = if any_share && profile.counts.trims > 0 {
                check_source(source, sizes, None)?;
                relative::scan(source, page_bytes, true, None)?.footprint_pages.unwrap_or(0)
            } else {
                profile.counts.footprint_pages
            };
            let pages = sizes
                .iter()
                .map(|&s| pages_of_size(s, page_bytes, footprint, &name))
                .collect::<Result<Vec<u64>, SimError>>()?;
            let shares = sizes
                .iter()
                .map(|s| match s {
                    CacheSize::Share(s) => Some(s.value()),
                    CacheSize::Bytes(_) => None,
                })
                .collect();
            (pages, shares)
        }
    };
    Ok(SizedCurve { curve: profile.curve(name, &pages), shares, warmup: warmup.map(|w| w.text.clone()) })
}
