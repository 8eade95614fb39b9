//! The cache modes (`ssdcache create --mode`): how a cache treats writes and
//! misses. Fixed when a cache is created (the superblock records it),
//! because recovery depends on it.

use crate::datapath::WriteMode;

/// How a cache treats writes and misses (`ssdcache create --mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[repr(u16)]
pub enum CacheMode {
    /// Paper 000's PWC: hot segments cached by the caching-and-eviction
    /// procedure; writes to them stay on the SSD (dirty) until the next one.
    #[default]
    WriteBack = 0,
    /// The paper's baseline: a replacement policy (LRU by default) fills
    /// segments on every miss, in real time; writes go to the HDD and to the
    /// cached copy. Nothing is ever dirty.
    WriteThrough = 1,
    /// Like write-through, but a write miss is not cached (only reads fill).
    WriteAround = 2,
    /// No caching: every request goes to the backing store.
    Passthrough = 3,
    /// Paper 000's baseline as its §4 runs it ("LRU(SSD+HDD)": only reads
    /// are cached): a replacement policy fills a segment on every read miss,
    /// in real time; a write goes to the backing store only and drops the
    /// segment from the cache if it is cached (Open CAS calls this mode
    /// write-invalidate). Nothing is ever dirty. Not a read-only *export*:
    /// clients may write.
    ReadOnly = 4,
}

/// The modes, their names and what they do (`create --help`).
pub const CACHE_MODES: &[(&str, CacheMode)] = &[
    ("write-back", CacheMode::WriteBack),
    ("write-through", CacheMode::WriteThrough),
    ("write-around", CacheMode::WriteAround),
    ("passthrough", CacheMode::Passthrough),
    ("read-only", CacheMode::ReadOnly),
];

impl CacheMode {
    pub fn from_u16(v: u16) -> Option<CacheMode> {
        CACHE_MODES.iter().map(|(_, m)| *m).find(|m| *m as u16 == v)
    }

    /// The mode's name.
    pub fn name(self) -> &'static str {
        CACHE_MODES.iter().find(|(_, m)| *m == self).map(|(n, _)| *n).expect("every mode is listed")
    }

    /// The simulator's mode of a policy in this cache mode (`None`:
    /// passthrough, which runs none).
    pub fn sim_mode(self) -> Option<ssdcache::policy::Mode> {
        use ssdcache::policy::Mode;
        match self {
            CacheMode::WriteBack => Some(Mode::WriteBack),
            CacheMode::WriteThrough => Some(Mode::WriteThrough),
            CacheMode::WriteAround => Some(Mode::WriteAround),
            CacheMode::ReadOnly => Some(Mode::ReadOnly),
            CacheMode::Passthrough => None,
        }
    }

    /// How the data path writes in this mode.
    pub fn write_mode(self) -> WriteMode {
        match self {
            CacheMode::WriteBack => WriteMode::Back,
            CacheMode::ReadOnly => WriteMode::Invalidate,
            _ => WriteMode::Through,
        }
    }
}

impl std::str::FromStr for CacheMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.to_ascii_lowercase().replace('_', "-");
        let alias = match s.as_str() {
            "writeback" | "wb" | "pwc" => "write-back",
            "writethrough" | "wt" => "write-through",
            "writearound" | "wa" => "write-around",
            "pass-through" | "none" => "passthrough",
            "readonly" | "ro" | "write-invalidate" | "writeinvalidate" | "wi" => "read-only",
            other => other,
        };
        CACHE_MODES.iter().find(|(n, _)| *n == alias).map(|(_, m)| *m).ok_or_else(|| {
            let names: Vec<&str> = CACHE_MODES.iter().map(|(n, _)| *n).collect();
            format!("unknown cache mode `{s}` (one of: {})", names.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_names_parse_and_unknown_ones_are_refused() {
        for (name, m) in CACHE_MODES {
            assert_eq!(name.parse::<CacheMode>(), Ok(*m));
            assert_eq!(m.name(), *name);
        }
        assert_eq!("writethrough".parse::<CacheMode>(), Ok(CacheMode::WriteThrough));
        assert_eq!("write-invalidate".parse::<CacheMode>(), Ok(CacheMode::ReadOnly));
        // The superblock stores the mode as a number: existing caches keep theirs.
        let stored: Vec<u16> = CACHE_MODES.iter().map(|(_, m)| *m as u16).collect();
        assert_eq!(stored, [0, 1, 2, 3, 4]);
        assert_eq!(CacheMode::from_u16(4), Some(CacheMode::ReadOnly));
        assert_eq!(CacheMode::from_u16(5), None);
        assert!("write-sideways".parse::<CacheMode>().unwrap_err().contains("one of: write-back"));
    }
}
