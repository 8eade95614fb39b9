//! Device specs for the command line: `ftl(type=page,nand=mlc2,op=7%)`,
//! `hdd(model=rpm7200)`, `ssd`, `nvram`, `dram`. Every number of a preset can
//! be overridden by a parameter; `ssdcache devices` lists them.

use super::{
    Device, Ftl, Hdd, HddParams, HybridFtl, HybridOptions, LogBlocks, Memory, MemoryParams, NandTiming, PageFtl,
    Precondition, Ssd, SsdParams,
};
use crate::spec::{ParamInfo, Spec, SpecError};
use crate::units::{format_bytes, parse_duration_ns, parse_page_bytes};

/// A device built from a spec, ready for a run.
pub type BoxedDevice = Box<dyn Device + Send>;

/// What a builder needs besides the spec.
#[derive(Clone, Copy, Debug)]
pub struct DeviceCtx {
    /// Bytes of address space the trace uses after layout (`size=auto` and
    /// `size=footprint` size the device to hold it).
    pub footprint_bytes: u64,
}

/// A device kind in the catalogue.
pub struct DeviceInfo {
    pub name: &'static str,
    pub about: &'static str,
    pub params: &'static [ParamInfo],
    pub build: fn(&Spec, &DeviceCtx) -> Result<BoxedDevice, SpecError>,
    /// Whether the trace's address space is packed densely onto the device
    /// (flash: logical space is memory) or kept at its real offsets (disks:
    /// seek distances matter).
    pub dense: bool,
}

const fn param(name: &'static str, default: &'static str, about: &'static str) -> ParamInfo {
    ParamInfo { name, default, about }
}

/// Every device kind, in the order `ssdcache devices` lists them.
pub static DEVICES: &[DeviceInfo] = &[
    DeviceInfo {
        name: "ftl",
        about: "NAND flash behind an FTL: page-mapping with greedy GC, or log-block hybrid with merges",
        params: &[
            param(
                "type",
                "page",
                "page (page-mapping, greedy GC) or hybrid (BAST log blocks: switch/partial/full merges)",
            ),
            param(
                "nand",
                "flashsim",
                "timing preset: slc, mlc1, mlc2, ull (paper 001 Table 1), flashsim (paper 002 Table 1)",
            ),
            param("op", "7%", "over-provisioning: spare share of physical capacity, at most 90%"),
            param(
                "size",
                "auto",
                "logical capacity: auto = the touched 16 MiB chunks of the trace (untouched pages in them act as \
                 spare), footprint = exactly the touched pages, or a size; with the spare, at most 2^28 pages \
                 (1 TiB of 4 KiB pages)",
            ),
            param(
                "precondition",
                "none",
                "before the run: none (fresh, all erased), seq (one sequential fill), random (fill, then random \
                 overwrites until GC is at steady state); not counted in the run",
            ),
            param("page", "(preset)", "NAND page size: a multiple of 512 B from 512 B to 1 MiB"),
            param("block", "(preset)", "NAND block size"),
            param("read", "(preset)", "page read latency, e.g. 25us"),
            param("program", "(preset)", "page program latency"),
            param("erase", "(preset)", "block erase latency"),
            param("log_blocks", "3%", "hybrid: log blocks, a count or a share of physical blocks"),
            param("in_place", "true", "hybrid: first writes of an erased page go to the data block (BAST)"),
        ],
        build: build_ftl,
        dense: true,
    },
    DeviceInfo {
        name: "hdd",
        about: "hard disk: seek ~ sqrt(distance), half-rotation latency, transfer; no seek when sequential",
        params: &[
            param(
                "model",
                "rpm7200",
                "preset from paper 001 Table 2: rpm4200 … rpm15000 (4 ms seek), rpm…slow (15 ms)",
            ),
            param("rpm", "(preset)", "spindle speed"),
            param("seek", "(preset)", "average seek time"),
            param("min_seek", "(preset)", "track-to-track seek"),
            param("transfer", "(preset)", "media rate per second, e.g. 50MB"),
            param("size", "auto", "capacity (the seek curve spans it); auto = the trace's extent"),
        ],
        build: build_hdd,
        dense: false,
    },
    DeviceInfo {
        name: "ssd",
        about: "black-box SSD: sequential bandwidth and random 4 KiB IOPS (paper 004 Table 1)",
        params: &[
            param("model", "paper004", "preset"),
            param("seq_read", "(preset)", "sequential read rate per second"),
            param("seq_write", "(preset)", "sequential write rate per second"),
            param("read_iops", "(preset)", "random read IOPS"),
            param("write_iops", "(preset)", "random write IOPS"),
        ],
        build: build_ssd,
        dense: true,
    },
    DeviceInfo {
        name: "dram",
        about: "fixed per-page latency (assumed 100 ns)",
        params: MEMORY_PARAMS,
        build: build_memory,
        dense: true,
    },
    DeviceInfo {
        name: "nvram",
        about: "fixed per-page latency (assumed 300 ns read, 1 µs write)",
        params: MEMORY_PARAMS,
        build: build_memory,
        dense: true,
    },
];

