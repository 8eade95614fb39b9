//! Every real trace in `../shared/traces/` (beside the repository; `$SSDCACHE_TRACES`
//! elsewhere) is sniffed as the right format and reads to exactly the statistics
//! its SOURCE.txt gives.
//!
//! Without the folder these tests skip, saying so on stderr, so that a bare clone
//! runs the rest of the suite; `SSDCACHE_REQUIRE_TRACES=1` (scripts/test.sh sets
//! it) makes a missing folder fail loudly instead.
//!
//! How SOURCE.txt counts, as its numbers show (checked against the files):
//! - `read_pct` is reads / requests over all requests, discards included
//!   (sqlite-wal update: 4 reads, 5,003 writes, 1 discard = 0.08 %).
//! - `unique_4KiB_blocks` counts distinct `offset / 4096 ..= (offset + size - 1) / 4096`
//!   block numbers with every device overlaid on one address space (it says "all
//!   ASUs overlaid" for Financial1 and "16 devices overlaid" for TPC-C; the other
//!   traces have one device, where both counts agree). ssdcache itself keeps
//!   devices apart; the per-device counts are checked too, from this test's own
//!   computation.
//! - `address_span` / `span_GiB` run from the lowest offset to the highest
//!   offset + size.
//! - durations are the largest rebased time, rounded as SOURCE.txt rounds.

mod common;

use common::traces_dir;
use ssdcache::trace::{self, Format, Op, ReadOptions, Request, Unit};
use std::collections::HashSet;

struct Trace {
    format: Format,
    unit: Unit,
    reqs: Vec<Request>,
}

fn load(rel: &str) -> Trace {
    let path = traces_dir().expect("sample traces").join(rel);
    let (mut reader, format) =
        trace::open(&path, Format::Auto, &ReadOptions::default()).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let reqs = trace::read_all(reader.as_mut()).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert_eq!(reader.skipped(), 0);
    Trace { format, unit: reader.unit(), reqs }
}

impl Trace {
    fn reads(&self) -> usize {
        self.reqs.iter().filter(|r| r.op == Op::Read).count()
    }
    fn read_pct(&self) -> String {
        format!("{:.2}", 100.0 * self.reads() as f64 / self.reqs.len() as f64)
    }
    fn bytes(&self, op: Op) -> u64 {
        self.reqs.iter().filter(|r| r.op == op).map(|r| r.len as u64).sum()
    }
    fn blocks(&self, per_device: bool) -> usize {
        let mut set = HashSet::new();
        for r in &self.reqs {
            let dev = if per_device { r.dev } else { 0 };
            for b in r.addr / 4096..=(r.addr + r.len as u64 - 1) / 4096 {
                set.insert((dev, b));
            }
        }
        set.len()
    }
    fn devices(&self) -> usize {
        self.reqs.iter().map(|r| r.dev).collect::<HashSet<_>>().len()
    }
    fn span(&self) -> (u64, u64) {
        let lo = self.reqs.iter().map(|r| r.addr).min().unwrap();
        let hi = self.reqs.iter().map(|r| r.addr + r.len as u64).max().unwrap();
        (lo, hi)
    }
    fn span_gib(&self, decimals: usize) -> String {
        let (lo, hi) = self.span();
        format!("{:.*}", decimals, (hi - lo) as f64 / (1u64 << 30) as f64)
    }
    fn duration_s(&self, decimals: usize) -> String {
        let t = self.reqs.iter().map(|r| r.time).max().unwrap();
        format!("{:.*}", decimals, t as f64 / 1e9)
    }
}

/// The checks every block trace gets: format, count, read share, unique blocks.
fn check(rel: &str, format: Format, requests: usize, read_pct: &str, blocks: usize) -> Trace {
    let t = load(rel);
    assert_eq!(t.format, format, "{rel}: sniffed format");
    assert_eq!(t.unit, Unit::Bytes, "{rel}");
    assert_eq!(t.reqs.len(), requests, "{rel}: requests");
    assert_eq!(t.read_pct(), read_pct, "{rel}: read %");
    assert_eq!(t.blocks(false), blocks, "{rel}: unique 4KiB blocks, devices overlaid");
    assert_eq!(t.reqs.first().map(|r| r.time), Some(0), "{rel}: times rebased to the first request");
    t
}

