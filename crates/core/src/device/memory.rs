//! Memory-like devices (DRAM, NVRAM) with fixed per-page latencies
//! (DESIGN "Devices": "NVRAM, DRAM: fixed small latencies").
//!
//! A request costs `pages touched · per-page latency` (read or write), where
//! pages are `page_bytes`-aligned (4 KiB by default; an unaligned request
//! counts every page it overlaps). No position, no sequential discount, no
//! capacity. `host_page_reads` / `host_page_writes` count pages touched;
//! erases, extra writes and out-of-range pages stay 0. A zero-length request
//! costs and counts nothing.
//!
//! # The numbers: assumptions, not from the papers
//!
//! None of the papers gives a number (paper 003 only says FRAM/MRAM/PRAM have
//! "DRAM-like access speed"). The presets are order-of-magnitude choices:
//!
//! - `dram`: 100 ns to read or write a 4 KiB page — DRAM's ~100 ns access
//!   latency, ignoring the bandwidth term (4 KiB at ~10 GB/s would add
//!   ~400 ns; override if that matters).
//! - `nvram`: read 300 ns, write 1 µs per 4 KiB page — PCM / Optane-class
//!   persistent memory: reads ~3× DRAM (Optane DC PMM random reads measure
//!   ~300 ns, Izraelevitz et al. 2019), writes slower still (PCM cell writes
//!   are several times its reads); 1 µs is our assumption.

use super::UnknownPreset;
use crate::device::{Device, DeviceStats};
use crate::Nanos;
use serde::Serialize;
use std::str::FromStr;

/// Per-page latencies of a memory device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MemoryParams {
    pub page_bytes: u64,
    pub read_ns_per_page: Nanos,
    pub write_ns_per_page: Nanos,
}

impl MemoryParams {
    /// Looks a preset up by name (case, `_` and `-` ignored).
    pub fn preset(name: &str) -> Result<MemoryParams, UnknownPreset> {
        MemoryPreset::find(name).map(|p| p.params)
    }

    /// Pages of `page_bytes` that `len` bytes at `offset` touch.
    pub fn pages(&self, offset: u64, len: u64) -> u64 {
        super::pages_touched(self.page_bytes, offset, len)
    }
}

impl FromStr for MemoryParams {
    type Err = UnknownPreset;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MemoryParams::preset(s)
    }
}

/// A named memory device.
pub type MemoryPreset = super::Named<MemoryParams>;

impl MemoryPreset {
    pub fn find(name: &str) -> Result<&'static MemoryPreset, UnknownPreset> {
        Self::find_in("memory", MEMORY_PRESETS, name)
    }
}

pub const MEMORY_PRESETS: &[MemoryPreset] = &[
    MemoryPreset {
        name: "dram",
        params: MemoryParams { page_bytes: 4096, read_ns_per_page: 100, write_ns_per_page: 100 },
        source: "assumed: DRAM access latency ~100 ns, bandwidth ignored",
    },
    MemoryPreset {
        name: "nvram",
        params: MemoryParams { page_bytes: 4096, read_ns_per_page: 300, write_ns_per_page: 1_000 },
        source: "assumed: PCM/Optane-class, read ~300 ns (Izraelevitz et al. 2019), write 1 µs",
    },
];

/// A fixed-latency memory device.
#[derive(Clone, Debug)]
pub struct Memory {
    params: MemoryParams,
    stats: DeviceStats,
}

impl Memory {
    pub fn new(params: MemoryParams) -> Self {
        Memory { params, stats: DeviceStats::default() }
    }

    pub fn dram() -> Self {
        Memory::new(MEMORY_PRESETS[0].params)
    }

    pub fn nvram() -> Self {
        Memory::new(MEMORY_PRESETS[1].params)
    }

    pub fn params(&self) -> &MemoryParams {
        &self.params
    }
}

impl Device for Memory {
    fn read(&mut self, offset: u64, len: u64) -> Nanos {
        let pages = self.params.pages(offset, len);
        let t = pages.saturating_mul(self.params.read_ns_per_page);
        self.stats.host_page_reads = self.stats.host_page_reads.saturating_add(pages);
        self.stats.read_time = self.stats.read_time.saturating_add(t);
        t
    }

    fn write(&mut self, offset: u64, len: u64) -> Nanos {
        let pages = self.params.pages(offset, len);
        let t = pages.saturating_mul(self.params.write_ns_per_page);
        self.stats.host_page_writes = self.stats.host_page_writes.saturating_add(pages);
        self.stats.write_time = self.stats.write_time.saturating_add(t);
        t
    }

    fn stats(&self) -> DeviceStats {
        self.stats.clone().finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_parse() {
        let d: MemoryParams = "dram".parse().unwrap();
        assert_eq!((d.page_bytes, d.read_ns_per_page, d.write_ns_per_page), (4096, 100, 100));
        let n = MemoryParams::preset(" NVRAM ").unwrap();
        assert_eq!((n.page_bytes, n.read_ns_per_page, n.write_ns_per_page), (4096, 300, 1_000));
        assert_eq!(*Memory::dram().params(), d);
        assert_eq!(*Memory::nvram().params(), n);
    }

    #[test]
    fn bad_name_fails_clearly() {
        let e = "sram".parse::<MemoryParams>().unwrap_err();
        assert_eq!(e.name, "sram");
        let msg = e.to_string();
        assert!(msg.contains("memory") && msg.contains("\"sram\""), "{msg}");
        assert!(msg.contains("dram") && msg.contains("nvram"), "{msg}");
        assert!("".parse::<MemoryParams>().is_err());
    }

    #[test]
    fn per_page_costs() {
        let mut m = Memory::nvram();
        assert_eq!(m.read(0, 4096), 300);
        assert_eq!(m.read(0, 1), 300);
        assert_eq!(m.read(4095, 2), 600); // straddles two pages
        assert_eq!(m.write(8192, 3 * 4096), 3_000);
        assert_eq!(m.write(8192, 3 * 4096), 3_000); // no position effects
        let s = m.stats();
        assert_eq!((s.host_page_reads, s.host_page_writes), (4, 6));
        assert_eq!((s.read_time, s.write_time), (1_200, 6_000));
        assert_eq!((s.erases, s.extra_page_writes, s.write_amplification), (0, 0, 1.0));
        let mut d = Memory::dram();
        assert_eq!(d.read(0, 1 << 20), 256 * 100);
        assert_eq!(d.write(0, 1 << 20), 256 * 100);
    }

    #[test]
    fn zero_length_and_huge_requests_do_not_panic() {
        let mut m = Memory::dram();
        assert_eq!(m.read(5, 0), 0);
        assert_eq!(m.write(u64::MAX, 0), 0);
        assert_eq!(m.stats(), DeviceStats::default());
        assert_eq!(m.read(u64::MAX, u64::MAX), 100);
        assert_eq!(m.write(0, u64::MAX), (u64::MAX / 4096 + 1) * 100);
        let mut z = Memory::new(MemoryParams { page_bytes: 0, read_ns_per_page: u64::MAX, write_ns_per_page: 0 });
        assert_eq!(z.read(0, u64::MAX), u64::MAX);
        assert_eq!(z.read(0, u64::MAX), u64::MAX);
        assert_eq!(z.stats().read_time, u64::MAX);
        assert_eq!(z.write(0, 10), 0);
    }
}
