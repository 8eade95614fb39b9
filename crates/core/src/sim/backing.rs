//! The backing device of a run: where a trace's pages live on a device model,
//! and what the policy's I/O effects cost there.
//!
//! Traces address devices far larger than what they touch (SPC's ASUs, a
//! 4.5 TB SYSTOR volume), and a flash model keeps a map entry per logical
//! page, so for flash the touched address space is packed: the trace is cut
//! into chunks (a few MiB, a whole number of flash blocks), and only chunks
//! that are touched are laid out, consecutively, in address order. Order and
//! contiguity inside a chunk are kept, so sequential runs stay sequential.
//! The pages of a touched chunk the trace never writes are logical pages GC
//! can use as spare, so on a sparse trace `size=auto` gives the device more
//! spare than its `op` says. `size=footprint` packs page by page instead
//! (chunks of one flash page, or one trace page if larger): the logical
//! space is exactly the touched pages, still in address order, so runs of
//! touched pages stay sequential.
//! Disks keep real offsets (seek distance matters): each trace device is laid
//! after the previous one's highest address.

use super::{pages_of, SimError};
use crate::device::catalog::{self, BoxedDevice, DeviceCtx};
use crate::device::DeviceStats;
use crate::key::split_key;
use crate::policy::{Effects, Io};
use crate::trace::{Request, Unit};
use crate::Nanos;
use hashbrown::HashMap;

/// Packing granule for dense layouts: 16 MiB, a whole number of blocks of
/// every NAND preset (the largest, MLC_2's, is 16 MiB), so packing never puts
/// two distant regions of the trace in one flash block.
pub const CHUNK_BYTES: u64 = 16 << 20;

/// Where each (trace device, chunk) of a trace starts on the model device.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Bytes per chunk; `u64::MAX` chunks (one per trace device) for disks.
    chunk: u64,
    /// (trace device, chunk index) → byte offset on the model device.
    starts: HashMap<(u32, u64), u64>,
    /// Bytes of model address space used.
    pub footprint: u64,
}

/// A layout in the making: folds a trace's requests, one at a time, into the
/// touched chunks and their highest page end, so a layout costs one streaming
/// pass and memory in proportion to the footprint, not the trace.
#[derive(Clone, Debug)]
pub struct LayoutScan {
    /// Bytes per chunk; `u64::MAX`: one per trace device, kept at its offsets.
    chunk: u64,
    unit: Unit,
    page_bytes: u64,
    /// Highest page end per (device, chunk) — or per device for disks.
    ends: HashMap<(u32, u64), u64>,
    /// Requests folded so far (numbers the errors).
    requests: u64,
}

impl LayoutScan {
    /// `dense` packs touched chunks; else each trace device keeps its
    /// offsets, devices one after another.
    pub fn new(unit: Unit, page_bytes: u64, dense: bool) -> LayoutScan {
        let chunk = if dense { CHUNK_BYTES.max(page_bytes) } else { u64::MAX };
        LayoutScan::with_chunk(unit, page_bytes, chunk)
    }

    /// Packs exactly the touched pages (`size=footprint`): chunks of one
    /// `flash_page`, or of one trace page if that is larger (a multiple of it:
    /// page sizes are powers of two).
    pub fn pages(unit: Unit, page_bytes: u64, flash_page: u64) -> LayoutScan {
        LayoutScan::with_chunk(unit, page_bytes, flash_page.max(page_bytes))
    }

    /// The scan device `spec` needs (its kind and `size=` decide the chunk).
    pub fn for_device(spec: &str, unit: Unit, page_bytes: u64) -> Result<LayoutScan, SimError> {
        let (_, info) = catalog::parse(spec)?;
        Ok(match catalog::footprint_page(spec)? {
            Some(flash_page) => LayoutScan::pages(unit, page_bytes, flash_page),
            None => LayoutScan::new(unit, page_bytes, info.dense),
        })
    }

    fn with_chunk(unit: Unit, page_bytes: u64, chunk: u64) -> LayoutScan {
        LayoutScan { chunk, unit, page_bytes, ends: HashMap::new(), requests: 0 }
    }