#[test]
fn umass_financial1_ssdsim() {
    if traces_dir().is_none() {
        return;
    }
    let t = check("umass-fin1-ssdsim10k/Financial1-first10k.ssdsim.ascii.gz", Format::Ssdsim, 10_000, "40.77", 7142);
    assert_eq!((t.bytes(Op::Read), t.bytes(Op::Write)), (25_437_696, 29_841_408));
    assert_eq!(t.span(), (67_584, 513_235_456));
    assert_eq!(t.duration_s(1), "259.6");
    assert_eq!(t.devices(), 22, "22 ASUs");
    assert_eq!(t.blocks(true), 7322, "unique blocks with each ASU its own address space");
}

#[test]
fn tpcc_mqsim() {
    if traces_dir().is_none() {
        return;
    }
    // MQSim's columns are SSDsim's: the sniffer cannot tell them apart, and the same parser reads both.
    let t = check("tpcc-mqsim/tpcc-small.trace.gz", Format::Ssdsim, 6_999, "62.59", 20_422);
    assert_eq!((t.bytes(Op::Read), t.bytes(Op::Write)), (36_315_136, 23_403_520));
    assert_eq!(t.span(), (361_823_744, 232_713_410_560));
    assert_eq!(t.duration_s(4), "0.1365", "0.9385..1.0750 s, rebased");
    assert_eq!(t.devices(), 16);
    assert_eq!(t.blocks(true), 20_470);
}

#[test]
fn cloudphysics_vscsi_csv() {
    if traces_dir().is_none() {
        return;
    }
    let t = check("cloudphysics-io-libcachesim/cloudPhysicsIO.csv.gz", Format::VscsiCsv, 113_872, "41.25", 269_210);
    assert_eq!((t.bytes(Op::Read), t.bytes(Op::Write)), (1_797_412_352, 2_408_565_760));
    assert_eq!(t.span(), (8_162_816, 33_584_938_496));
    assert_eq!(t.duration_s(0), "7200", "time column 5,633,898..5,641,098 (seconds)");
}

#[test]
fn msr_cuts_heimdall() {
    if traces_dir().is_none() {
        return;
    }
    let dir = "msr-cuts-heimdall/msr.cut.per_10k.";
    for (name, read_pct, span, blocks, duration) in [
        ("most_thpt_rand_iops.1006", "83.16", "11.77", 29_025, "1.02"),
        ("rw_20_80.105", "20.20", "13.91", 7_385, "242.90"),
        ("rw_40_60.1370", "40.54", "13.84", 8_968, "85.92"),
    ] {
        let rel = format!("{dir}{name}.trace.gz");
        let t = check(&rel, Format::Heimdall, 10_000, read_pct, blocks);
        assert_eq!(t.span_gib(2), span, "{name}");
        assert_eq!(t.duration_s(2), duration, "{name}");
        assert_eq!(t.devices(), 1);
    }
}

#[test]
fn msr_hm0_csv() {
    if traces_dir().is_none() {
        return;
    }
    let t = check("msr-hm0-1k-caffeine/msr-cambridge1-sample.csv.gz", Format::Msr, 1_000, "50.80", 1_917);
    assert_eq!((t.bytes(Op::Read), t.bytes(Op::Write)), (6_108_672, 3_580_928));
    assert_eq!(t.span(), (17_625_088, 13_575_029_248));
    assert_eq!(t.duration_s(1), "127.2");
    assert_eq!(t.devices(), 1, "one (host, disk) pair: hm, 0");
}