const MEMORY_PARAMS: &[ParamInfo] =
    &[param("read", "(preset)", "latency per page read"), param("write", "(preset)", "latency per page written")];

pub fn find(name: &str) -> Option<&'static DeviceInfo> {
    DEVICES.iter().find(|d| d.name == name)
}

/// Parses a device spec and says which kind it is, without building it.
pub fn parse(text: &str) -> Result<(Spec, &'static DeviceInfo), SpecError> {
    let mut spec = Spec::parse_kind(text, "device")?;
    let info = find(&spec.name).ok_or_else(|| SpecError::UnknownName {
        kind: "device",
        name: spec.name.clone(),
        known: DEVICES.iter().map(|d| d.name).collect::<Vec<_>>().join(", "),
    })?;
    spec.bind(info.params)?;
    Ok((spec, info))
}

/// Builds the device a spec names, sized for `ctx`.
pub fn build(text: &str, ctx: &DeviceCtx) -> Result<(BoxedDevice, Spec), SpecError> {
    let (spec, info) = parse(text)?;
    let dev = (info.build)(&spec, ctx)?;
    Ok((dev, spec))
}

/// Whether `key` was given (so a preset value is to be overridden).
fn given(spec: &Spec, key: &str) -> bool {
    spec.params.iter().any(|(k, _)| k == key)
}

fn duration(spec: &Spec, key: &str) -> Result<u64, SpecError> {
    parse_duration_ns(spec.raw(key)).map_err(|e| spec.invalid(key, e.why))
}

/// `size=auto` or `size=footprint` → the footprint as laid out (at least
/// `min`), else the given size.
fn size(spec: &Spec, ctx: &DeviceCtx, min: u64) -> Result<u64, SpecError> {
    let raw = spec.raw("size");
    if raw.eq_ignore_ascii_case("footprint") && spec.name != "ftl" {
        return Err(spec.invalid("size", "footprint is for flash (ftl) devices; a disk keeps its real offsets"));
    }
    if raw.eq_ignore_ascii_case("auto") || raw.eq_ignore_ascii_case("footprint") {
        Ok(ctx.footprint_bytes.max(min))
    } else {
        spec.bytes("size")
    }
}

/// Most over-provisioning `op=` takes: 90%, flash 10 times the logical space.
/// Studies sweep it to 50% or so (write amplification is near 1 well before
/// 90%); beyond, the flash (and the model's maps, 4 bytes a page) grows
/// without bound: 99.99% is 10,000 times the footprint.
pub const MAX_OP: f64 = 0.9;

/// Most pages a flash model may have: 2^28, 1 TiB of 4 KiB pages (4 TiB of
/// the presets' 16 KiB ones). The page maps take 4 bytes a physical and 4 a
/// logical page, so at most about 2 GiB.
pub const MAX_FLASH_PAGES: u64 = 1 << 28;

/// The NAND page: the preset's, or `page=` (512 B to 1 MiB, see [`parse_page_bytes`]).
fn nand_page(spec: &Spec, preset: u64) -> Result<u64, SpecError> {
    if !given(spec, "page") {
        return Ok(preset);
    }
    parse_page_bytes(spec.raw("page")).map_err(|e| spec.invalid("page", e.why))
}