    /// Folds in the next request of the trace.
    pub fn add(&mut self, r: &Request) -> Result<(), SimError> {
        let (chunk, page_bytes) = (self.chunk, self.page_bytes);
        let dense = chunk != u64::MAX;
        let pr = pages_of(r, self.unit, page_bytes, self.requests)?;
        self.requests += 1;
        let (Some(first), Some(last)) = (pr.keys().next(), pr.keys().last()) else { return Ok(()) };
        let (dev, first) = split_key(first);
        let last = split_key(last).1;
        let (lo, hi) = (first.saturating_mul(page_bytes), last.saturating_mul(page_bytes));
        // Every chunk from the first page's to the last one's (a request
        // may span more than two).
        let (c0, c1) = if dense { (lo / chunk, hi / chunk) } else { (0, 0) };
        for c in c0..=c1 {
            let end = self.ends.entry((dev, c)).or_insert(0);
            *end = (*end).max(if c == c1 { hi + page_bytes } else { (c + 1) * chunk });
        }
        Ok(())
    }

    /// The layout of the requests folded in: touched chunks in address order.
    pub fn finish(self) -> Layout {
        let dense = self.chunk != u64::MAX;
        let mut keys: Vec<(u32, u64)> = self.ends.keys().copied().collect();
        keys.sort_unstable();
        let mut starts = HashMap::with_capacity(keys.len());
        let mut next = 0u64;
        for k in keys {
            starts.insert(k, next);
            next += if dense { self.chunk } else { self.ends[&k] };
        }
        Layout { chunk: self.chunk, starts, footprint: next }
    }

    /// A scan of all of `requests`.
    fn over(mut self, requests: &[Request]) -> Result<Layout, SimError> {
        for r in requests {
            self.add(r)?;
        }
        Ok(self.finish())
    }
}

impl Layout {
    /// Lays out the pages `requests` touch. `dense` packs touched chunks; else
    /// each trace device keeps its offsets, devices one after another.
    pub fn scan(requests: &[Request], unit: Unit, page_bytes: u64, dense: bool) -> Result<Layout, SimError> {
        LayoutScan::new(unit, page_bytes, dense).over(requests)
    }

    /// Packs exactly the touched pages (`size=footprint`, see [`LayoutScan::pages`]).
    pub fn scan_pages(requests: &[Request], unit: Unit, page_bytes: u64, flash_page: u64) -> Result<Layout, SimError> {
        LayoutScan::pages(unit, page_bytes, flash_page).over(requests)
    }

    /// Byte offset on the model device of page `key` (of `page_bytes`).
    #[inline]
    pub fn offset(&self, key: u64, page_bytes: u64) -> u64 {
        let (dev, page) = split_key(key);
        let off = page.saturating_mul(page_bytes);
        if self.chunk == u64::MAX {
            return self.starts.get(&(dev, 0)).map_or(off, |s| s + off);
        }
        let c = off / self.chunk;
        // Pages the scan never saw (a padding read next to a touched page) land
        // past the footprint, where the device counts them as out of range.
        self.starts.get(&(dev, c)).map_or(self.footprint + off % self.chunk, |s| s + off % self.chunk)
    }
}

/// A device model with the layout that maps a trace onto it: the backing
/// device (reads of misses, write-backs) or the cache device (hits, fills).
pub struct Backing {
    pub device: BoxedDevice,
    /// Canonical device spec.
    pub spec: String,
    pub layout: Layout,
    page_bytes: u64,
    /// The device's stats when a warm-up ended: [`stats`](Self::stats) counts from there.
    pub warm: Option<DeviceStats>,
}

/// The devices a run charges: the backing device, and optionally the cache's
/// own device (an SSD caching an HDD, NVRAM…). Without a cache device, hits
/// and fills are free, as for a DRAM buffer.
#[derive(Default)]
pub struct Devices<'p> {
    pub backing: Option<&'p mut Backing>,
    pub cache: Option<&'p mut Backing>,
}

impl Devices<'_> {
    /// Whether any device is charged at all.
    #[inline]
    pub fn any(&self) -> bool {
        self.backing.is_some() || self.cache.is_some()
    }

    /// Charges the effects of one access (or of maintenance, `read_hit` false)
    /// to the devices; returns the time they cost.
    #[inline]
    pub fn charge(&mut self, fx: &Effects, read_hit: Option<u64>) -> Nanos {
        let mut t = 0;
        if let Some(b) = self.backing.as_deref_mut() {
            t += fx.io.iter().map(|io| b.charge(io)).sum::<Nanos>();
        }
        if let Some(c) = self.cache.as_deref_mut() {
            if let Some(key) = read_hit {
                t += c.charge_cache_read(key, 1);
            }
            t += fx.io.iter().map(|io| c.charge_as_cache(io)).sum::<Nanos>();
        }
        t
    }

    /// A trimmed page: the backing device may drop it.
    pub fn trim(&mut self, key: u64) {
        if let Some(b) = self.backing.as_deref_mut() {
            b.trim(key);
        }
    }
}

