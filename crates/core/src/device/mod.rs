//! Device cost models: what a read or write costs on the device behind it.
//!
//! A [`Device`] answers each byte-addressed request with the service time it
//! costs and keeps the counters flash needs reported alongside hit ratios
//! (host writes, GC copies, erases, write amplification; DESIGN "Metrics").
//! [`nand`] holds the raw NAND timings from the papers, [`ftl_page`] a
//! page-mapping FTL over them, [`ftl_hybrid`] a log-block (BAST) hybrid FTL;
//! [`hdd`] is paper 001's disks, [`ssd`] paper 004's black-box SSD, [`memory`]
//! DRAM and NVRAM. [`catalog`] builds them from specs (`--device ftl(nand=mlc2)`);
//! the simulator charges a run's backing I/O to one.

pub mod catalog;
pub mod ftl_hybrid;
pub mod ftl_page;
pub mod hdd;
pub mod memory;
pub mod nand;
pub mod ssd;

pub use ftl_hybrid::{HybridFtl, HybridOptions, LogBlocks, DEFAULT_LOG_FRACTION};
pub use ftl_page::{FtlError, PageFtl};
pub use hdd::{Hdd, HddParams, HddPreset, HDD_PRESETS};
pub use memory::{Memory, MemoryParams, MemoryPreset, MEMORY_PRESETS};
pub use nand::{NandTiming, PRESETS};
pub use ssd::{Ssd, SsdParams, SsdPreset, SSD_PRESETS};

use crate::Nanos;
use serde::Serialize;
use thiserror::Error;

/// A preset name that names no preset.
#[derive(Debug, Error, PartialEq)]
#[error("unknown {kind} preset {name:?} (known: {known})")]
pub struct UnknownPreset {
    /// What was looked up: "NAND", "HDD", "SSD", "memory".
    pub kind: &'static str,
    pub name: String,
    pub known: String,
}

/// Finds a preset by name, ignoring case, `_`, `-` and surrounding spaces.
pub(crate) fn find_preset<P>(
    kind: &'static str,
    presets: &'static [P],
    name_of: fn(&P) -> &'static str,
    name: &str,
) -> Result<&'static P, UnknownPreset> {
    let norm: String = name.trim().chars().filter(|c| *c != '_' && *c != '-').map(|c| c.to_ascii_lowercase()).collect();
    presets.iter().find(|p| name_of(p) == norm).ok_or_else(|| UnknownPreset {
        kind,
        name: name.to_string(),
        known: presets.iter().map(name_of).collect::<Vec<_>>().join(", "),
    })
}

/// A named configuration from the papers: disks, SSDs, memories.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named<P: 'static> {
    pub name: &'static str,
    pub params: P,
    pub source: &'static str,
}

impl<P> Named<P> {
    /// Looks `name` up in `presets` (see [`find_preset`]); `kind` names them in errors.
    pub(crate) fn find_in(
        kind: &'static str,
        presets: &'static [Named<P>],
        name: &str,
    ) -> Result<&'static Named<P>, UnknownPreset> {
        find_preset(kind, presets, |p| p.name, name)
    }
}

/// Pages of `page_bytes` that `len` bytes at `offset` touch (0 for an empty request).
pub(crate) fn pages_touched(page_bytes: u64, offset: u64, len: u64) -> u64 {
    if len == 0 {
        return 0;
    }
    let pb = page_bytes.max(1);
    offset.saturating_add(len - 1) / pb - offset / pb + 1
}

/// A storage device as a cost model.
pub trait Device {
    /// Reads `len` bytes at byte `offset`; returns the service time.
    fn read(&mut self, offset: u64, len: u64) -> Nanos;
    /// Writes `len` bytes at byte `offset`; returns the service time,
    /// including any garbage collection the write triggered.
    fn write(&mut self, offset: u64, len: u64) -> Nanos;
    /// Tells the device the range holds no live data any more. Devices that
    /// do not care (disks) ignore it.
    fn trim(&mut self, _offset: u64, _len: u64) {}
    fn stats(&self) -> DeviceStats;
}

