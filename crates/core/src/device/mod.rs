//! Device cost models: what a read or write costs on the device behind it.
//!
//! A [`Device`] answers each byte-addressed request with the service time it
//! costs and keeps the counters flash needs reported alongside hit ratios
//! (host writes, GC copies, erases, write amplification; DESIGN "Metrics").
//! [`nand`] holds the raw NAND timings from the papers, [`ftl_page`] a
//! page-mapping FTL over them; [`hdd`] is paper 001's disks, [`ssd`] paper
//! 004's black-box SSD, [`memory`] DRAM and NVRAM. Not yet wired into the simulator.

pub mod ftl_page;
pub mod hdd;
pub mod memory;
pub mod nand;
pub mod ssd;

pub use ftl_page::{FtlError, PageFtl};
pub use hdd::{Hdd, HddParams, HddPreset, UnknownHddPreset, HDD_PRESETS};
pub use memory::{Memory, MemoryParams, MemoryPreset, UnknownMemoryPreset, MEMORY_PRESETS};
pub use nand::{NandTiming, UnknownPreset, PRESETS};
pub use ssd::{Ssd, SsdParams, SsdPreset, UnknownSsdPreset, SSD_PRESETS};

use crate::Nanos;
use serde::Serialize;

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

/// What a device did, in device pages and time.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeviceStats {
    pub host_page_reads: u64,
    pub host_page_writes: u64,
    /// Page programs the device did on its own (GC copies), not asked by the host.
    pub extra_page_writes: u64,
    pub erases: u64,
    /// (host + extra) / host page writes; 0 when the host wrote nothing.
    pub write_amplification: f64,
    /// Pages of requests past the end of the device: ignored, cost nothing.
    pub out_of_range_pages: u64,
    pub read_time: Nanos,
    pub write_time: Nanos,
    /// Time spent on GC copies (read + program of each copied page).
    pub extra_write_time: Nanos,
    pub erase_time: Nanos,
}

impl DeviceStats {
    /// Fills in the derived fields; devices call this in [`Device::stats`].
    pub fn finish(mut self) -> Self {
        self.write_amplification = if self.host_page_writes == 0 {
            0.0
        } else {
            (self.host_page_writes + self.extra_page_writes) as f64 / self.host_page_writes as f64
        };
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

    #[test]
    fn write_amplification_is_derived() {
        let s = DeviceStats { host_page_writes: 4, extra_page_writes: 2, ..Default::default() }.finish();
        assert_eq!(s.write_amplification, 1.5);
        assert_eq!(DeviceStats::default().finish().write_amplification, 0.0);
    }
}