impl Backing {
    /// Builds the device `spec` names, sized to the pages `requests` touch.
    pub fn new(spec: &str, requests: &[Request], unit: Unit, page_bytes: u64) -> Result<Backing, SimError> {
        let layout = LayoutScan::for_device(spec, unit, page_bytes)?.over(requests)?;
        Backing::with_layout(spec, layout, page_bytes)
    }

    /// Builds the device `spec` names over a layout (from a [`LayoutScan`]
    /// made with [`LayoutScan::for_device`] of the same spec).
    pub fn with_layout(spec: &str, layout: Layout, page_bytes: u64) -> Result<Backing, SimError> {
        let (device, canonical) = catalog::build(spec, &DeviceCtx { footprint_bytes: layout.footprint })?;
        Ok(Backing { device, spec: canonical.canonical(), layout, page_bytes, warm: None })
    }

    fn span(&self, key: u64, pages: u32) -> (u64, u64) {
        (self.layout.offset(key, self.page_bytes), pages as u64 * self.page_bytes)
    }

    /// Charges one effect to the device; returns its service time.
    #[inline]
    pub fn charge(&mut self, io: &Io) -> Nanos {
        match *io {
            Io::Fetch { key, pages } | Io::PadRead { key, pages } => {
                let (off, len) = self.span(key, pages);
                self.device.read(off, len)
            }
            Io::ReadForWrite { key } => {
                let (off, len) = self.span(key, 1);
                self.device.read(off, len)
            }
            Io::WriteThrough { key } => {
                let (off, len) = self.span(key, 1);
                self.device.write(off, len)
            }
            Io::WriteBack { key, pages } => {
                let (off, len) = self.span(key, pages);
                self.device.write(off, len)
            }
            Io::CacheWrite { .. } | Io::Evict { .. } | Io::Invalidate { .. } => 0,
        }
    }

    /// Charges one effect to a cache device: fills and write hits write it,
    /// a write-back reads the dirty data from it.
    #[inline]
    pub fn charge_as_cache(&mut self, io: &Io) -> Nanos {
        match *io {
            Io::CacheWrite { key } => {
                let (off, len) = self.span(key, 1);
                self.device.write(off, len)
            }
            Io::WriteBack { key, pages } => self.charge_cache_read(key, pages),
            _ => 0,
        }
    }

    /// Reads `pages` cached pages from a cache device (a hit, or a write-back's source).
    #[inline]
    pub fn charge_cache_read(&mut self, key: u64, pages: u32) -> Nanos {
        let (off, len) = self.span(key, pages);
        self.device.read(off, len)
    }

    /// A trimmed page: the device may drop it.
    pub fn trim(&mut self, key: u64) {
        let (off, len) = self.span(key, 1);
        self.device.trim(off, len);
    }

