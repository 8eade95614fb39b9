//! A black-box SSD: sequential bandwidth and 4 KiB random IOPS, as paper 004
//! Table 1 describes a drive, without modelling its flash or FTL.
//!
//! # The model
//!
//! Reads and writes are tracked separately. A request is *sequential* when it
//! starts exactly where the previous request of the same kind (read or write)
//! ended; the first request of each kind is random. Then
//!
//! ```text
//! sequential: len / sequential bandwidth
//! random:     pages touched · 1 / random IOPS        (pages of page_bytes, 4 KiB)
//! ```
//!
//! rounded to the nearest nanosecond over the whole request. "Pages touched"
//! counts every `page_bytes`-aligned page the byte range overlaps, so an
//! unaligned 4 KiB request touches two. A large random request therefore costs
//! its page count in random operations (as the brief asks), which is
//! pessimistic for big random requests: a real drive would stream after the
//! first page.
//!
//! Counting: `host_page_reads` / `host_page_writes` count pages touched,
//! `read_time` / `write_time` the service times; erases, extra writes and
//! out-of-range pages stay 0 (no capacity is modelled). A zero-length request
//! costs and counts nothing and leaves the sequential state alone.
//!
//! # The numbers (paper 004 Table 1, "SSD의 성능", citing a KingSpec note)
//!
//! sequential read 250 MB/s, sequential write 170 MB/s, 4K random read
//! 35,000 IOPS, 4K random write 3,300 IOPS. MB is taken as 10^6 bytes (the
//! table does not say; vendors use decimal units) and 4K as 4096 bytes.

use super::UnknownPreset;
use crate::device::{Device, DeviceStats};
use crate::Nanos;
use serde::Serialize;
use std::str::FromStr;

const NS_PER_S: u128 = 1_000_000_000;

/// A black-box SSD's performance figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SsdParams {
    pub seq_read_bytes_per_s: u64,
    pub seq_write_bytes_per_s: u64,
    pub rand_read_iops: u64,
    pub rand_write_iops: u64,
    /// Size of one random operation (the "4K" of the IOPS figures).
    pub page_bytes: u64,
}

impl SsdParams {
    /// Looks a preset up by name (case, `_` and `-` ignored).
    pub fn preset(name: &str) -> Result<SsdParams, UnknownPreset> {
        SsdPreset::find(name).map(|p| p.params)
    }

    /// Pages of `page_bytes` that `len` bytes at `offset` touch.
    pub fn pages(&self, offset: u64, len: u64) -> u64 {
        super::pages_touched(self.page_bytes, offset, len)
    }

    fn seq_ns(len: u64, bytes_per_s: u64) -> Nanos {
        let rate = bytes_per_s.max(1) as u128;
        ((len as u128 * NS_PER_S + rate / 2) / rate).min(Nanos::MAX as u128) as Nanos
    }

    fn rand_ns(pages: u64, iops: u64) -> Nanos {
        let iops = iops.max(1) as u128;
        ((pages as u128 * NS_PER_S + iops / 2) / iops).min(Nanos::MAX as u128) as Nanos
    }

    pub fn seq_read_ns(&self, len: u64) -> Nanos {
        Self::seq_ns(len, self.seq_read_bytes_per_s)
    }
    pub fn seq_write_ns(&self, len: u64) -> Nanos {
        Self::seq_ns(len, self.seq_write_bytes_per_s)
    }
    pub fn rand_read_ns(&self, pages: u64) -> Nanos {
        Self::rand_ns(pages, self.rand_read_iops)
    }
    pub fn rand_write_ns(&self, pages: u64) -> Nanos {
        Self::rand_ns(pages, self.rand_write_iops)
    }
}

impl Default for SsdParams {
    /// Paper 004 Table 1.
    fn default() -> Self {
        SSD_PRESETS[0].params
    }
}

impl FromStr for SsdParams {
    type Err = UnknownPreset;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SsdParams::preset(s)
    }
}

/// A named SSD from the papers.
pub type SsdPreset = super::Named<SsdParams>;

impl SsdPreset {
    pub fn find(name: &str) -> Result<&'static SsdPreset, UnknownPreset> {
        Self::find_in("SSD", SSD_PRESETS, name)
    }
}

pub const SSD_PRESETS: &[SsdPreset] = &[SsdPreset {
    name: "paper004",
    params: SsdParams {
        seq_read_bytes_per_s: 250_000_000,
        seq_write_bytes_per_s: 170_000_000,
        rand_read_iops: 35_000,
        rand_write_iops: 3_300,
        page_bytes: 4096,
    },
    source: "paper 004 Table 1 (MB = 10^6 B assumed)",
}];

/// A black-box SSD remembering where the last read and the last write ended.
#[derive(Clone, Debug)]
pub struct Ssd {
    params: SsdParams,
    last_read_end: Option<u64>,
    last_write_end: Option<u64>,
    stats: DeviceStats,
}

