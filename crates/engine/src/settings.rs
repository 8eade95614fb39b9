//! What an operator may change while a cache runs (`ssdcache set CACHE
//! KEY=VALUE…`), kept in the cache file's superblock so that a restart keeps
//! it: the policy, the admission options in front of it, and the cleaner's
//! bounds. A flag given to `serve` wins over the kept value for that run;
//! `set` wins over both from then on.

use serde::{Deserialize, Serialize};

use ssdcache::policy::tiered::cleaner::CleanerConfig;
use ssdcache::units::{format_bytes, parse_bytes, parse_duration_ns, parse_ratio};

use crate::cleaner::Pace;
use crate::engine::EngineConfig;

/// The kept values; `None`: not set (the mode's default, or the flag's).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq_cutoff: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promote_after: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_dirty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_age_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_rate: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_to: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_pace: Option<Pace>,
}

/// Every key `set` takes, with what it means (`ssdcache set --list`).
pub const KEYS: &[(&str, &str)] = &[
    ("mode", "the cache mode (running server only; leaving write-back writes every dirty segment back first): write-back, write-through, write-around, read-only, passthrough"),
    (
        "policy",
        "the policy (`serve --policy`): any of `ssdcache policies` that decides on each access, or pwc (write-back)",
    ),
    ("seq-cutoff", "a sequential stream longer than this bypasses the cache (`serve --seq-cutoff`), e.g. 4MiB"),
    ("promote-after", "a segment is filled at its N-th miss (`serve --promote-after`), e.g. 2"),
    ("max-dirty", "write-back: the cleaner keeps dirty slots under this share (`serve --max-dirty`), e.g. 20%"),
    ("dirty-age", "write-back: no segment stays dirty longer (`serve --dirty-age`), e.g. 10min"),
    ("clean-rate", "write-back: the cleaner writes back at most this many bytes per second (`serve --clean-rate`)"),
    ("clean-to", "write-back: once over max-dirty, the cleaner cleans down to this share (`serve --clean-to`), e.g. 15%"),
    ("clean-pace", "write-back: how the cleaner yields to requests (`serve --clean-pace`): adaptive (default), gap, full"),
];

/// Words that take a setting back to its default (`policy` only `default`).
const UNSET: &[&str] = &["none", "off", "default"];

/// The largest JSON text the superblock keeps (its settings area).
pub const MAX_SETTINGS_BYTES: usize = 1024;

