//! `ssdcache trace info`: what a trace holds, in one streaming pass.

use super::{Op, TraceError, TraceReader, Unit, BATCH};
use crate::key::page_key;
use crate::Nanos;
use hashbrown::HashSet;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// Statistics of one trace. Addresses and request sizes are in the trace's unit
/// (`unit`: bytes, or pages for key traces); byte totals of key traces count
/// `page_bytes` per page.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceInfo {
    /// `"bytes"` or `"pages"`.
    pub unit: &'static str,
    pub page_bytes: u64,
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub bytes_trimmed: u64,
    /// Distinct pages read or written, each device its own address space. Trims are left
    /// out: they make no data live, and whole-device discards would swamp the count.
    pub footprint_pages: u64,
    pub footprint_bytes: u64,
    /// Distinct keys read or written, for key traces (unit pages) only.
    pub distinct_keys: Option<u64>,
    /// Per device, by device number.
    pub devices: Vec<DeviceInfo>,
    /// Request sizes in power-of-two buckets, smallest first; empty buckets left out.
    pub sizes: Vec<SizeBucket>,
    pub first_time: Option<Nanos>,
    pub last_time: Option<Nanos>,
    /// `last_time - first_time`.
    pub duration_ns: u64,
    /// `duration_ns / (requests - 1)`.
    pub mean_interarrival_ns: Option<f64>,
    /// Requests reaching past what a page key can address (left out of the footprint).
    pub unaddressable: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceInfo {
    pub dev: u32,
    pub requests: u64,
    /// Lowest address and one past the highest addressed unit.
    pub min_addr: u64,
    pub end_addr: u64,
    pub footprint_pages: u64,
}

/// Requests with `min <= size <= max` (`max = 2 * min - 1`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeBucket {
    pub min: u64,
    pub max: u64,
    pub count: u64,
}

/// Reads `reader` to the end and computes its statistics, with pages of `page_bytes`
/// for the footprint of byte traces.
pub fn analyze(reader: &mut dyn TraceReader, page_bytes: u64) -> Result<TraceInfo, TraceError> {
    assert!(page_bytes > 0, "page size must be positive");
    let unit = reader.unit();
    let mut info = TraceInfo {
        unit: if unit == Unit::Pages { "pages" } else { "bytes" },
        page_bytes,
        requests: 0,
        reads: 0,
        writes: 0,
        trims: 0,
        bytes_read: 0,
        bytes_written: 0,
        bytes_trimmed: 0,
        footprint_pages: 0,
        footprint_bytes: 0,
        distinct_keys: None,
        devices: Vec::new(),
        sizes: Vec::new(),
        first_time: None,
        last_time: None,
        duration_ns: 0,
        mean_interarrival_ns: None,
        unaddressable: 0,
    };
    let mut pages: HashSet<u64> = HashSet::new();
    let mut devices: BTreeMap<u32, DeviceInfo> = BTreeMap::new();
    let mut buckets = [0u64; 33];
    let mut batch = Vec::with_capacity(BATCH);
    while reader.read_batch(&mut batch, BATCH)? > 0 {
        for r in &batch {
            info.requests += 1;
            info.first_time.get_or_insert(r.time);
            info.last_time = Some(r.time);
            let len = r.len as u64;
            buckets[(63 - len.max(1).leading_zeros()) as usize] += 1;
            let bytes = if unit == Unit::Pages { len.saturating_mul(page_bytes) } else { len };
            match r.op {
                Op::Read => {
                    info.reads += 1;
                    info.bytes_read += bytes;
                }
                Op::Write => {
                    info.writes += 1;
                    info.bytes_written += bytes;
                }
                Op::Trim => {
                    info.trims += 1;
                    info.bytes_trimmed += bytes;
                }
            }
            let end = r.addr.saturating_add(len);
            let d = devices.entry(r.dev).or_insert(DeviceInfo {
                dev: r.dev,
                requests: 0,
                min_addr: r.addr,
                end_addr: end,
                footprint_pages: 0,
            });
            d.requests += 1;
            d.min_addr = d.min_addr.min(r.addr);
            d.end_addr = d.end_addr.max(end);
            if r.op == Op::Trim {
                continue;
            }
            // first and last page; readers never give len 0, but don't underflow if one does
            let last_unit = r.addr.checked_add(len.max(1) - 1);
            let (first, last) = match unit {
                Unit::Pages => (r.addr, last_unit),
                Unit::Bytes => (r.addr / page_bytes, last_unit.map(|l| l / page_bytes)),
            };
            match last.filter(|&l| page_key(r.dev, l).is_some()) {
                Some(last) => {
                    for p in first..=last {
                        if pages.insert(page_key(r.dev, p).expect("below the last page")) {
                            d.footprint_pages += 1;
                        }
                    }
                }
                None => info.unaddressable += 1,
            }
        }
    }
    info.footprint_pages = pages.len() as u64;
    info.footprint_bytes = info.footprint_pages * page_bytes;
    if unit == Unit::Pages {
        info.distinct_keys = Some(info.footprint_pages);
    }
    info.devices = devices.into_values().collect();
    info.sizes = (0..33)
        .filter(|&i| buckets[i] > 0)
        .map(|i| SizeBucket { min: 1 << i, max: (2 << i) - 1, count: buckets[i] })
        .collect();
    if let (Some(first), Some(last)) = (info.first_time, info.last_time) {
        info.duration_ns = last.saturating_sub(first);
        if info.requests > 1 {
            info.mean_interarrival_ns = Some(info.duration_ns as f64 / (info.requests - 1) as f64);
        }
    }
    Ok(info)
}

