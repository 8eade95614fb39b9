//! Caches over more than one kind of memory: paper 003's DRAM + NVRAM buffer
//! cache ([`nvram`]: Read Volatile and Read Global, with Write Global and
//! Write Purge), and paper 000's persistent SSD cache in front of an HDD
//! ([`pwc`]).
//!
//! A tiered cache keeps each tier under its own replacement rule; [`rule`]
//! builds any classic rule by name for that, so a tier's rule is the same code
//! `ssdcache sim --policy NAME` runs.

pub mod nvram;
pub mod pwc;

use super::classic::{arc, belady, clock, fifo, lfu, lirs, lru, s3fifo, twoq};
use super::registry::PolicyInfo;
use super::Replacement;
use crate::units::parse_ratio;

/// The classic rules a tier can use, by their catalogue names.
pub const RULES: &[&str] = &["lru", "fifo", "clock", "lfu", "2q", "arc", "lirs", "s3fifo", "belady"];

/// The default of parameter `name` in a catalogue entry.
fn default_of(info: &PolicyInfo, name: &str) -> &'static str {
    info.params.iter().find(|p| p.name == name).map(|p| p.default).unwrap_or_else(|| {
        panic!("{} declares no parameter {name}", info.name);
    })
}

fn ratio_of(info: &PolicyInfo, name: &str) -> f64 {
    parse_ratio(default_of(info, name)).expect("catalogue defaults parse")
}

fn uint_of(info: &PolicyInfo, name: &str) -> u64 {
    default_of(info, name).parse().expect("catalogue defaults parse")
}

/// The classic rule `name` (one of [`RULES`]) for `capacity` pages, with the
/// defaults its catalogue entry declares (the `paper` variants). `None` for
/// an unknown name.
pub fn rule(name: &str, capacity: usize) -> Option<Box<dyn Replacement>> {
    let capacity = capacity.max(1);
    Some(match name {
        "lru" => Box::new(lru::Lru::new(capacity)),
        "fifo" => Box::new(fifo::Fifo::new(capacity)),
        "clock" => {
            let i = &clock::INFO;
            Box::new(clock::Clock::new(capacity, uint_of(i, "bits") as u32, uint_of(i, "init_freq") as u8))
        }
        "lfu" => Box::new(lfu::Lfu::new(capacity)),
        "2q" => {
            let i = &twoq::INFO;
            Box::new(twoq::TwoQ::new(
                capacity,
                twoq::TwoQSizes::paper(capacity, ratio_of(i, "kin"), ratio_of(i, "kout")),
            ))
        }
        "arc" => Box::new(arc::Arc::new(capacity, 1)),
        "lirs" => {
            let i = &lirs::INFO;
            let stack: f64 = default_of(i, "stack").parse().expect("catalogue defaults parse");
            let sizes = lirs::LirsSizes::paper(capacity, ratio_of(i, "hir"));
            Box::new(lirs::Lirs::new(capacity, lirs::Variant::Paper, sizes, stack))
        }
        "s3fifo" => {
            let i = &s3fifo::INFO;
            let mut cfg = s3fifo::S3FifoConfig::paper(capacity, ratio_of(i, "small"), ratio_of(i, "ghost"));
            cfg.threshold = uint_of(i, "threshold") as u8;
            cfg.max_freq = ((1u32 << uint_of(i, "bits")) - 1) as u8;
            Box::new(s3fifo::S3Fifo::new(capacity, cfg))
        }
        "belady" => Box::new(belady::Belady::new(capacity)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::{build, BuildCtx};
    use crate::policy::testing::read;
    use crate::policy::{Effects, Mode, NEVER};

    /// Each rule built here behaves as the catalogue's policy of the same name
    /// with its defaults (read-only traffic, where the mode plays no part).
    #[test]
    fn rules_equal_their_catalogue_policies() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let keys: Vec<u64> = (0..3000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 11) % 60
            })
            .collect();
        // next_use for belady
        let mut next = vec![NEVER; keys.len()];
        let mut seen = hashbrown::HashMap::new();
        for (i, &k) in keys.iter().enumerate().rev() {
            if let Some(j) = seen.insert(k, i as u64) {
                next[i] = j;
            }
        }
        for name in RULES {
            for capacity in [1, 7, 25] {
                let (mut policy, _) = build(name, &BuildCtx { capacity, mode: Mode::WriteBack, page_bytes: 4096 }).unwrap();
                let mut r = rule(name, capacity).unwrap();
                let mut fx = Effects::new();
                let mut evicted = Vec::new();
                for (i, &k) in keys.iter().enumerate() {
                    let a = crate::policy::Access { next_use: next[i], ..read(k, i as u64) };
                    fx.clear();
                    policy.access(&a, &mut fx);
                    let hit = r.touch(&a, false, &mut evicted) || {
                        r.insert(&a, false, &mut evicted);
                        false
                    };
                    assert_eq!(hit, fx.hit, "{name} at {capacity} pages, access {i}");
                }
            }
        }
        assert!(rule("mru", 4).is_none());
    }
}