impl Ssd {
    pub fn new(params: SsdParams) -> Self {
        Ssd { params, last_read_end: None, last_write_end: None, stats: DeviceStats::default() }
    }

    pub fn params(&self) -> &SsdParams {
        &self.params
    }
}

impl Default for Ssd {
    fn default() -> Self {
        Ssd::new(SsdParams::default())
    }
}

impl Device for Ssd {
    fn read(&mut self, offset: u64, len: u64) -> Nanos {
        if len == 0 {
            return 0;
        }
        let pages = self.params.pages(offset, len);
        let t = if self.last_read_end == Some(offset) {
            self.params.seq_read_ns(len)
        } else {
            self.params.rand_read_ns(pages)
        };
        self.last_read_end = Some(offset.saturating_add(len));
        self.stats.host_page_reads = self.stats.host_page_reads.saturating_add(pages);
        self.stats.read_time = self.stats.read_time.saturating_add(t);
        t
    }

    fn write(&mut self, offset: u64, len: u64) -> Nanos {
        if len == 0 {
            return 0;
        }
        let pages = self.params.pages(offset, len);
        let t = if self.last_write_end == Some(offset) {
            self.params.seq_write_ns(len)
        } else {
            self.params.rand_write_ns(pages)
        };
        self.last_write_end = Some(offset.saturating_add(len));
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
    fn preset_is_table_1() {
        let p: SsdParams = "paper004".parse().unwrap();
        assert_eq!(p, SsdParams::default());
        assert_eq!(p, SsdParams::preset(" Paper_004 ").unwrap());
        assert_eq!((p.seq_read_bytes_per_s, p.seq_write_bytes_per_s), (250_000_000, 170_000_000));
        assert_eq!((p.rand_read_iops, p.rand_write_iops, p.page_bytes), (35_000, 3_300, 4096));
    }

    #[test]
    fn bad_name_fails_clearly() {
        let e = "x25e".parse::<SsdParams>().unwrap_err();
        assert_eq!(e.name, "x25e");
        let msg = e.to_string();
        assert!(msg.contains("SSD") && msg.contains("\"x25e\"") && msg.contains("paper004"), "{msg}");
        assert!("".parse::<SsdParams>().is_err());
    }

    #[test]
    fn sequential_vs_random() {
        let mut d = Ssd::default();
        // First read: random, one page: 1 s / 35,000 = 28,571.43 ns.
        assert_eq!(d.read(0, 4096), 28_571);
        // Sequential read of 1 MiB: 1,048,576 / 250e6 s = 4,194,304 ns.
        assert_eq!(d.read(4096, 1 << 20), 4_194_304);
        // Random read of 16 KiB aligned: 4 pages = 114,285.71 ns.
        assert_eq!(d.read(1 << 30, 16384), 114_286);
        // Unaligned 4 KiB touches two pages: 57,142.86 ns.
        assert_eq!(d.read(100, 4096), 57_143);
        // Writes keep their own position: a write at 4196 is not sequential after the read.
        // Random write, one page: 1 s / 3,300 = 303,030.3 ns.
        assert_eq!(d.write(4196, 1), 303_030);
        // Sequential write of 170,000 B at 170 MB/s = 1 ms.
        assert_eq!(d.write(4197, 170_000), 1_000_000);
        // A read between two writes does not break the write stream.
        assert_eq!(d.read(0, 512), 28_571);
        assert_eq!(d.write(4197 + 170_000, 4096), 24_094); // 4096 / 170e6 s = 24,094.1 ns
        let s = d.stats();
        assert_eq!(s.host_page_reads, 1 + 256 + 4 + 2 + 1);
        assert_eq!(s.host_page_writes, 1 + 42 + 2);
        assert_eq!(s.read_time, 28_571 + 4_194_304 + 114_286 + 57_143 + 28_571);
        assert_eq!(s.write_time, 303_030 + 1_000_000 + 24_094);
        assert_eq!((s.erases, s.extra_page_writes, s.extra_write_time), (0, 0, 0));
    }

    #[test]
    fn zero_length_and_huge_requests_do_not_panic() {
        let mut d = Ssd::default();
        assert_eq!(d.read(7, 0), 0);
        assert_eq!(d.write(u64::MAX, 0), 0);
        assert_eq!(d.stats(), DeviceStats::default());
        assert!(d.read(u64::MAX, u64::MAX) > 0);
        assert!(d.write(0, u64::MAX) > 0);
        assert!(d.write(u64::MAX, u64::MAX) > 0); // sequential after saturating end
        assert!(d.read(1, u64::MAX) > 0);
        let z = SsdParams {
            seq_read_bytes_per_s: 0,
            seq_write_bytes_per_s: 0,
            rand_read_iops: 0,
            rand_write_iops: 0,
            page_bytes: 0,
        };
        let mut d = Ssd::new(z);
        assert!(d.read(0, 10) > 0 && d.read(10, 10) > 0);
        assert!(d.write(0, u64::MAX) > 0);
    }
}