fn build_ftl(spec: &Spec, ctx: &DeviceCtx) -> Result<BoxedDevice, SpecError> {
    let hybrid = spec.choice("type", &["page", "hybrid"])? == "hybrid";
    let mut nand = NandTiming::preset(spec.raw("nand")).map_err(|e| spec.invalid("nand", e.to_string()))?;
    nand.page_bytes = nand_page(spec, nand.page_bytes)?;
    let block_bytes = if given(spec, "block") { spec.bytes("block")? } else { nand.block_bytes() };
    if block_bytes % nand.page_bytes != 0 || block_bytes < nand.page_bytes {
        return Err(spec.invalid("block", format!("must be a whole number of {} pages", format_bytes(nand.page_bytes))));
    }
    nand.pages_per_block =
        u32::try_from(block_bytes / nand.page_bytes).map_err(|_| spec.invalid("block", "too many pages per block"))?;
    for (key, field) in [("read", &mut nand.read_ns), ("program", &mut nand.program_ns), ("erase", &mut nand.erase_ns)]
    {
        if given(spec, key) {
            *field = duration(spec, key)?;
        }
    }
    let op = spec.ratio("op")?;
    if op > MAX_OP {
        return Err(spec.invalid("op", "must be at most 90% (flash 10 times the logical space)"));
    }
    let precondition = Precondition::from_name(&spec.choice("precondition", Precondition::NAMES)?)
        .expect("choice returns one of the names");
    let logical_bytes = size(spec, ctx, 1)?;
    let block = nand.block_bytes();
    let logical_blocks = logical_bytes.div_ceil(block);
    let logical_pages = logical_bytes.div_ceil(nand.page_bytes);
    let ppb = nand.pages_per_block as u64;
    // Every step that adds pages is bounded, and the error names the
    // parameter that took the device past [`MAX_FLASH_PAGES`].
    let bounded = |key: &str, pages: u64, hint: &str| {
        if pages <= MAX_FLASH_PAGES {
            return Ok(());
        }
        Err(spec.invalid(
            key,
            format!(
                "the device would have {pages} pages of {}, more than the {MAX_FLASH_PAGES} (2^28) a flash model \
                 may have; {hint}",
                format_bytes(nand.page_bytes)
            ),
        ))
    };
    bounded("size", logical_pages, "give a larger page or a smaller size")?;
    bounded("block", (logical_blocks + 1).saturating_mul(ppb), "give a smaller block")?;
    // Physical blocks: the logical pages plus the spare share, rounded up to
    // whole blocks (a logical space of whole blocks gets ⌈blocks / (1 - op)⌉),
    // and at least one spare block for GC.
    let mut physical = ((logical_pages as f64 / (1.0 - op) / ppb as f64).ceil() as u64).max(logical_blocks + 1);
    bounded("op", physical * ppb, "give a smaller op or a larger page")?;
    if !hybrid {
        let ftl = PageFtl::with_logical_pages(nand, physical as u32, logical_pages)
            .map_err(|e| spec.invalid("size", e.to_string()))?;
        return Ok(prepared(ftl, precondition));
    }
    // The hybrid FTL keeps its log blocks and one merge target out of the spare space.
    let logs = match log_blocks(spec)? {
        LogBlocks::Count(n) => n as u64,
        LogBlocks::Fraction(f) => ((physical as f64 * f).round() as u64).max(1),
    };
    physical = physical.max(logical_blocks + logs + 1);
    bounded("log_blocks", physical.saturating_mul(ppb), "give fewer log blocks")?;
    let opts = HybridOptions { log_blocks: LogBlocks::Count(logs as u32), in_place: spec.flag("in_place")? };
    let ftl = HybridFtl::with_logical_pages(nand, physical as u32, logical_pages, opts)
        .map_err(|e| spec.invalid("log_blocks", e.to_string()))?;
    Ok(prepared(ftl, precondition))
}

fn prepared<F: Ftl + Send + 'static>(mut ftl: F, how: Precondition) -> BoxedDevice {
    ftl.precondition(how);
    Box::new(ftl)
}

/// The unit a spec's device is laid out in with `size=footprint`: its flash
/// page (the trace's touched pages are packed at that granularity), or
/// `None` for every other size. `size=footprint` on a device that is not
/// flash is an error.
pub fn footprint_page(text: &str) -> Result<Option<u64>, SpecError> {
    let (spec, info) = parse(text)?;
    if !info.params.iter().any(|p| p.name == "size") || !spec.raw("size").eq_ignore_ascii_case("footprint") {
        return Ok(None);
    }
    size(&spec, &DeviceCtx { footprint_bytes: 0 }, 1)?; // (a disk: the error above)
    let preset = NandTiming::preset(spec.raw("nand")).map_err(|e| spec.invalid("nand", e.to_string()))?;
    Ok(Some(nand_page(&spec, preset.page_bytes)?))
}