#[test]
fn systor17_samples() {
    if traces_dir().is_none() {
        return;
    }
    for (name, read_pct, span, blocks) in
        [("traces", "82.68", "4503.6", 9_831), ("additional", "70.07", "4510.7", 5_460)]
    {
        let rel = format!("systor17-1k-samples/systor17-{name}-sample.csv.gz");
        let t = check(&rel, Format::Systor, 999, read_pct, blocks);
        assert_eq!(t.span_gib(1), span, "{name}");
    }
    // Records come in completion order: issue times are not monotonic, and the order is kept.
    let t = load("systor17-1k-samples/systor17-additional-sample.csv.gz");
    assert!(t.reqs.windows(2).any(|w| w[1].time < w[0].time));
    assert_eq!(t.reqs[2].time, 1_455_591_804_314_955_000 - 1_455_591_804_310_701_000, "exact nanoseconds");
}

#[test]
fn sqlite_wal_wiscsee() {
    if traces_dir().is_none() {
        return;
    }
    let t = check("sqlite-wal-wiscsee/sqlitewal-update.blkevents.txt.gz", Format::Blkparse, 5_008, "0.08", 2_174);
    assert_eq!(t.reqs.iter().filter(|r| r.op == Op::Trim).count(), 1, "one discard");
    assert_eq!(format!("{:.1}", t.bytes(Op::Write) as f64 / (1 << 20) as f64), "65.9");
    assert_eq!(t.span_gib(3), "0.505");
    assert_eq!(t.duration_s(2), "1.41");
    let t = check(
        "sqlite-wal-wiscsee/sqlitewal-reqscale-240000-inserts.blkevents.txt.gz",
        Format::Blkparse,
        5_000,
        "100.00",
        5_327,
    );
    assert_eq!(t.span_gib(3), "0.262");
    assert_eq!(t.duration_s(2), "0.83");
}

#[test]
fn lirs_key_traces() {
    if traces_dir().is_none() {
        return;
    }
    for (name, requests, unique) in [
        ("cpp", 9_047, 1_223),
        ("cs", 6_781, 1_409),
        ("gli", 6_015, 2_529),
        ("ps", 10_448, 3_083),
        ("sprite", 133_996, 7_075),
        ("multi1", 15_858, 2_606),
        ("multi2", 26_311, 5_684),
        ("multi3", 30_241, 7_454),
        ("2_pools", 100_000, 9_939),
    ] {
        let t = load(&format!("lirs-buffercache/{name}.trace.gz"));
        assert_eq!(t.format, Format::Keys, "{name}");
        assert_eq!(t.unit, Unit::Pages, "{name}");
        assert_eq!(t.reqs.len(), requests, "{name}: requests ('*' separators and blank lines carry none)");
        assert_eq!(t.reqs.iter().map(|r| r.addr).collect::<HashSet<_>>().len(), unique, "{name}: unique keys");
        assert!(t.reqs.iter().all(|r| r.len == 1 && r.op == Op::Read && r.dev == 0));
    }
}

/// cache2k's orm-busy: 5 M big-endian u32 keys, xz-compressed, read whole.
#[test]
fn cache2k_orm_busy_keys_u32be() {
    let Some(dir) = traces_dir() else { return };
    let path = dir.join("cache2k-orm-busy/orm-busy.trace.xz");
    let (mut reader, format) = trace::open(&path, Format::KeysU32be, &ReadOptions::default()).unwrap();
    assert_eq!((format, reader.unit()), (Format::KeysU32be, Unit::Pages));
    let reqs = trace::read_all(reader.as_mut()).unwrap();
    assert_eq!(reqs.len(), 5_000_000, "requests (SOURCE.txt)");
    let keys: HashSet<u64> = reqs.iter().map(|r| r.addr).collect();
    assert_eq!(keys.len(), 76_349, "unique keys (SOURCE.txt)");
    assert_eq!((keys.iter().min(), keys.iter().max()), (Some(&66_048), Some(&4_047_863_809)), "key range");
    assert!(reqs.iter().all(|r| r.len == 1 && r.op == Op::Read));
}