/// A flash translation layer over [`NandTiming`] pages: what [`PageFtl`] and
/// [`HybridFtl`] each do differently. Their [`Device`] behaviour, the same
/// for both, is written once below: byte ranges become page operations, every
/// page a range touches is one (a partial page is a full read or program),
/// pages past the logical end are counted in `out_of_range_pages` and cost
/// nothing, and a trim drops only the pages it covers completely.
pub trait Ftl {
    fn nand(&self) -> &NandTiming;
    /// Pages of the logical space.
    fn logical_pages(&self) -> u64;
    fn stats_mut(&mut self) -> &mut DeviceStats;
    fn stats_ref(&self) -> &DeviceStats;
    /// Programs logical page `lpn` (inside the logical space); returns its
    /// cost, including any GC or merge it needed.
    fn write_page(&mut self, lpn: u32) -> Nanos;
    /// Drops logical page `lpn` (inside the logical space).
    fn trim_page(&mut self, lpn: u32);
    /// Pages of the physical space (logical space plus spare).
    fn physical_pages(&self) -> u64;
    /// Logical pages that hold no data now: never written, or trimmed. Until
    /// they are written they act as extra spare for GC.
    fn unwritten_pages(&self) -> u64;

    /// Brings the device to the state `how` asks for before a run (see
    /// [`Precondition`]); what that wrote is kept in the `precondition_*`
    /// counters and left out of every other one.
    fn precondition(&mut self, how: Precondition) {
        let logical = self.logical_pages();
        if how == Precondition::None || logical == 0 {
            return;
        }
        for lpn in 0..logical {
            self.write_page(lpn as u32);
        }
        let mut last_wa = 1.0;
        if how == Precondition::Random {
            // Windows of one logical space of uniform random overwrites (seeded,
            // so runs repeat), until a window's write amplification is within
            // PRECONDITION_STEADY of the previous one's: GC has reached its steady state.
            use rand::{Rng, SeedableRng};
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(PRECONDITION_SEED);
            let mut prev = f64::INFINITY;
            for _ in 0..PRECONDITION_MAX_WINDOWS {
                let before = programs(self.stats_ref());
                for _ in 0..logical {
                    self.write_page(rng.gen_range(0..logical) as u32);
                }
                last_wa = (programs(self.stats_ref()) - before) as f64 / logical as f64;
                if (last_wa - prev).abs() <= PRECONDITION_STEADY * last_wa {
                    break;
                }
                prev = last_wa;
            }
        }
        let s = std::mem::take(self.stats_mut());
        let st = self.stats_mut();
        st.precondition_page_writes = programs(&s);
        st.precondition_host_page_writes = s.host_page_writes;
        st.precondition_erases = s.erases;
        st.precondition_write_amplification = last_wa;
    }
}

/// Seed of the random overwrites of `precondition=random`.
pub const PRECONDITION_SEED: u64 = 0x5EED_F1A5;
/// `precondition=random` stops when two successive windows' write
/// amplification differ by at most this share…
pub const PRECONDITION_STEADY: f64 = 0.01;
/// … or after this many windows (a small device's windows are noisy).
pub const PRECONDITION_MAX_WINDOWS: u32 = 16;

/// Pages the device programmed: the host's and its own copies.
fn programs(s: &DeviceStats) -> u64 {
    s.host_page_writes + s.extra_page_writes
}

/// How a flash device is prepared before a run, as MQSim preconditions its
/// SSDs: a fresh device has only erased blocks, so GC copies nothing until
/// the trace has written more than the spare, and never-written pages act as
/// spare for the whole run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precondition {
    /// A fresh device: every page erased.
    #[default]
    None,
    /// One sequential write of the whole logical space: every page holds
    /// data, GC finds whole-invalid blocks until the trace fragments them.
    Seq,
    /// The sequential fill, then uniform random overwrites of the whole
    /// logical space until GC reaches its steady state (see [`PRECONDITION_STEADY`]).
    Random,
}

impl Precondition {
    pub const NAMES: &'static [&'static str] = &["none", "seq", "random"];

    pub fn from_name(name: &str) -> Option<Precondition> {
        match name {
            "none" => Some(Precondition::None),
            "seq" => Some(Precondition::Seq),
            "random" => Some(Precondition::Random),
            _ => None,
        }
    }
}

impl<F: Ftl> Device for F {
    fn read(&mut self, offset: u64, len: u64) -> Nanos {
        let nand = *self.nand();
        let span = nand.span(self.logical_pages(), offset, len);
        nand.read(self.stats_mut(), span)
    }