impl CacheSettings {
    /// Applies `KEY=VALUE` (one line error naming the key and the value);
    /// `KEY=none` unsets it. Returns the key.
    pub fn assign(&mut self, assignment: &str) -> Result<&'static str, String> {
        let shown: String = assignment.chars().take(80).collect();
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| format!("`{shown}`: expected KEY=VALUE (keys: {})", key_names()))?;
        let (key, value) = (key.trim(), value.trim());
        let Some(&(name, _)) = KEYS.iter().find(|(k, _)| *k == key) else {
            let k: String = key.chars().take(40).collect();
            return Err(format!("unknown setting `{k}` (keys: {})", key_names()));
        };
        let unset = UNSET.contains(&value.to_ascii_lowercase().as_str());
        let bad = |e: String| format!("{key}={value}: {e}");
        match key {
            "policy" => {
                if value.is_empty() || value.len() > 512 {
                    return Err(bad("a policy spec of 1 to 512 characters".into()));
                }
                // (`none` is a policy, the one that caches nothing: only
                // `default` goes back to the mode's default)
                self.policy = (value != "default").then(|| value.to_string());
            }
            "seq-cutoff" => {
                self.seq_cutoff = if unset { None } else { Some(parse_bytes(value).map_err(|e| bad(e.to_string()))?) }
            }
            "promote-after" => {
                self.promote_after = if unset {
                    None
                } else {
                    match value.parse::<u32>() {
                        Ok(n) if n >= 1 => Some(n),
                        _ => return Err(bad("a whole number of misses from 1 to 4294967295".into())),
                    }
                }
            }
            "max-dirty" => {
                self.max_dirty = if unset { None } else { Some(parse_ratio(value).map_err(|e| bad(e.to_string()))?) }
            }
            "dirty-age" => {
                self.dirty_age_ns =
                    if unset { None } else { Some(parse_duration_ns(value).map_err(|e| bad(e.to_string()))?) }
            }
            "clean-rate" => {
                self.clean_rate = if unset { None } else { Some(parse_bytes(value).map_err(|e| bad(e.to_string()))?) }
            }
            "clean-to" => {
                self.clean_to = if unset { None } else { Some(parse_ratio(value).map_err(|e| bad(e.to_string()))?) }
            }
            "clean-pace" => self.clean_pace = if unset { None } else { Some(Pace::parse(value).map_err(bad)?) },
            "mode" => {
                return Err(format!("{key}={value}: a mode is the superblock's, not a setting (see `ssdcache set`)"))
            }
            _ => unreachable!("every key of KEYS is handled"),
        }
        Ok(name)
    }

    /// Sets `key` of `config` to this setting, or to its default when it is
    /// not set (a `set KEY=none` at run time).
    pub fn set_in(&self, key: &str, config: &mut EngineConfig) {
        let default = EngineConfig::default();
        match key {
            "policy" => config.policy = self.policy.clone().or(default.policy),
            "seq-cutoff" => config.seq_cutoff = self.seq_cutoff,
            "promote-after" => config.promote_after = self.promote_after,
            "max-dirty" => config.cleaner.max_dirty = self.max_dirty,
            "dirty-age" => config.cleaner.dirty_age = self.dirty_age_ns,
            "clean-rate" => config.cleaner.rate = self.clean_rate,
            "clean-to" => config.cleaner.clean_to = self.clean_to,
            "clean-pace" => config.clean_pace = self.clean_pace,
            _ => {}
        }
    }

    /// The JSON the superblock keeps; an error if it would not fit.
    pub fn to_bytes(&self) -> Result<Vec<u8>, String> {
        if *self == CacheSettings::default() {
            return Ok(Vec::new());
        }
        let b = serde_json::to_vec(self).map_err(|e| e.to_string())?;
        if b.len() > MAX_SETTINGS_BYTES {
            return Err(format!("the settings take {} bytes, more than the {MAX_SETTINGS_BYTES} kept", b.len()));
        }
        Ok(b)
    }

    /// Parses what [`to_bytes`](Self::to_bytes) wrote (empty: nothing set).
    pub fn from_bytes(b: &[u8]) -> Result<CacheSettings, String> {
        if b.is_empty() {
            return Ok(CacheSettings::default());
        }
        serde_json::from_slice(b).map_err(|e| format!("unreadable settings: {e}"))
    }

    /// The configuration `serve` starts with: each value given as a flag in
    /// `flags` (an option that is set), else the one kept here.
    pub fn under(&self, flags: &EngineConfig) -> EngineConfig {
        let mut c = flags.clone();
        c.policy = flags.policy.clone().or_else(|| self.policy.clone());
        c.seq_cutoff = flags.seq_cutoff.or(self.seq_cutoff);
        c.promote_after = flags.promote_after.or(self.promote_after);
        c.cleaner = CleanerConfig {
            max_dirty: flags.cleaner.max_dirty.or(self.max_dirty),
            dirty_age: flags.cleaner.dirty_age.or(self.dirty_age_ns),
            rate: flags.cleaner.rate.or(self.clean_rate),
            clean_to: flags.cleaner.clean_to.or(self.clean_to),
        };
        c.clean_pace = flags.clean_pace.or(self.clean_pace);
        c
    }

    /// One `KEY=VALUE` line per setting kept (for `set --list` and logs).
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(p) = &self.policy {
            out.push(format!("policy={p}"));
        }
        if let Some(b) = self.seq_cutoff {
            out.push(format!("seq-cutoff={}", format_bytes(b)));
        }
        if let Some(n) = self.promote_after {
            out.push(format!("promote-after={n}"));
        }
        if let Some(r) = self.max_dirty {
            out.push(format!("max-dirty={}%", r * 100.0));
        }
        if let Some(ns) = self.dirty_age_ns {
            out.push(format!("dirty-age={}s", ns as f64 / 1e9));
        }
        if let Some(b) = self.clean_rate {
            out.push(format!("clean-rate={}", format_bytes(b)));
        }
        if let Some(r) = self.clean_to {
            out.push(format!("clean-to={}%", r * 100.0));
        }
        if let Some(p) = self.clean_pace {
            out.push(format!("clean-pace={}", p.name()));
        }
        out
    }
}