/// `log_blocks=16` (a count) or `log_blocks=3%` (a share of physical blocks).
fn log_blocks(spec: &Spec) -> Result<LogBlocks, SpecError> {
    let raw = spec.raw("log_blocks");
    if raw.contains('%') || raw.contains('.') {
        let f = spec.ratio("log_blocks")?;
        if f <= 0.0 || f >= 1.0 {
            return Err(spec.invalid("log_blocks", "a share must lie strictly between 0% and 100%"));
        }
        Ok(LogBlocks::Fraction(f))
    } else {
        let n = spec.uint("log_blocks")?;
        u32::try_from(n)
            .ok()
            .filter(|&n| n > 0)
            .map(LogBlocks::Count)
            .ok_or_else(|| spec.invalid("log_blocks", "must be 1..2^32"))
    }
}

fn build_hdd(spec: &Spec, ctx: &DeviceCtx) -> Result<BoxedDevice, SpecError> {
    let mut p = HddParams::preset(spec.raw("model")).map_err(|e| spec.invalid("model", e.to_string()))?;
    if given(spec, "rpm") {
        p.rpm = u32::try_from(spec.uint("rpm")?)
            .ok()
            .filter(|&r| r > 0)
            .ok_or_else(|| spec.invalid("rpm", "must be 1..2^32"))?;
    }
    if given(spec, "seek") {
        p.avg_seek_ns = duration(spec, "seek")?;
    }
    if given(spec, "min_seek") {
        p.min_seek_ns = duration(spec, "min_seek")?;
    }
    if given(spec, "transfer") {
        p.transfer_bytes_per_s = spec.bytes("transfer")?;
    }
    let p = p.with_capacity(size(spec, ctx, 1)?);
    Ok(Box::new(Hdd::new(p)))
}

fn build_ssd(spec: &Spec, _ctx: &DeviceCtx) -> Result<BoxedDevice, SpecError> {
    let mut p = SsdParams::preset(spec.raw("model")).map_err(|e| spec.invalid("model", e.to_string()))?;
    if given(spec, "seq_read") {
        p.seq_read_bytes_per_s = spec.bytes("seq_read")?;
    }
    if given(spec, "seq_write") {
        p.seq_write_bytes_per_s = spec.bytes("seq_write")?;
    }
    for (key, field) in [("read_iops", &mut p.rand_read_iops), ("write_iops", &mut p.rand_write_iops)] {
        if given(spec, key) {
            // (0 used to be taken as 1 without a word)
            *field = spec.uint(key)?;
            if *field == 0 {
                return Err(spec.invalid(key, "must be at least 1"));
            }
        }
    }
    Ok(Box::new(Ssd::new(p)))
}