    /// A partial-page write costs a full page program (no read-modify-write).
    fn write(&mut self, offset: u64, len: u64) -> Nanos {
        let (first, end, outside) = self.nand().span(self.logical_pages(), offset, len);
        self.stats_mut().out_of_range_pages += outside;
        (first..end).map(|lpn| self.write_page(lpn as u32)).sum()
    }

    /// Only pages the range covers completely are trimmed: a partly trimmed
    /// page still holds live data.
    fn trim(&mut self, offset: u64, len: u64) {
        for lpn in self.nand().whole_pages(self.logical_pages(), offset, len) {
            self.trim_page(lpn as u32);
        }
    }

    fn stats(&self) -> DeviceStats {
        let mut s = self.stats_ref().clone();
        s.physical_pages = self.physical_pages();
        s.logical_pages = self.logical_pages();
        s.unwritten_pages = self.unwritten_pages();
        s.finish()
    }
}

/// What a device did, in device pages and time.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeviceStats {
    pub host_page_reads: u64,
    pub host_page_writes: u64,
    /// Page programs the device did on its own (GC copies), not asked by the host.
    pub extra_page_writes: u64,
    pub erases: u64,
    /// Log-block FTL merges ([`ftl_hybrid`]) by kind; 0 on every other device.
    /// Switch: the log block becomes the data block (1 erase, no copies).
    pub switch_merges: u64,
    /// Partial: the log block is completed from the data block, then switched.
    pub partial_merges: u64,
    /// Full: the live pages of log and data block are copied to a fresh block.
    pub full_merges: u64,
    /// (host + extra) / host page writes; 0 when the host wrote nothing.
    pub write_amplification: f64,
    /// Pages of requests past the end of the device: ignored, cost nothing.
    pub out_of_range_pages: u64,
    #[serde(rename = "read_time_ns")]
    pub read_time: Nanos,
    #[serde(rename = "write_time_ns")]
    pub write_time: Nanos,
    /// Time spent on GC copies (read + program of each copied page).
    #[serde(rename = "extra_write_time_ns")]
    pub extra_write_time: Nanos,
    #[serde(rename = "erase_time_ns")]
    pub erase_time: Nanos,
    /// Flash only (0 elsewhere): pages of the physical space, …
    pub physical_pages: u64,
    /// … of the logical space, …
    pub logical_pages: u64,
    /// … and logical pages holding no data at the end of the run (never
    /// written, or trimmed): GC uses them as spare.
    pub unwritten_pages: u64,
    /// `physical_pages / logical_pages`: the nominal spare (`op=7%` → 1.075).
    pub physical_per_logical: f64,
    /// `unwritten_pages / logical_pages`.
    pub unwritten_share: f64,
    /// `physical_pages / (logical_pages - unwritten_pages)`: the spare GC
    /// effectively had at the end of the run.
    pub physical_per_written: f64,
    /// Pages programmed (host + GC copies) to precondition the device before
    /// the run; not in any counter above.
    pub precondition_page_writes: u64,
    /// Host page writes of the preconditioning.
    pub precondition_host_page_writes: u64,
    /// Erases of the preconditioning.
    pub precondition_erases: u64,
    /// `precondition=random`: write amplification of its last window of
    /// random overwrites (the steady state it reached); 1 after `seq`; 0 without.
    pub precondition_write_amplification: f64,
}

impl DeviceStats {
    /// Fills in the derived fields; devices call this in [`Device::stats`].
    pub fn finish(mut self) -> Self {
        self.write_amplification = if self.host_page_writes == 0 {
            0.0
        } else {
            (self.host_page_writes + self.extra_page_writes) as f64 / self.host_page_writes as f64
        };
        let per = |n: u64, d: u64| if d == 0 { 0.0 } else { n as f64 / d as f64 };
        self.physical_per_logical = per(self.physical_pages, self.logical_pages);
        self.unwritten_share = per(self.unwritten_pages, self.logical_pages);
        self.physical_per_written = per(self.physical_pages, self.logical_pages.saturating_sub(self.unwritten_pages));
        self
    }