fn key_names() -> String {
    KEYS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_parse_unset_and_refuse_with_the_key() {
        let mut s = CacheSettings::default();
        for a in [
            "policy=s3fifo",
            "seq-cutoff=4MiB",
            "promote-after=2",
            "max-dirty=20%",
            "dirty-age=10min",
            "clean-rate=8MiB",
        ] {
            s.assign(a).unwrap();
        }
        assert_eq!(s.policy.as_deref(), Some("s3fifo"));
        assert_eq!((s.seq_cutoff, s.promote_after, s.clean_rate), (Some(4 << 20), Some(2), Some(8 << 20)));
        assert_eq!(s.dirty_age_ns, Some(600_000_000_000));
        let back = CacheSettings::from_bytes(&s.to_bytes().unwrap()).unwrap();
        assert_eq!(back, s);
        s.assign("policy=none").unwrap();
        assert_eq!(s.policy.as_deref(), Some("none"), "the policy that caches nothing");
        s.assign("policy=default").unwrap();
        s.assign("max-dirty = off").unwrap();
        assert_eq!((s.policy.clone(), s.max_dirty), (None, None));
        for (bad, says) in [
            ("nokey", "expected KEY=VALUE"),
            ("colour=red", "unknown setting `colour`"),
            ("promote-after=0", "promote-after=0: a whole number"),
            ("max-dirty=150%", "max-dirty=150%: "),
            ("seq-cutoff=lots", "seq-cutoff=lots: "),
            ("dirty-age=soon", "dirty-age=soon: "),
        ] {
            let before = s.clone();
            let e = s.assign(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
            assert_eq!(s, before, "{bad}: nothing changed");
        }
        assert_eq!(CacheSettings::default().to_bytes().unwrap(), Vec::<u8>::new(), "nothing set: nothing kept");
        // Every key takes a value (and `none`) without a panic, and a value
        // set survives the superblock's JSON.
        let sample = |k: &str| match k {
            "policy" => "lru",
            "seq-cutoff" => "1MiB",
            "promote-after" => "3",
            "max-dirty" => "30%",
            "dirty-age" => "1min",
            "clean-rate" => "1MiB",
            "clean-to" => "10%",
            "clean-pace" => "gap",
            _ => "",
        };
        let mut every = CacheSettings::default();
        for (k, _) in KEYS.iter().filter(|(k, _)| *k != "mode") {
            assert!(!sample(k).is_empty(), "no sample value for `{k}`");
            assert_eq!(every.assign(&format!("{k}={}", sample(k))), Ok(*k));
        }
        assert_eq!(every.describe().len(), KEYS.len() - 1, "{:?}", every.describe());
        assert_eq!(CacheSettings::from_bytes(&every.to_bytes().unwrap()).unwrap(), every);
        assert!(every.assign("mode=write-through").unwrap_err().contains("superblock"));
        for (k, _) in KEYS.iter().filter(|(k, _)| !["mode", "policy"].contains(k)) {
            every.assign(&format!("{k}=none")).unwrap();
        }
        assert_eq!(every.describe(), ["policy=lru"]);
        assert!(s.assign("clean-pace=fast").unwrap_err().starts_with("clean-pace=fast: a pace"));
        let long = format!("policy={}", "x".repeat(600));
        assert!(s.assign(&long).unwrap_err().contains("1 to 512 characters"));
    }
}