    pub fn stats(&self) -> DeviceStats {
        super::relative::since_warm(self.device.stats(), self.warm.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::page_key;
    use crate::trace::Op;

    fn req(dev: u32, addr: u64, len: u32) -> Request {
        Request { time: 0, addr, len, dev, op: Op::Write }
    }

    #[test]
    fn dense_layout_packs_touched_chunks_in_order() {
        let pb = 4096;
        // Device 0 touches chunk 0 and a chunk far away; device 1 one chunk.
        let reqs = [req(0, 1 << 40, 8192), req(0, 4096, 4096), req(1, 0, 4096)];
        let l = Layout::scan(&reqs, Unit::Bytes, pb, true).unwrap();
        assert_eq!(l.footprint, 3 * CHUNK_BYTES);
        assert_eq!(l.offset(page_key(0, 1).unwrap(), pb), 4096);
        assert_eq!(l.offset(page_key(0, (1 << 40) / pb + 1).unwrap(), pb), CHUNK_BYTES + 4096);
        assert_eq!(l.offset(page_key(1, 0).unwrap(), pb), 2 * CHUNK_BYTES);
        // An untouched page lands past the footprint.
        assert!(l.offset(page_key(0, (100 << 20) / pb).unwrap(), pb) >= l.footprint);
    }

    /// The audit's case: uniform random writes over 64,000 pages. `size=auto`
    /// lays out the touched 16 MiB chunks (4 × 4096 pages = 65,536), so
    /// 1,536 never-written pages act as extra spare; `size=footprint` lays
    /// out exactly the 64,000 pages, densely and in address order.
    #[test]
    fn footprint_layout_packs_exactly_the_touched_pages() {
        let pb = 4096;
        let mut x = 99u64;
        let mut reqs: Vec<Request> = (0..64_000).map(|p| req(0, p * pb, 4096)).collect();
        for _ in 0..50_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            reqs.push(req(0, (x >> 33) % 64_000 * pb, 4096));
        }
        let auto = Backing::new("ftl(nand=ull,op=23%)", &reqs, Unit::Bytes, pb).unwrap();
        assert_eq!(auto.layout.footprint, 65_536 * pb);
        assert_eq!(auto.stats().logical_pages, 65_536);
        let exact = Backing::new("ftl(nand=ull,op=23%,size=footprint)", &reqs, Unit::Bytes, pb).unwrap();
        assert_eq!(exact.stats().logical_pages, 64_000);
        // Sparse: two far-apart runs and a lone page on a second device.
        let reqs = [req(0, 1 << 40, 3 * 4096), req(0, 8 * pb, 8192), req(1, 5 * pb, 100)];
        let l = Layout::scan_pages(&reqs, Unit::Bytes, pb, pb).unwrap();
        assert_eq!(l.footprint, 6 * pb);
        assert_eq!(l.offset(page_key(0, 8).unwrap(), pb), 0);
        assert_eq!(l.offset(page_key(0, 9).unwrap(), pb), pb);
        assert_eq!(l.offset(page_key(0, (1 << 40) / pb + 2).unwrap(), pb), 4 * pb);
        assert_eq!(l.offset(page_key(1, 5).unwrap(), pb), 5 * pb);
        assert!(l.offset(page_key(0, 10).unwrap(), pb) >= l.footprint, "untouched: past the end");
        // 16 KiB flash pages under 4 KiB trace pages: the touched flash pages.
        let l = Layout::scan_pages(&reqs, Unit::Bytes, pb, 4 * pb).unwrap();
        assert_eq!(l.footprint, 3 * 4 * pb);
        assert_eq!(l.offset(page_key(0, 9).unwrap(), pb), pb);
        assert_eq!(l.offset(page_key(1, 5).unwrap(), pb), 2 * 4 * pb + pb);
    }

    #[test]
    fn a_request_spanning_three_chunks_lays_out_all_three() {
        let l = Layout::scan(&[req(0, 0, (2 * CHUNK_BYTES + 4096) as u32)], Unit::Bytes, 4096, true).unwrap();
        assert_eq!(l.footprint, 3 * CHUNK_BYTES);
        assert_eq!(l.offset(page_key(0, CHUNK_BYTES / 4096 + 1).unwrap(), 4096), CHUNK_BYTES + 4096);
    }

    #[test]
    fn chunks_hold_whole_blocks_of_every_nand_preset() {
        for p in crate::device::PRESETS {
            assert!(CHUNK_BYTES.is_multiple_of(p.timing.block_bytes()), "{}", p.name);
        }
    }

    #[test]
    fn disk_layout_keeps_offsets_and_stacks_devices() {
        let pb = 4096;
        let reqs = [req(0, 100 * pb, 4096), req(1, 8 * pb, 4096)];
        let l = Layout::scan(&reqs, Unit::Bytes, pb, false).unwrap();
        assert_eq!(l.offset(page_key(0, 7).unwrap(), pb), 7 * pb);
        assert_eq!(l.offset(page_key(1, 8).unwrap(), pb), 101 * pb + 8 * pb);
        assert_eq!(l.footprint, 101 * pb + 9 * pb);
    }

    #[test]
    fn effects_are_charged_to_the_device() {
        let reqs = [req(0, 0, 64 << 10)];
        let mut b = Backing::new("ftl(nand=ull)", &reqs, Unit::Bytes, 4096).unwrap();
        assert_eq!(b.charge(&Io::WriteBack { key: 0, pages: 4 }), 4 * 16_000);
        assert_eq!(b.charge(&Io::Fetch { key: 1, pages: 1 }), 12_000);
        assert_eq!(b.charge(&Io::CacheWrite { key: 1 }), 0);
        let s = b.stats();
        assert_eq!((s.host_page_writes, s.host_page_reads), (4, 1));
    }
}
