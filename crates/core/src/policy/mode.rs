//! Write semantics shared by every page policy: dirty pages, write-back on
//! eviction, and the cache modes.

use super::{Access, Effects, Io, Policy, PolicyStats, Replacement};
use crate::trace::Op;
use hashbrown::HashSet;

/// How a cache treats writes and read misses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Writes go to the cache and stay dirty until evicted or drained.
    #[default]
    WriteBack,
    /// Writes go to the cache and to backing at once; nothing is ever dirty.
    WriteThrough,
    /// Writes go to backing; a cached copy is updated, a miss is not inserted.
    WriteAround,
    /// Paper 001's write-only cache: write-back for writes, and a read miss is
    /// served from backing without being inserted.
    WriteOnly,
    /// Caches reads only: a write goes to backing and invalidates a cached copy
    /// (paper 000's LRU SSD cache).
    ReadOnly,
}

pub const MODES: &[(&str, Mode, &str)] = &[
    ("write-back", Mode::WriteBack, "writes stay dirty in the cache until evicted or drained"),
    ("write-through", Mode::WriteThrough, "writes go to cache and backing; nothing is dirty"),
    ("write-around", Mode::WriteAround, "writes go to backing; cached copies updated, misses not inserted"),
    ("write-only", Mode::WriteOnly, "write-back for writes; read misses not inserted (paper 001 WO)"),
    ("read-only", Mode::ReadOnly, "only reads are cached; a write invalidates the cached copy"),
];

impl Mode {
    pub fn name(self) -> &'static str {
        MODES.iter().find(|(_, m, _)| *m == self).map(|(n, _, _)| *n).unwrap()
    }
    /// Whether writes leave dirty pages in the cache.
    pub fn keeps_dirty(self) -> bool {
        matches!(self, Mode::WriteBack | Mode::WriteOnly)
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        let s = s.to_ascii_lowercase().replace('_', "-");
        let alias = match s.as_str() {
            "wb" | "writeback" => "write-back",
            "wt" | "writethrough" => "write-through",
            "wa" | "writearound" => "write-around",
            "wo" | "writeonly" => "write-only",
            "ro" | "readonly" => "read-only",
            other => other,
        };
        MODES.iter().find(|(n, _, _)| *n == alias).map(|(_, m, _)| *m).ok_or_else(|| {
            format!("unknown mode {s:?} (known: write-back, write-through, write-around, write-only, read-only)")
        })
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A [`Replacement`] rule plus write semantics: the [`Policy`] every page policy becomes.
pub struct ModeCache<R: Replacement> {
    repl: R,
    mode: Mode,
    dirty: HashSet<u64>,
    evicted: Vec<u64>,
}

impl<R: Replacement> ModeCache<R> {
    pub fn new(repl: R, mode: Mode) -> Self {
        ModeCache { repl, mode, dirty: HashSet::new(), evicted: Vec::with_capacity(8) }
    }

    pub fn replacement(&self) -> &R {
        &self.repl
    }

    /// Inserts a page that missed, writing back what the rule evicts.
    fn insert(&mut self, a: &Access, dirty: bool, fx: &mut Effects) {
        if a.partial {
            fx.push(Io::ReadForWrite { key: a.key });
        }
        self.evicted.clear();
        self.repl.insert(a, dirty, &mut self.evicted);
        for &key in &self.evicted {
            let was_dirty = !self.dirty.is_empty() && self.dirty.remove(&key);
            fx.push(Io::Evict { key, dirty: was_dirty });
            if was_dirty {
                fx.push(Io::WriteBack { key, pages: 1 });
            }
        }
        fx.push(Io::CacheWrite { key: a.key });
        if dirty {
            self.dirty.insert(a.key);
        }
    }

    fn read(&mut self, a: &Access, fx: &mut Effects) {
        let dirty = self.dirty.contains(&a.key);
        fx.hit = self.repl.touch(a, dirty);
        if !fx.hit {
            fx.push(Io::Fetch { key: a.key, pages: 1 });
            if self.mode != Mode::WriteOnly {
                self.insert(a, false, fx);
            }
        }
    }

    fn write(&mut self, a: &Access, fx: &mut Effects) {
        match self.mode {
            Mode::WriteBack | Mode::WriteOnly => {
                fx.hit = self.repl.touch(a, true);
                if fx.hit {
                    fx.push(Io::CacheWrite { key: a.key });
                    self.dirty.insert(a.key);
                } else {
                    self.insert(a, true, fx);
                }
            }
            Mode::WriteThrough => {
                fx.hit = self.repl.touch(a, false);
                if fx.hit {
                    fx.push(Io::CacheWrite { key: a.key });
                } else {
                    self.insert(a, false, fx);
                }
                fx.push(Io::WriteThrough { key: a.key });
            }
            Mode::WriteAround => {
                fx.hit = self.repl.touch(a, false);
                if fx.hit {
                    fx.push(Io::CacheWrite { key: a.key });
                }
                fx.push(Io::WriteThrough { key: a.key });
            }
            Mode::ReadOnly => {
                fx.hit = self.repl.contains(a.key);
                if fx.hit {
                    self.repl.remove(a.key);
                    fx.push(Io::Invalidate { key: a.key, dirty: false });
                }
                fx.push(Io::WriteThrough { key: a.key });
            }
        }
    }

    fn trim(&mut self, a: &Access, fx: &mut Effects) {
        fx.hit = self.repl.remove(a.key);
        if fx.hit {
            let dirty = self.dirty.remove(&a.key);
            fx.push(Io::Invalidate { key: a.key, dirty });
        }
    }
}

impl<R: Replacement> Policy for ModeCache<R> {
    #[inline]
    fn access(&mut self, a: &Access, fx: &mut Effects) {
        match a.op {
            Op::Read => self.read(a, fx),
            Op::Write => self.write(a, fx),
            Op::Trim => self.trim(a, fx),
        }
    }

    fn drain(&mut self, fx: &mut Effects) {
        // Sorted, so write-back order (and anything charged by address) is deterministic.
        let mut keys: Vec<u64> = self.dirty.drain().collect();
        keys.sort_unstable();
        for key in keys {
            self.repl.cleaned(key);
            fx.push(Io::WriteBack { key, pages: 1 });
        }
    }

    fn stats(&self) -> PolicyStats {
        PolicyStats {
            capacity: self.repl.capacity() as u64,
            resident: self.repl.len() as u64,
            dirty: self.dirty.len() as u64,
            ghosts: self.repl.ghosts() as u64,
        }
    }

    fn needs_future(&self) -> bool {
        self.repl.needs_future()
    }
}