fn build_memory(spec: &Spec, _ctx: &DeviceCtx) -> Result<BoxedDevice, SpecError> {
    // (the catalogue only routes "dram" and "nvram" here, both presets)
    let mut p = MemoryParams::preset(&spec.name).expect("memory device names are presets");
    if given(spec, "read") {
        p.read_ns_per_page = duration(spec, "read")?;
    }
    if given(spec, "write") {
        p.write_ns_per_page = duration(spec, "write")?;
    }
    Ok(Box::new(Memory::new(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: DeviceCtx = DeviceCtx { footprint_bytes: 64 << 20 };

    #[test]
    fn every_device_builds_with_defaults() {
        for d in DEVICES {
            let (mut dev, spec) = build(d.name, &CTX).unwrap_or_else(|e| panic!("{}: {e}", d.name));
            assert_eq!(spec.canonical(), d.name);
            assert!(dev.write(0, 4096) > 0, "{}", d.name);
            assert!(dev.read(0, 4096) > 0, "{}", d.name);
            assert_eq!(dev.stats().host_page_writes.min(1), 1, "{}", d.name);
        }
    }

    #[test]
    fn ftl_is_sized_to_the_footprint_with_spare_blocks() {
        let (mut dev, _) = build("ftl(nand=ull,op=10%)", &CTX).unwrap();
        // 64 MiB logical = 256 blocks of 256 KiB; 10% spare → 285 physical.
        // Writing the whole logical space twice must fit without errors and WA stays low.
        for round in 0..2 {
            for off in (0..64u64 << 20).step_by(4096) {
                dev.write(off, 4096);
            }
            let s = dev.stats();
            assert_eq!(s.out_of_range_pages, 0, "round {round}");
        }
        assert_eq!(dev.stats().host_page_writes, 2 * 16384);
        // Sequential overwrites: whole blocks go invalid together, GC copies nothing.
        assert_eq!(dev.stats().extra_page_writes, 0);
        assert!(dev.stats().erases > 0);
    }

    #[test]
    fn footprint_size_is_page_exact_and_spare_rounds_to_blocks() {
        // 64,000 touched 4 KiB pages (what the layout reports for size=footprint).
        let ctx = DeviceCtx { footprint_bytes: 64_000 * 4096 };
        let (dev, _) = build("ftl(nand=ull,op=23%,size=footprint)", &ctx).unwrap();
        let s = dev.stats();
        // 64 pages a block: ⌈64,000 / 0.77 / 64⌉ = 1299 blocks.
        assert_eq!((s.logical_pages, s.physical_pages), (64_000, 1299 * 64));
        assert!((s.physical_per_logical - 1.0 / 0.77).abs() < 0.001, "{}", s.physical_per_logical);
        assert_eq!(s.unwritten_pages, 64_000);
        // Whole blocks of logical space: ⌈blocks / (1 - op)⌉ as before.
        let (dev, _) = build("ftl(nand=ull,op=10%)", &CTX).unwrap();
        assert_eq!(dev.stats().physical_pages, 285 * 64);
        let (dev, _) = build("ftl(nand=ull,precondition=seq)", &CTX).unwrap();
        let s = dev.stats();
        assert_eq!((s.unwritten_pages, s.precondition_host_page_writes, s.host_page_writes), (0, 16384, 0));
        assert_eq!(footprint_page("ftl(nand=slc,size=footprint)").unwrap(), Some(16384));
        assert_eq!(footprint_page("ftl(nand=slc,page=8KiB,size=footprint)").unwrap(), Some(8192));
        assert_eq!(footprint_page("ftl(nand=slc)").unwrap(), None);
        assert_eq!(footprint_page("ssd").unwrap(), None);
        let err = footprint_page("hdd(size=footprint)").unwrap_err().to_string();
        assert!(err.contains("size") && err.contains("flash"), "{err}");
        assert!(build("hdd(size=footprint)", &CTX).is_err());
        let err = build("ftl(precondition=twice)", &CTX).err().unwrap().to_string();
        assert!(err.contains("precondition") && err.contains("none, seq, random"), "{err}");
    }

    #[test]
    fn hybrid_ftl_merges_random_writes_and_switches_sequential_ones() {
        let (mut seq, spec) = build("ftl(type=hybrid,nand=ull,log_blocks=4,in_place=false)", &CTX).unwrap();
        assert_eq!(spec.canonical(), "ftl(type=hybrid,nand=ull,log_blocks=4,in_place=false)");
        for off in (0..64u64 << 20).step_by(4096) {
            seq.write(off, 4096);
        }
        let s = seq.stats();
        assert_eq!((s.full_merges, s.partial_merges, s.extra_page_writes), (0, 0, 0));
        assert_eq!(s.switch_merges, 256);
        let (mut rnd, _) = build("ftl(type=hybrid,nand=ull)", &CTX).unwrap();
        let mut x = 12345u64;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            rnd.write((x >> 33) % (16384) * 4096, 4096);
        }
        let s = rnd.stats();
        assert!(s.full_merges > 0 && s.write_amplification > 2.0, "{s:?}");
    }

    #[test]
    fn overrides_change_the_numbers() {
        let (mut a, _) = build("ftl(nand=slc)", &CTX).unwrap();
        let (mut b, _) = build("ftl(nand=slc,program=1ms,page=4KiB,block=256KiB)", &CTX).unwrap();
        assert_eq!(a.write(0, 16384), 380_000);
        assert_eq!(b.write(0, 4096), 1_000_000);
        let (mut h, _) = build("hdd(model=rpm15000,seek=8ms,size=1TiB)", &CTX).unwrap();
        let (mut h2, _) = build("hdd(model=rpm15000,size=1TiB)", &CTX).unwrap();
        h.read(0, 4096);
        h2.read(0, 4096);
        assert!(h.read(1 << 39, 4096) > h2.read(1 << 39, 4096));
        let (mut d, _) = build("dram(read=50ns)", &CTX).unwrap();
        assert_eq!(d.read(0, 8192), 100);
    }

    #[test]
    fn parameters_that_would_explode_memory_are_refused() {
        // A 1 MiB footprint: what each of these used to build stays small.
        let ctx = DeviceCtx { footprint_bytes: 1 << 20 };
        let msg = |s: &str| build(s, &ctx).err().map(|e| e.to_string()).unwrap_or_default();
        // op=99.99% was flash 10,000 times the footprint; page=1B a map entry per byte
        for (spec, says) in [
            ("ftl(op=99.99%)", "parameter op=99.99%: must be at most 90%"),
            ("ftl(op=91%)", "parameter op=91%: must be at most 90%"),
            ("ftl(page=1B)", "parameter page=1B: a page must be a multiple of 512 B from 512 B to 1 MiB"),
            ("ftl(page=3)", "parameter page=3: a page must be"),
            ("ftl(page=4000)", "parameter page=4000: a page must be"),
            ("ftl(page=2MiB,block=64MiB)", "parameter page=2MiB: a page must be"),
            (
                "ftl(size=2TiB)",
                "parameter size=2TiB: the device would have 536870912 pages of 4KiB, more than the 268435456 (2^28)",
            ),
            ("ftl(block=1TiB)", "parameter block=1TiB: the device would have"),
            ("ftl(type=hybrid,log_blocks=4000000)", "parameter log_blocks=4000000: the device would have"),
            ("ssd(read_iops=0)", "parameter read_iops=0: must be at least 1"),
            ("ssd(write_iops=0)", "parameter write_iops=0: must be at least 1"),
        ] {
            assert!(msg(spec).contains(says), "{spec}: {}", msg(spec));
        }
        let e = footprint_page("ftl(page=1B,size=footprint)").unwrap_err().to_string();
        assert!(e.contains("page=1B: a page must be"), "{e}");
        // The bounds themselves, and the papers' pages, still build.
        for ok in
            ["ftl(op=90%)", "ftl(page=512,block=64KiB)", "ftl(nand=slc,page=8KiB,op=25%)", "ftl(page=1MiB,block=64MiB)"]
        {
            assert!(build(ok, &ctx).is_ok(), "{ok}: {}", msg(ok));
        }
        // 256 pages / 0.1 = 40 blocks of 64 (41 as 1 - 0.9 rounds in floating point)
        let pages = build("ftl(op=90%,nand=ull)", &ctx).unwrap().0.stats().physical_pages;
        assert!((40 * 64..=41 * 64).contains(&pages), "{pages}");
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let msg = |s: &str| build(s, &CTX).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg("tape").contains("unknown device \"tape\""), "{}", msg("tape"));
        assert!(msg("ftl(nand=tlc)").contains("unknown NAND preset"), "{}", msg("ftl(nand=tlc)"));
        assert!(msg("ftl(op=100%)").contains("op"), "{}", msg("ftl(op=100%)"));
        assert!(msg("ftl(block=10KiB,page=4KiB)").contains("whole number"), "{}", msg("ftl(block=10KiB,page=4KiB)"));
        assert!(msg("hdd(bogus=1)").contains("device hdd has no parameter \"bogus\""), "{}", msg("hdd(bogus=1)"));
        assert!(msg("ftl(type=hybridish)").contains("expected one of"), "{}", msg("ftl(type=hybridish)"));
        assert!(msg("hdd(seek=fast)").contains("seek"), "{}", msg("hdd(seek=fast)"));
        assert!(
            msg("ftl(type=hybrid,log_blocks=0)").contains("log_blocks"),
            "{}",
            msg("ftl(type=hybrid,log_blocks=0)")
        );
        assert!(
            msg("ftl(type=hybrid,log_blocks=100%)").contains("strictly"),
            "{}",
            msg("ftl(type=hybrid,log_blocks=100%)")
        );
    }
}
