//! A hard disk as a cost model: seek + rotational latency + transfer, with the
//! disks of paper 001 Table 2 as named presets.
//!
//! # The model
//!
//! The head sits where the previous request ended (at byte 0 before the first
//! request). A request costs
//!
//! ```text
//! sequential (starts exactly where the previous request ended):
//!     len / transfer
//! otherwise:
//!     seek(|offset − head|) + rotational + len / transfer
//! seek(d)      = min_seek + (avg_seek − min_seek) · 15/8 · sqrt(min(d, C) / C)   (d > 0)
//! rotational   = half a revolution = 60 s / rpm / 2
//! ```
//!
//! where `C` is the capacity in bytes. For two independent, uniformly placed
//! positions the normalised distance `x` has density `2(1 − x)` on `[0, 1]`,
//! so `E[sqrt(x)] = 8/15`: the factor 15/8 makes a uniformly random seek
//! average exactly `avg_seek`, while the shortest seek costs `min_seek`
//! (track to track) and a full stroke `min_seek + (avg_seek − min_seek)·15/8`
//! ([`HddParams::full_stroke_ns`]). Everything is deterministic: rotational
//! latency is always the average half revolution, never drawn at random.
//!
//! Counting: `host_page_reads` / `host_page_writes` count the 512-byte
//! sectors a request touches (partial sectors count whole); `read_time` /
//! `write_time` the service times. Erases and extra writes stay 0. A
//! zero-length request costs nothing, counts nothing and does not move the
//! head. Sectors past the capacity are ignored (counted in
//! `out_of_range_pages`, cost nothing); a request that crosses the end is cut
//! there.
//!
//! # The numbers (paper 001 Table 2)
//!
//! | RPM    | avg seek      | avg rotational | transfer (1 sector) | R/W latency       |
//! |--------|---------------|----------------|---------------------|-------------------|
//! | 4,200  | 4,000~15,000µs| 7,140 µs       | 226 µs              | 11,366~22,366 µs  |
//! | 5,400  |               | 5,560 µs       | 176 µs              | 9,736~20,736 µs   |
//! | 7,200  |               | 4,170 µs       | 132 µs              | 8,302~19,302 µs   |
//! | 10,000 |               | 3,000 µs       | 95 µs               | 7,095~18,095 µs   |
//! | 15,000 |               | 2,000 µs       | 63 µs               | 6,063~17,063 µs   |
//!
//! The table gives 63 sectors of 512 B per track; its "data transmission
//! latency" is one sector's time under the head (one revolution / 63), so the
//! transfer rate is `63 · 512 B` per revolution (4200 RPM: 2,257,920 B/s).
//! The seek column is one range, 4–15 ms, for every row (the R/W latency
//! column is seek + rotational + one sector at both ends of it), so each row
//! gives two presets: `rpmN` with the 4 ms average seek and `rpmNslow` with
//! 15 ms. The table has no track-to-track seek and no capacity: we assume a
//! 1 ms minimum seek and a 1 TiB disk. Override any field as needed.

use super::UnknownPreset;
use crate::device::{Device, DeviceStats};
use crate::Nanos;
use serde::Serialize;
use std::str::FromStr;

const US: Nanos = 1_000;
const NS_PER_S: u128 = 1_000_000_000;
/// Sector size the page counters use.
pub const SECTOR_BYTES: u64 = 512;

/// Geometry and timing of one disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct HddParams {
    pub rpm: u32,
    /// Average seek over uniformly random start and end positions.
    pub avg_seek_ns: Nanos,
    /// Shortest (track-to-track) seek: any non-zero, non-sequential distance.
    pub min_seek_ns: Nanos,
    /// Media transfer rate.
    pub transfer_bytes_per_s: u64,
    pub capacity_bytes: u64,
}

impl HddParams {
    /// Looks a preset up by name (case, `_` and `-` ignored: `RPM_7200` = `rpm7200`).
    pub fn preset(name: &str) -> Result<HddParams, UnknownPreset> {
        HddPreset::find(name).map(|p| p.params)
    }

    /// The same disk with another capacity (the seek curve scales with it).
    pub fn with_capacity(mut self, capacity_bytes: u64) -> Self {
        self.capacity_bytes = capacity_bytes;
        self
    }

    /// Half a revolution: `60 s / rpm / 2`.
    pub fn rotational_ns(&self) -> Nanos {
        30_000_000_000 / self.rpm.max(1) as u64
    }