/// The AdaptSize CDN sample (`time id size_bytes`, xz): read as a block trace
/// through a column mapping, each object at its id's own 4 MiB stretch (the
/// largest object is 4,092,928 B, so objects never overlap).
#[test]
fn adaptsize_cdn_sample_through_a_column_mapping() {
    let Some(dir) = traces_dir() else { return };
    let path = dir.join("adaptsize-cdn-sample/request.trace.xz");
    let opts = ReadOptions {
        csv: Some("time=0,offset=1,size=2,sep=space,offset_unit=4MiB".parse().unwrap()),
        ..Default::default()
    };
    let (mut reader, _) = trace::open(&path, Format::Csv, &opts).unwrap();
    let reqs = trace::read_all(reader.as_mut()).unwrap();
    assert_eq!(reader.skipped(), 0);
    assert_eq!(reqs.len(), 66_987, "requests (SOURCE.txt)");
    assert_eq!(reqs.iter().map(|r| r.len as u64).sum::<u64>(), 485_457_552, "requested bytes (SOURCE.txt)");
    assert_eq!(reqs.iter().map(|r| r.len).max(), Some(4_092_928), "largest object");
    assert_eq!(reqs.iter().map(|r| r.addr).collect::<HashSet<_>>().len(), 36_815, "unique ids");
    assert!(reqs.iter().all(|r| r.op == Op::Read));
}

/// The same sample in object mode, its format sniffed: an object is an (id,
/// size) pair, as webcachesim and Caffeine key it.
#[test]
fn adaptsize_cdn_sample_as_objects() {
    let Some(dir) = traces_dir() else { return };
    let path = dir.join("adaptsize-cdn-sample/request.trace.xz");
    let (mut reader, used) = trace::open_objects(&path, Format::Auto, &ReadOptions::default()).unwrap();
    assert_eq!(used, Format::Webcachesim);
    let reqs = trace::objects::read_all_objects(reader.as_mut()).unwrap();
    assert_eq!(reqs.len(), 66_987, "requests (SOURCE.txt)");
    assert_eq!(reqs.iter().map(|r| r.size).sum::<u64>(), 485_457_552, "requested bytes (SOURCE.txt)");
    assert_eq!(reqs.iter().map(|r| r.key).collect::<HashSet<_>>().len(), 40_240, "distinct (id, size) pairs");
}

/// Every trace file in the folder is covered by a test above (a new one must be added here).
#[test]
fn no_trace_is_left_out() {
    let mut files = Vec::new();
    let Some(dir) = traces_dir() else { return };
    for set in std::fs::read_dir(dir).unwrap() {
        let set = set.unwrap().path();
        if !set.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&set).unwrap() {
            let name = f.unwrap().file_name().into_string().unwrap();
            if name != "SOURCE.txt" {
                files.push(format!("{}/{name}", set.file_name().unwrap().to_str().unwrap()));
            }
        }
    }
    files.sort();
    let lirs = ["2_pools", "cpp", "cs", "gli", "multi1", "multi2", "multi3", "ps", "sprite"];
    let mut checked: Vec<String> = [
        "adaptsize-cdn-sample/request.trace.xz",
        "cache2k-orm-busy/orm-busy.trace.xz",
        "cloudphysics-io-libcachesim/cloudPhysicsIO.csv.gz",
        "msr-cuts-heimdall/msr.cut.per_10k.most_thpt_rand_iops.1006.trace.gz",
        "msr-cuts-heimdall/msr.cut.per_10k.rw_20_80.105.trace.gz",
        "msr-cuts-heimdall/msr.cut.per_10k.rw_40_60.1370.trace.gz",
        "msr-hm0-1k-caffeine/msr-cambridge1-sample.csv.gz",
        "sqlite-wal-wiscsee/sqlitewal-reqscale-240000-inserts.blkevents.txt.gz",
        "sqlite-wal-wiscsee/sqlitewal-update.blkevents.txt.gz",
        "systor17-1k-samples/systor17-additional-sample.csv.gz",
        "systor17-1k-samples/systor17-traces-sample.csv.gz",
        "tpcc-mqsim/tpcc-small.trace.gz",
        "umass-fin1-ssdsim10k/Financial1-first10k.ssdsim.ascii.gz",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(lirs.iter().map(|n| format!("lirs-buffercache/{n}.trace.gz")))
    .collect();
    checked.sort();
    assert_eq!(files, checked, "the trace folder holds files the tests above do not check (or lost some)");
}