    /// All time the device was busy (the cost-model execution time).
    pub fn total_time(&self) -> Nanos {
        self.read_time + self.write_time + self.extra_write_time + self.erase_time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> NandTiming {
        NandTiming { page_bytes: 4096, pages_per_block: 16, read_ns: 10, program_ns: 100, erase_ns: 1000 }
    }

    #[test]
    fn spare_is_reported_and_unwritten_pages_counted() {
        // 64 blocks × 16 pages, 900 logical pages; write 300 of them, trim 50.
        let mut d = PageFtl::with_logical_pages(tiny(), 64, 900).unwrap();
        d.write(0, 300 * 4096);
        d.trim(0, 50 * 4096);
        let s = d.stats();
        assert_eq!((s.physical_pages, s.logical_pages, s.unwritten_pages), (1024, 900, 650));
        assert_eq!(s.physical_per_logical, 1024.0 / 900.0);
        assert_eq!(s.unwritten_share, 650.0 / 900.0);
        assert_eq!(s.physical_per_written, 1024.0 / 250.0);
        let mut h = HybridFtl::with_logical_pages(tiny(), 64, 900, HybridOptions::default()).unwrap();
        h.write(0, 300 * 4096);
        h.write(0, 10 * 4096); // log copies replace data copies: still 300 written
        h.trim(0, 50 * 4096);
        let s = h.stats();
        assert_eq!((s.physical_pages, s.logical_pages, s.unwritten_pages), (1024, 900, 650));
        // Devices that are not flash report none of it.
        let s = Memory::new(MemoryParams::preset("dram").unwrap()).stats();
        assert_eq!((s.physical_pages, s.physical_per_logical), (0, 0.0));
    }

    #[test]
    fn preconditioning_fills_and_is_left_out_of_the_counters() {
        let fresh = PageFtl::with_logical_pages(tiny(), 64, 900).unwrap();
        assert_eq!(fresh.stats().unwritten_pages, 900);
        let mut none = fresh.clone();
        none.precondition(Precondition::None);
        assert_eq!(none.stats(), fresh.stats());
        let mut seq = fresh.clone();
        seq.precondition(Precondition::Seq);
        let s = seq.stats();
        assert_eq!((s.host_page_writes, s.extra_page_writes, s.erases, s.write_time), (0, 0, 0, 0));
        assert_eq!((s.unwritten_pages, s.precondition_host_page_writes, s.precondition_page_writes), (0, 900, 900));
        assert_eq!(s.precondition_write_amplification, 1.0);
        seq.check().unwrap();
        let mut rnd = fresh.clone();
        rnd.precondition(Precondition::Random);
        let s = rnd.stats();
        assert_eq!((s.host_page_writes, s.extra_page_writes, s.erases), (0, 0, 0));
        assert_eq!(s.unwritten_pages, 0);
        assert!(s.precondition_host_page_writes >= 3 * 900, "fill + at least two windows");
        assert!(s.precondition_host_page_writes <= (1 + PRECONDITION_MAX_WINDOWS as u64) * 900);
        assert!(s.precondition_page_writes > s.precondition_host_page_writes);
        rnd.check().unwrap();
        // Random overwrites on the preconditioned device start at the steady
        // state: the first window already has the WA the preconditioning
        // reached, where a sequentially filled device starts lower.
        let window = |d: &mut PageFtl| {
            use rand::{Rng, SeedableRng};
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
            for _ in 0..900 {
                d.write(rng.gen_range(0..900u64) * 4096, 4096);
            }
            d.stats().write_amplification
        };
        let steady = s.precondition_write_amplification;
        let (wa_rnd, wa_seq) = (window(&mut rnd), window(&mut seq));
        assert!((wa_rnd / steady - 1.0).abs() < 0.1, "{wa_rnd} vs steady {steady}");
        assert!(wa_seq < 0.9 * wa_rnd, "{wa_seq} vs {wa_rnd}");
        // The same for the hybrid FTL; seeded, so it repeats.
        let mut h = HybridFtl::with_logical_pages(tiny(), 64, 900, HybridOptions::default()).unwrap();
        let mut h2 = h.clone();
        h.precondition(Precondition::Random);
        h2.precondition(Precondition::Random);
        let s = h.stats();
        assert_eq!(s, h2.stats());
        assert_eq!((s.host_page_writes, s.full_merges, s.unwritten_pages), (0, 0, 0));
        assert!(s.precondition_write_amplification > 2.0, "{s:?}");
        h.check().unwrap();
    }

    #[test]
    fn write_amplification_is_derived() {
        let s = DeviceStats { host_page_writes: 4, extra_page_writes: 2, ..Default::default() }.finish();
        assert_eq!(s.write_amplification, 1.5);
        assert_eq!(DeviceStats::default().finish().write_amplification, 0.0);
    }
}