    /// Seek over the whole disk: `min + (avg − min) · 15/8`.
    pub fn full_stroke_ns(&self) -> Nanos {
        self.seek_ns(self.capacity_bytes.max(1))
    }

    /// Seek time over `distance` bytes (0 for 0; see the module docs).
    pub fn seek_ns(&self, distance: u64) -> Nanos {
        if distance == 0 {
            return 0;
        }
        let cap = self.capacity_bytes.max(1);
        let frac = distance.min(cap) as f64 / cap as f64;
        let span = self.avg_seek_ns.saturating_sub(self.min_seek_ns) as f64;
        self.min_seek_ns.saturating_add((span * 15.0 / 8.0 * frac.sqrt()).round() as Nanos)
    }

    /// Time to move `len` bytes past the head, rounded to the nearest ns.
    pub fn transfer_ns(&self, len: u64) -> Nanos {
        let rate = self.transfer_bytes_per_s.max(1) as u128;
        let t = (len as u128 * NS_PER_S + rate / 2) / rate;
        t.min(Nanos::MAX as u128) as Nanos
    }
}

impl FromStr for HddParams {
    type Err = UnknownPreset;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HddParams::preset(s)
    }
}

/// A named disk from the papers.
pub type HddPreset = super::Named<HddParams>;

impl HddPreset {
    pub fn find(name: &str) -> Result<&'static HddPreset, UnknownPreset> {
        Self::find_in("HDD", HDD_PRESETS, name)
    }
}

/// Paper 001 Table 2: 63 sectors of 512 B per track.
const TRACK_BYTES: u64 = 63 * SECTOR_BYTES;
/// Assumed: the table gives no track-to-track seek.
const MIN_SEEK_NS: Nanos = 1_000 * US;
/// Assumed: the table gives no capacity.
const CAPACITY: u64 = 1 << 40;

const fn disk(rpm: u32, avg_seek_us: u64) -> HddParams {
    HddParams {
        rpm,
        avg_seek_ns: avg_seek_us * US,
        min_seek_ns: MIN_SEEK_NS,
        transfer_bytes_per_s: TRACK_BYTES * rpm as u64 / 60,
        capacity_bytes: CAPACITY,
    }
}

const T2: &str = "paper 001 Table 2 (min seek 1 ms and 1 TiB assumed)";

/// The presets: each row of paper 001 Table 2 at both ends of its 4–15 ms
/// seek range.
pub const HDD_PRESETS: &[HddPreset] = &[
    HddPreset { name: "rpm4200", params: disk(4200, 4_000), source: T2 },
    HddPreset { name: "rpm5400", params: disk(5400, 4_000), source: T2 },
    HddPreset { name: "rpm7200", params: disk(7200, 4_000), source: T2 },
    HddPreset { name: "rpm10000", params: disk(10_000, 4_000), source: T2 },
    HddPreset { name: "rpm15000", params: disk(15_000, 4_000), source: T2 },
    HddPreset { name: "rpm4200slow", params: disk(4200, 15_000), source: T2 },
    HddPreset { name: "rpm5400slow", params: disk(5400, 15_000), source: T2 },
    HddPreset { name: "rpm7200slow", params: disk(7200, 15_000), source: T2 },
    HddPreset { name: "rpm10000slow", params: disk(10_000, 15_000), source: T2 },
    HddPreset { name: "rpm15000slow", params: disk(15_000, 15_000), source: T2 },
];

/// Sectors touched by `len` bytes at `offset` (0 for an empty request).
fn sectors(offset: u64, len: u64) -> u64 {
    super::pages_touched(SECTOR_BYTES, offset, len)
}

/// A disk with a head position.
#[derive(Clone, Debug)]
pub struct Hdd {
    params: HddParams,
    /// Where the previous request ended; `None` before the first.
    last_end: Option<u64>,
    stats: DeviceStats,
}

impl Hdd {
    pub fn new(params: HddParams) -> Self {
        Hdd { params, last_end: None, stats: DeviceStats::default() }
    }

    pub fn params(&self) -> &HddParams {
        &self.params
    }

