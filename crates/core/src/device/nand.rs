//! NAND geometry and timings, with the papers' configurations as named presets.

use super::UnknownPreset;
use crate::Nanos;
use serde::Serialize;
use std::str::FromStr;

const US: Nanos = 1_000;
const KIB: u64 = 1024;

/// One NAND flash chip type: page and block geometry and operation latencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct NandTiming {
    pub page_bytes: u64,
    pub pages_per_block: u32,
    /// Reading one page.
    pub read_ns: Nanos,
    /// Programming one page.
    pub program_ns: Nanos,
    /// Erasing one block.
    pub erase_ns: Nanos,
}

impl NandTiming {
    pub fn block_bytes(&self) -> u64 {
        self.page_bytes * self.pages_per_block as u64
    }

    /// Looks a preset up by name (case, `_` and `-` ignored: `MLC_1` = `mlc1`).
    pub fn preset(name: &str) -> Result<NandTiming, UnknownPreset> {
        Preset::find(name).map(|p| p.timing)
    }
}

impl FromStr for NandTiming {
    type Err = UnknownPreset;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NandTiming::preset(s)
    }
}

/// A named configuration from the papers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub timing: NandTiming,
    /// Device size in blocks, where the source gives one.
    pub blocks: Option<u32>,
    pub source: &'static str,
}

impl Preset {
    pub fn find(name: &str) -> Result<&'static Preset, UnknownPreset> {
        super::find_preset("NAND", PRESETS, |p| p.name, name)
    }
}

const fn nand(page_bytes: u64, block_bytes: u64, read_us: u64, program_us: u64, erase_us: u64) -> NandTiming {
    NandTiming {
        page_bytes,
        pages_per_block: (block_bytes / page_bytes) as u32,
        read_ns: read_us * US,
        program_ns: program_us * US,
        erase_ns: erase_us * US,
    }
}

/// The presets. Paper 001 Table 1 gives the MLC rows 16 KB pages with 4 MB
/// (MLC_1) and 16 MB (MLC_2) blocks; DESIGN.md lists only their latencies, so
/// the sizes here are the paper's (no conflict, DESIGN is just silent).
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "slc",
        timing: nand(16 * KIB, 8192 * KIB, 65, 380, 500),
        blocks: None,
        source: "paper 001 Table 1, SLC",
    },
    Preset {
        name: "mlc1",
        timing: nand(16 * KIB, 4096 * KIB, 85, 400, 8500),
        blocks: None,
        source: "paper 001 Table 1, MLC_1",
    },
    Preset {
        name: "mlc2",
        timing: nand(16 * KIB, 16384 * KIB, 78, 1300, 500),
        blocks: None,
        source: "paper 001 Table 1, MLC_2",
    },
    Preset {
        name: "ull",
        timing: nand(4 * KIB, 256 * KIB, 12, 16, 1500),
        blocks: None,
        source: "paper 001 Table 1, ultra-low latency",
    },
    // Paper 002 Table 1 gives only the geometry (4096-byte pages, 128 pages a
    // block, 131072 blocks = 64 GiB, which the table calls "64 Gb"), 8 channels
    // (not modelled here) and the 200 µs program time. It has no read or erase
    // latency, although the brief says to take them from the table; we use
    // the usual large-block SLC datasheet values, 25 µs read and 1.5 ms
    // erase, as FlashSim-style configurations do. Override when it matters.
    Preset {
        name: "flashsim",
        timing: NandTiming {
            page_bytes: 4096,
            pages_per_block: 128,
            read_ns: 25 * US,
            program_ns: 200 * US,
            erase_ns: 1500 * US,
        },
        blocks: Some(131_072),
        source: "paper 002 Table 1 (read/erase assumed, not in the table)",
    },
];

/// What the FTLs share: which NAND pages a byte range touches on a logical
/// space of `logical` pages, and what reading them costs.
impl NandTiming {
    /// Pages `[first, end)` a byte range touches inside the logical space,
    /// and the count of pages past its end.
    pub(crate) fn span(&self, logical: u64, offset: u64, len: u64) -> (u64, u64, u64) {
        if len == 0 {
            return (0, 0, 0);
        }
        let pb = self.page_bytes;
        let first = offset / pb;
        let end = offset.saturating_add(len).div_ceil(pb);
        (first.min(logical), end.min(logical), end - first.max(logical).min(end))
    }

    /// Pages a byte range covers completely (a partly trimmed page still holds live data).
    pub(crate) fn whole_pages(&self, logical: u64, offset: u64, len: u64) -> std::ops::Range<u64> {
        let pb = self.page_bytes;
        offset.div_ceil(pb).min(logical)..(offset.saturating_add(len) / pb).min(logical)
    }

    /// Charges a host read of `[first, end)` (and `outside` pages past the end, free) to `stats`.
    pub(crate) fn read(&self, stats: &mut super::DeviceStats, (first, end, outside): (u64, u64, u64)) -> Nanos {
        let n = end - first;
        stats.out_of_range_pages += outside;
        stats.host_page_reads += n;
        stats.read_time += n * self.read_ns;
        n * self.read_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_parse() {
        let slc: NandTiming = "slc".parse().unwrap();
        assert_eq!(slc.page_bytes, 16384);
        assert_eq!(slc.pages_per_block, 512);
        assert_eq!((slc.read_ns, slc.program_ns, slc.erase_ns), (65_000, 380_000, 500_000));
        let m1 = NandTiming::preset("MLC_1").unwrap();
        assert_eq!((m1.pages_per_block, m1.read_ns, m1.program_ns, m1.erase_ns), (256, 85_000, 400_000, 8_500_000));
        let m2: NandTiming = "mlc2".parse().unwrap();
        assert_eq!((m2.pages_per_block, m2.read_ns, m2.program_ns, m2.erase_ns), (1024, 78_000, 1_300_000, 500_000));
        let ull: NandTiming = " ULL ".parse().unwrap();
        assert_eq!((ull.page_bytes, ull.block_bytes()), (4096, 256 * 1024));
        assert_eq!((ull.read_ns, ull.program_ns, ull.erase_ns), (12_000, 16_000, 1_500_000));
        let fs = Preset::find("flashsim").unwrap();
        assert_eq!(fs.timing.program_ns, 200_000);
        assert_eq!(fs.blocks.unwrap() as u64 * fs.timing.block_bytes(), 64 << 30);
    }

    #[test]
    fn every_preset_is_findable_and_sane() {
        for p in PRESETS {
            assert_eq!(NandTiming::preset(p.name).unwrap(), p.timing);
            assert!(p.timing.page_bytes > 0 && p.timing.pages_per_block > 0);
        }
    }

    #[test]
    fn bad_name_fails_clearly() {
        let e = "tlc".parse::<NandTiming>().unwrap_err();
        assert_eq!(e.name, "tlc");
        let msg = e.to_string();
        assert!(msg.contains("\"tlc\""), "{msg}");
        for name in ["slc", "mlc1", "mlc2", "ull", "flashsim"] {
            assert!(msg.contains(name), "{msg}");
        }
        assert!("".parse::<NandTiming>().is_err());
    }
}