/// `1234567` → `"1,234,567"`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1536` → `"1.5 KiB"`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let (mut v, mut i) = (b as f64, 0);
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// `1_500_000` → `"1.50 ms"`.
pub fn human_ns(ns: f64) -> String {
    let (v, unit) = match ns {
        n if n >= 86_400e9 => (n / 86_400e9, "d"),
        n if n >= 3_600e9 => (n / 3_600e9, "h"),
        n if n >= 1e9 => (n / 1e9, "s"),
        n if n >= 1e6 => (n / 1e6, "ms"),
        n if n >= 1e3 => (n / 1e3, "us"),
        n => return format!("{n:.0} ns"),
    };
    format!("{v:.2} {unit}")
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

impl TraceInfo {
    /// A size or address in the trace's unit, readable.
    fn amount(&self, v: u64) -> String {
        if self.unit == "pages" {
            format!("{} page{}", thousands(v), if v == 1 { "" } else { "s" })
        } else {
            human_bytes(v)
        }
    }
}

impl fmt::Display for TraceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.requests;
        writeln!(f, "unit             {} (page size {})", self.unit, human_bytes(self.page_bytes))?;
        writeln!(f, "requests         {:>14}", thousands(n))?;
        for (name, count, bytes) in [
            ("reads", self.reads, self.bytes_read),
            ("writes", self.writes, self.bytes_written),
            ("trims", self.trims, self.bytes_trimmed),
        ] {
            writeln!(f, "  {name:<14} {:>14} {:>6.2}%  {:>10}", thousands(count), pct(count, n), human_bytes(bytes))?;
        }
        writeln!(
            f,
            "footprint        {:>14} pages  {:>10}",
            thousands(self.footprint_pages),
            human_bytes(self.footprint_bytes)
        )?;
        if let Some(keys) = self.distinct_keys {
            writeln!(f, "distinct keys    {:>14}", thousands(keys))?;
        }
        if self.unaddressable > 0 {
            writeln!(
                f,
                "unaddressable    {:>14} requests (beyond a page key's range, not in the footprint)",
                thousands(self.unaddressable)
            )?;
        }
        writeln!(f, "devices          {:>14}", self.devices.len())?;
        for d in &self.devices {
            writeln!(
                f,
                "  dev {:<10} {:>14} requests  {}..{} ({} span)  footprint {} pages",
                d.dev,
                thousands(d.requests),
                thousands(d.min_addr),
                thousands(d.end_addr),
                self.amount(d.end_addr - d.min_addr),
                thousands(d.footprint_pages),
            )?;
        }
        match (self.first_time, self.last_time) {
            (Some(first), Some(last)) => writeln!(
                f,
                "time             {}..{} (duration {})",
                human_ns(first as f64),
                human_ns(last as f64),
                human_ns(self.duration_ns as f64)
            )?,
            _ => writeln!(f, "time             (empty trace)")?,
        }
        if let Some(iat) = self.mean_interarrival_ns {
            writeln!(f, "inter-arrival    {} (mean)", human_ns(iat))?;
        }
        writeln!(f, "request sizes")?;
        for b in &self.sizes {
            let range = if b.min == b.max {
                self.amount(b.min)
            } else {
                format!("{}..<{}", self.amount(b.min), self.amount(b.max + 1))
            };
            writeln!(f, "  {range:<28} {:>14} {:>6.2}%", thousands(b.count), pct(b.count, n))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{MemoryReader, Request};

    fn req(time: Nanos, op: Op, dev: u32, addr: u64, len: u32) -> Request {
        Request { time, addr, len, dev, op }
    }

    fn info(reqs: Vec<Request>, unit: Unit, page: u64) -> TraceInfo {
        analyze(&mut MemoryReader::new(reqs.into(), unit), page).unwrap()
    }

    #[test]
    fn byte_trace() {
        let t = info(
            vec![
                req(1_000, Op::Read, 0, 0, 4096),          // page 0
                req(2_000, Op::Write, 0, 2048, 4096),      // pages 0, 1
                req(4_000, Op::Read, 1, 0, 512),           // dev 1 page 0: a separate address space
                req(5_000, Op::Write, 0, 40960, 65536),    // pages 10..25
                req(7_000, Op::Trim, 0, 1 << 30, 1 << 20), // not in the footprint
            ],
            Unit::Bytes,
            4096,
        );
        assert_eq!((t.requests, t.reads, t.writes, t.trims), (5, 2, 2, 1));
        assert_eq!((t.bytes_read, t.bytes_written, t.bytes_trimmed), (4096 + 512, 4096 + 65536, 1 << 20));
        assert_eq!(t.footprint_pages, 2 + 1 + 16);
        assert_eq!(t.footprint_bytes, 19 * 4096);
        assert_eq!(t.distinct_keys, None);
        assert_eq!(t.devices.len(), 2);
        assert_eq!(
            t.devices[0],
            DeviceInfo { dev: 0, requests: 4, min_addr: 0, end_addr: (1 << 30) + (1 << 20), footprint_pages: 18 }
        );
        assert_eq!(t.devices[1], DeviceInfo { dev: 1, requests: 1, min_addr: 0, end_addr: 512, footprint_pages: 1 });
        assert_eq!(
            t.sizes,
            vec![
                SizeBucket { min: 512, max: 1023, count: 1 },
                SizeBucket { min: 4096, max: 8191, count: 2 },
                SizeBucket { min: 65536, max: 131071, count: 1 },
                SizeBucket { min: 1 << 20, max: (2 << 20) - 1, count: 1 },
            ]
        );
        assert_eq!((t.first_time, t.last_time, t.duration_ns), (Some(1_000), Some(7_000), 6_000));
        assert_eq!(t.mean_interarrival_ns, Some(1_500.0));
        // a larger page: fewer, bigger pages
        let t = info(vec![req(0, Op::Read, 0, 0, 4096), req(0, Op::Read, 0, 8192, 4096)], Unit::Bytes, 16384);
        assert_eq!((t.footprint_pages, t.footprint_bytes), (1, 16384));
    }

    #[test]
    fn key_trace() {
        let reqs = [3u64, 1, 3, 7, 1, 3].iter().enumerate().map(|(i, &k)| req(i as u64, Op::Read, 0, k, 1)).collect();
        let t = info(reqs, Unit::Pages, 4096);
        assert_eq!(t.unit, "pages");
        assert_eq!(t.distinct_keys, Some(3));
        assert_eq!(t.bytes_read, 6 * 4096);
        assert_eq!(t.sizes, vec![SizeBucket { min: 1, max: 1, count: 6 }]);
        assert_eq!((t.devices[0].min_addr, t.devices[0].end_addr), (1, 8));
        let text = t.to_string();
        assert!(text.contains("distinct keys") && text.contains("1 page "), "{text}");
    }

    #[test]
    fn empty_and_odd_traces() {
        let t = info(vec![], Unit::Bytes, 4096);
        assert_eq!((t.requests, t.footprint_pages, t.mean_interarrival_ns), (0, 0, None));
        assert!(t.to_string().contains("empty trace"));
        // an address beyond what a page key holds is counted, not a crash
        let t = info(vec![req(0, Op::Write, 0, u64::MAX - 10, 4096)], Unit::Bytes, 4096);
        assert_eq!((t.unaddressable, t.footprint_pages), (1, 0));
    }

    #[test]
    fn renders_a_table_and_json() {
        let t =
            info(vec![req(0, Op::Read, 0, 0, 4096), req(1_000_000, Op::Write, 2, 1 << 20, 8192)], Unit::Bytes, 4096);
        let text = t.to_string();
        for want in
            ["requests", "reads", "50.00%", "footprint", "devices", "dev 2", "duration 1.00 ms", "4.0 KiB..<8.0 KiB"]
        {
            assert!(text.contains(want), "{want:?} missing from\n{text}");
        }
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["footprint_pages"], 3);
        assert_eq!(json["devices"][1]["dev"], 2);
    }
}