    /// Service time of one request, moving the head; counts out-of-range
    /// sectors. Returns (time, sectors served).
    fn access(&mut self, offset: u64, len: u64) -> (Nanos, u64) {
        if len == 0 {
            return (0, 0);
        }
        let cap = self.params.capacity_bytes;
        let in_range = if offset >= cap { 0 } else { len.min(cap - offset) };
        let served = sectors(offset, in_range);
        self.stats.out_of_range_pages = self.stats.out_of_range_pages.saturating_add(sectors(offset, len) - served);
        if in_range == 0 {
            return (0, 0);
        }
        let mut t = self.params.transfer_ns(in_range);
        if self.last_end != Some(offset) {
            let head = self.last_end.unwrap_or(0);
            t = t
                .saturating_add(self.params.seek_ns(head.abs_diff(offset)))
                .saturating_add(self.params.rotational_ns());
        }
        self.last_end = Some(offset + in_range);
        (t, served)
    }
}

impl Device for Hdd {
    fn read(&mut self, offset: u64, len: u64) -> Nanos {
        let (t, n) = self.access(offset, len);
        self.stats.host_page_reads = self.stats.host_page_reads.saturating_add(n);
        self.stats.read_time = self.stats.read_time.saturating_add(t);
        t
    }

    fn write(&mut self, offset: u64, len: u64) -> Nanos {
        let (t, n) = self.access(offset, len);
        self.stats.host_page_writes = self.stats.host_page_writes.saturating_add(n);
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
    fn presets_match_table_2() {
        // (rpm, rotational µs, one-sector transfer µs, R/W latency µs at 4 ms / 15 ms seek)
        let rows = [
            (4200, 7_140, 226, 11_366, 22_366),
            (5400, 5_560, 176, 9_736, 20_736),
            (7200, 4_170, 132, 8_302, 19_302),
            (10_000, 3_000, 95, 7_095, 18_095),
            (15_000, 2_000, 63, 6_063, 17_063),
        ];
        for (rpm, rot, xfer, fast, slow) in rows {
            let p: HddParams = format!("rpm{rpm}").parse().unwrap();
            assert_eq!(p.rpm, rpm);
            // The table truncates to 10 µs / 1 µs; allow for it.
            assert!(p.rotational_ns().abs_diff(rot * US) < 10 * US, "{rpm}");
            assert!(p.transfer_ns(512).abs_diff(xfer * US) < US, "{rpm}");
            let total = p.avg_seek_ns + p.rotational_ns() + p.transfer_ns(512);
            assert!(total.abs_diff(fast * US) < 10 * US, "{rpm}: {total}");
            let s = HddParams::preset(&format!("RPM_{rpm}-slow")).unwrap();
            let total = s.avg_seek_ns + s.rotational_ns() + s.transfer_ns(512);
            assert!(total.abs_diff(slow * US) < 10 * US, "{rpm}: {total}");
        }
        let p = HddParams::preset("rpm4200").unwrap();
        assert_eq!(p.transfer_bytes_per_s, 2_257_920);
        assert_eq!(p.rotational_ns(), 7_142_857);
        assert_eq!(HddParams::preset("rpm15000").unwrap().transfer_bytes_per_s, 8_064_000);
    }

    #[test]
    fn every_preset_is_findable_and_sane() {
        for p in HDD_PRESETS {
            assert_eq!(HddParams::preset(p.name).unwrap(), p.params);
            assert!(p.params.min_seek_ns <= p.params.avg_seek_ns);
            assert!(p.params.transfer_bytes_per_s > 0 && p.params.capacity_bytes > 0);
        }
    }

    #[test]
    fn bad_name_fails_clearly() {
        let e = "rpm3600".parse::<HddParams>().unwrap_err();
        assert_eq!(e.name, "rpm3600");
        let msg = e.to_string();
        assert!(msg.contains("HDD") && msg.contains("\"rpm3600\""), "{msg}");
        for p in HDD_PRESETS {
            assert!(msg.contains(p.name), "{msg}");
        }
        assert!("".parse::<HddParams>().is_err());
    }

    #[test]
    fn seek_curve_endpoints_and_mean() {
        let p = HddParams::preset("rpm7200").unwrap().with_capacity(1 << 30);
        assert_eq!(p.seek_ns(0), 0);
        // Shortest seek: min_seek (plus a hair for one byte).
        assert!(p.seek_ns(1) - 1_000_000 < 200, "{}", p.seek_ns(1));
        // Full stroke: 1 ms + 3 ms · 15/8 = 6.625 ms; past the end clamps.
        assert_eq!(p.full_stroke_ns(), 6_625_000);
        assert_eq!(p.seek_ns(1 << 30), 6_625_000);
        assert_eq!(p.seek_ns(u64::MAX), 6_625_000);
        // A quarter of the disk: 1 + 3 · 15/8 · 0.5 = 3.8125 ms.
        assert_eq!(p.seek_ns(1 << 28), 3_812_500);
        // Mean over uniform pairs on a grid ≈ avg_seek.
        let n = 400u64;
        let cap = p.capacity_bytes;
        let mut sum = 0f64;
        for i in 0..n {
            for j in 0..n {
                let (a, b) = ((2 * i + 1) * cap / (2 * n), (2 * j + 1) * cap / (2 * n));
                sum += p.seek_ns(a.abs_diff(b)) as f64;
            }
        }
        let mean = sum / (n * n) as f64;
        assert!((mean - 4_000_000.0).abs() < 40_000.0, "{mean}");
    }

    #[test]
    fn sequential_vs_random_service_times() {
        let p = HddParams::preset("rpm4200").unwrap().with_capacity(1 << 30);
        let mut d = Hdd::new(p);
        // First request at 0: no distance → no seek, but rotation (no previous end).
        // 4096 B at 2,257,920 B/s = 1,814,058.9 ns.
        assert_eq!(d.read(0, 4096), 7_142_857 + 1_814_059);
        // Sequential: transfer only.
        assert_eq!(d.read(4096, 4096), 1_814_059);
        // Quarter-disk jump from 8192: seek over 2^28 − 8192 bytes + rotation + transfer.
        let dist = 1u64 << 28;
        let t = d.write((1 << 28) + 8192, 512);
        assert_eq!(t, p.seek_ns(dist) + 7_142_857 + 226_757);
        assert_eq!(p.seek_ns(dist), 3_812_500);
        // Writing right after it is sequential even across kinds.
        assert_eq!(d.write((1 << 28) + 8704, 512), 226_757);
        // Backwards jump of one sector: min seek + rotation.
        let t = d.read((1 << 28) + 8704, 512);
        assert_eq!(t, p.seek_ns(512) + 7_142_857 + 226_757);
        let s = d.stats();
        assert_eq!((s.host_page_reads, s.host_page_writes), (16 + 1, 2));
        assert_eq!(s.read_time, 7_142_857 + 2 * 1_814_059 + p.seek_ns(512) + 7_142_857 + 226_757);
        assert_eq!(s.write_time, 3_812_500 + 7_142_857 + 2 * 226_757);
        assert_eq!((s.erases, s.extra_page_writes, s.out_of_range_pages), (0, 0, 0));
        assert_eq!(s.write_amplification, 1.0);
    }

    #[test]
    fn zero_length_huge_and_out_of_range_do_not_panic() {
        let p = HddParams::preset("rpm15000").unwrap().with_capacity(1 << 20);
        let mut d = Hdd::new(p);
        assert_eq!(d.read(12345, 0), 0);
        assert_eq!(d.write(u64::MAX, 0), 0);
        assert_eq!(d.stats(), DeviceStats::default());
        // Entirely past the end: ignored.
        assert_eq!(d.read(1 << 20, 1024), 0);
        assert_eq!(d.write(u64::MAX, u64::MAX), 0);
        assert_eq!(d.stats().out_of_range_pages, 2 + 1);
        // Crossing the end: cut at the capacity.
        let t = d.read((1 << 20) - 512, 4096);
        assert_eq!(t, p.seek_ns((1 << 20) - 512) + p.rotational_ns() + p.transfer_ns(512));
        let s = d.stats();
        assert_eq!((s.host_page_reads, s.out_of_range_pages), (1, 3 + 7));
        // Huge request from 0 on a huge disk: finite, no overflow.
        let mut d = Hdd::new(p.with_capacity(u64::MAX));
        let t = d.write(0, u64::MAX);
        assert!(t > 0);
        assert_eq!(d.write(u64::MAX, 1), 0); // offset == capacity: out of range
        let t = d.read(u64::MAX - 10, u64::MAX);
        assert!(t > 0);
        // Degenerate parameters: no division by zero.
        let z = HddParams { rpm: 0, avg_seek_ns: 0, min_seek_ns: 5, transfer_bytes_per_s: 0, capacity_bytes: 0 };
        let mut d = Hdd::new(z);
        assert_eq!(d.read(0, 4096), 0);
        assert!(z.seek_ns(10) >= 5);
        assert!(z.transfer_ns(u64::MAX) > 0 && z.rotational_ns() > 0);
    }
}
