//! A minimal read/write path through the persistent map: the precursor of
//! the cache engine, enough to drive the metadata and recovery through a
//! real caching-and-eviction procedure (paper 000, Fig. 5) on real devices.
//!
//! - A read or write is split at segment boundaries; a segment cached in SSD
//!   slot `s` is served by the SSD, any other by the HDD (§3.1).
//! - A write to a cached segment goes to the SSD only and marks the slot
//!   dirty in the in-memory data bitmap (Fig. 3; never stored, §3.2).
//! - [`CacheMap::caching_and_eviction`] runs Fig. 5 lines 4–26 for a *plan*
//!   (which HDD segment goes to which slot), which the engine will take from
//!   the PWC policy's clocks (`crates/core/src/policy/tiered/pwc.rs`): write
//!   every dirty slot back and sync the HDD (line 4), save with the update
//!   bit set (line 5), remap and copy each planned segment (lines 12–21),
//!   sync the SSD, save with the update bit cleared (line 26).
//! - [`CacheMap::shutdown`] is lines 50–54.
//!
//! Not here (the engine's job): concurrency and segment locks (lines 14, 17,
//! 22–23), the double write to both devices for writes that arrive while the
//! procedure runs (§3.6; here `&mut self` excludes them), choosing the plan,
//! the frequency policy beyond counting references.

use std::collections::HashMap;
use std::io;

use super::device::BlockDevice;
use super::meta::{Meta, MetaStore};
use super::recover::{self, RecoverError, Started};

/// Paper 000's frequency increment per reference (§3.3).
const INCREMENT: u16 = 5;

/// A persistent SSD cache over an HDD, reading and writing through the map.
#[derive(Debug)]
pub struct CacheMap<S, H, M> {
    ssd: S,
    hdd: H,
    store: MetaStore<M>,
    /// In-memory metadata (Fig. 3); `meta.version` is the last saved one.
    meta: Meta,
    /// The radix tree of §3.1: HDD segment → SSD slot.
    rev: HashMap<u64, u32>,
    /// Data bitmap (Fig. 3): dirty SSD slots.
    dirty: Vec<bool>,
    /// The last save that completed (durable).
    saved: Meta,
    /// A save in progress (set until it is durable).
    saving: Option<Meta>,
}

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> CacheMap<S, H, M> {
    /// Runs the start procedure ([`recover::start`]) and opens the cache.
    pub fn open(ssd: S, hdd: H, store: MetaStore<M>, force: bool) -> Result<(Self, Started), RecoverError> {
        let started = recover::start(&store, &ssd, &hdd, force)?;
        let meta = started.meta.clone();
        let rev = meta.map.iter().enumerate().filter_map(|(s, h)| h.map(|h| (h, s as u32))).collect();
        let dirty = vec![false; meta.map.len()];
        let saved = meta.clone();
        Ok((CacheMap { ssd, hdd, store, meta, rev, dirty, saved, saving: None }, started))
    }

    /// The in-memory metadata.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The last durable save.
    pub fn saved(&self) -> &Meta {
        &self.saved
    }

    /// A save that was started but has not completed.
    pub fn saving(&self) -> Option<&Meta> {
        self.saving.as_ref()
    }

    /// Logical size: the HDD's segments.
    pub fn len(&self) -> u64 {
        self.meta.geometry.hdd_segments * self.seg()
    }

    /// Whether the logical device is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn seg(&self) -> u64 {
        self.meta.geometry.segment_size as u64
    }

    /// Splits `offset..offset+len` at segment boundaries: (segment, offset in
    /// segment, position in the request, length).
    fn pieces(&self, offset: u64, len: usize) -> io::Result<Vec<(u64, u64, usize, usize)>> {
        super::device::check_range(self.len(), offset, len)?;
        let seg = self.seg();
        let mut out = Vec::new();
        let (mut at, end) = (offset, offset + len as u64);
        while at < end {
            let n = (seg - at % seg).min(end - at);
            out.push((at / seg, at % seg, (at - offset) as usize, n as usize));
            at += n;
        }
        Ok(out)
    }

    /// Reads through the map.
    pub fn read(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let seg = self.seg();
        for (h, within, pos, n) in self.pieces(offset, buf.len())? {
            let b = &mut buf[pos..pos + n];
            match self.rev.get(&h) {
                Some(&s) => self.ssd.read_at(b, s as u64 * seg + within)?,
                None => self.hdd.read_at(b, h * seg + within)?,
            }
        }
        Ok(())
    }

    /// Replaces the frequency table (and the touched bits) the next save
    /// persists: the engine keeps its policy's there (PWC's, counting reads
    /// and decayed at each procedure) instead of the map's own count of
    /// writes. `freq(h)` is `None` for a segment never referenced.
    pub fn set_frequencies(&mut self, freq: impl Fn(u64) -> Option<u16>) {
        for (h, (f, t)) in self.meta.freq.iter_mut().zip(self.meta.touched.iter_mut()).enumerate() {
            let v = freq(h as u64);
            *t = v.is_some();
            *f = v.unwrap_or(0);
        }
    }

    /// Writes through the map (write-back to the SSD for cached segments).
    pub fn write(&mut self, data: &[u8], offset: u64) -> io::Result<()> {
        let seg = self.seg();
        for (h, within, pos, n) in self.pieces(offset, data.len())? {
            let d = &data[pos..pos + n];
            let f = &mut self.meta.freq[h as usize];
            *f = f.saturating_add(INCREMENT);
            self.meta.touched[h as usize] = true;
            match self.rev.get(&h) {
                Some(&s) => {
                    self.ssd.write_at(d, s as u64 * seg + within)?;
                    self.dirty[s as usize] = true;
                }
                None => self.hdd.write_at(d, h * seg + within)?,
            }
        }
        Ok(())
    }

    /// Makes every returned write durable (an NBD flush).
    pub fn flush(&mut self) -> io::Result<()> {
        self.ssd.sync()?;
        self.hdd.sync()
    }

    /// Saves the in-memory metadata as the next version, after `edit`.
    fn save(&mut self, edit: impl FnOnce(&mut Meta)) -> io::Result<()> {
        self.meta.version = self.meta.version.wrapping_add(1);
        edit(&mut self.meta);
        self.saving = Some(self.meta.clone());
        self.store.write(&self.meta)?;
        self.saved = self.saving.take().expect("set above");
        Ok(())
    }

    /// Fig. 5 line 4 / line 52: copies every dirty SSD slot to its HDD
    /// segment and syncs the HDD; nothing is dirty afterwards.
    pub fn write_back(&mut self) -> io::Result<()> {
        let seg = self.seg();
        let mut buf = vec![0u8; seg as usize];
        for s in 0..self.dirty.len() {
            if self.dirty[s] {
                let h = self.meta.map[s].expect("a dirty slot caches a segment");
                recover::copy_segment(&self.ssd, s as u64 * seg, &self.hdd, h * seg, &mut buf)?;
            }
        }
        self.ssd.sync()?;
        self.hdd.sync()?;
        self.dirty.iter_mut().for_each(|d| *d = false);
        Ok(())
    }

    /// Fig. 5 lines 4–26 for `plan`: each `(slot, hdd_segment)` evicts what
    /// the slot holds and caches the segment there. Panics if a planned
    /// segment is already cached or a slot is out of range.
    pub fn caching_and_eviction(&mut self, plan: &[(u32, u64)]) -> io::Result<()> {
        self.write_back()?; // line 4
        self.save(|m| m.update = true)?; // line 5
        let seg = self.seg();
        let mut buf = vec![0u8; seg as usize];
        for &(slot, h) in plan {
            assert!(!self.rev.contains_key(&h), "segment {h} is already cached");
            if let Some(old) = self.meta.map[slot as usize].take() {
                self.rev.remove(&old); // lines 13–16
            }
            self.meta.map[slot as usize] = Some(h); // line 18
            recover::copy_segment(&self.hdd, h * seg, &self.ssd, slot as u64 * seg, &mut buf)?; // line 20
            self.rev.insert(h, slot); // line 21
            self.meta.evict_hand = slot;
        }
        // The copies must be durable before a save says they are there.
        self.ssd.sync()?;
        self.save(|m| {
            m.update = false; // line 26
            m.procedures += 1;
        })
    }

    /// Fig. 5 lines 50–54: write back, then save with the clean bit set.
    pub fn shutdown(mut self) -> io::Result<Meta> {
        self.write_back()?;
        self.save(|m| m.clean = true)?;
        Ok(self.meta)
    }
}

#[cfg(test)]
mod tests {
    //! The power-cut proof: a scripted workload on a small cache, cut at
    //! every write point.
    use super::*;
    use crate::cache::device::MemDevice;
    use crate::cache::faulty::{CutMode, FaultyDevice, PowerDomain, SECTOR};
    use crate::cache::meta::{region_len, Geometry};
    use crate::cache::recover::{load, StartKind};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const SEG: u64 = 8192; // two 4 KiB blocks
    const BLOCK: u64 = 4096;
    const SSD_SEGS: u32 = 8;
    const HDD_SEGS: u64 = 32;
    const LOGICAL: u64 = SEG * HDD_SEGS;

    fn geom() -> Geometry {
        Geometry { segment_size: SEG as u32, ssd_segments: SSD_SEGS, hdd_segments: HDD_SEGS }
    }

    type Cache = CacheMap<FaultyDevice, FaultyDevice, FaultyDevice>;

    struct Env {
        dom: std::sync::Arc<PowerDomain>,
        ssd: FaultyDevice,
        hdd: FaultyDevice,
    }

    impl Env {
        /// A formatted cache whose HDD holds a known pattern.
        fn new(seed: u64, mode: CutMode) -> Env {
            let hdd = MemDevice::new((LOGICAL + region_len(&geom())) as usize);
            let pattern: Vec<u8> = (0..LOGICAL).map(|i| (i / SECTOR) as u8).collect();
            hdd.write_at(&pattern, 0).unwrap();
            MetaStore::new(&hdd, LOGICAL, geom()).unwrap().format().unwrap();
            Env::from_images(seed, mode, vec![0; (SEG * SSD_SEGS as u64) as usize], hdd.into_vec())
        }

        fn from_images(seed: u64, mode: CutMode, ssd: Vec<u8>, hdd: Vec<u8>) -> Env {
            let dom = PowerDomain::new(seed, mode);
            let ssd = dom.attach(ssd);
            let hdd = dom.attach(hdd);
            Env { dom, ssd, hdd }
        }

        fn store(&self) -> MetaStore<FaultyDevice> {
            MetaStore::new(self.hdd.clone(), LOGICAL, geom()).unwrap()
        }

        fn open(&self) -> Result<(Cache, Started), RecoverError> {
            CacheMap::open(self.ssd.clone(), self.hdd.clone(), self.store(), false)
        }
    }

    /// What the logical device may hold: the contents as of the last
    /// completed flush, plus the writes issued since (each may or may not
    /// have persisted, sector by sector).
    struct Model {
        durable: Vec<u8>,
        since: Vec<(u64, Vec<u8>)>,
    }

    impl Model {
        fn new() -> Model {
            Model { durable: (0..LOGICAL).map(|i| (i / SECTOR) as u8).collect(), since: Vec::new() }
        }
        fn commit(&mut self) {
            for (off, d) in self.since.drain(..) {
                self.durable[off as usize..off as usize + d.len()].copy_from_slice(&d);
            }
        }
        /// Panics unless every sector of `img` is allowed.
        fn check(&self, img: &[u8], ctx: &str) {
            let s = SECTOR as usize;
            for i in (0..LOGICAL as usize).step_by(s) {
                let got = &img[i..i + s];
                if got == &self.durable[i..i + s] {
                    continue;
                }
                let ok = self.since.iter().any(|(off, d)| {
                    let off = *off as usize;
                    off <= i && i + s <= off + d.len() && got == &d[i - off..i - off + s]
                });
                assert!(
                    ok,
                    "{ctx}: sector {} (segment {}) lost an acknowledged-and-flushed write",
                    i / s,
                    i as u64 / SEG
                );
            }
        }
    }

    /// The metadata states a cut may leave: the last durable save and the
    /// one being written.
    #[derive(Default)]
    struct Metas {
        durable: Option<Meta>,
        inflight: Option<Meta>,
    }

    impl Metas {
        fn after(&mut self, c: &Cache) {
            self.durable = Some(c.saved().clone());
            self.inflight = c.saving().cloned();
        }
        /// Before a start: it may leave the loaded save or its successor.
        fn before_open(&mut self, env: &Env) {
            let m = load(&env.store()).unwrap().meta;
            let mut next = m.clone();
            next.version = next.version.wrapping_add(1);
            next.clean = false;
            next.update = false;
            self.durable = Some(m);
            self.inflight = Some(next);
        }
        fn allows(&self, m: &Meta) -> bool {
            self.durable.as_ref() == Some(m) || self.inflight.as_ref() == Some(m)
        }
    }

    fn write(c: &mut Cache, model: &mut Model, metas: &mut Metas, rng: &mut StdRng, tag: &mut u8) -> io::Result<()> {
        // Blocks concentrate on the first 12 segments so that cached ones are hit.
        let block = rng.gen_range(0..(12 * SEG / BLOCK));
        *tag = tag.wrapping_add(1).max(1);
        let data: Vec<u8> = (0..BLOCK).map(|i| tag.wrapping_mul(31) ^ (i / SECTOR) as u8 ^ 0x80).collect();
        model.since.push((block * BLOCK, data.clone()));
        let r = c.write(&data, block * BLOCK);
        metas.after(c);
        r
    }

    /// The scripted workload; stops at the first error (the power cut).
    fn workload(env: &Env, model: &mut Model, metas: &mut Metas, seed: u64) -> Result<(), Box<dyn std::error::Error>> {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut tag = 0u8;
        metas.before_open(env);
        let (mut c, _) = env.open()?;
        metas.after(&c);
        for round in 0..3 {
            for _ in 0..5 {
                write(&mut c, model, metas, &mut rng, &mut tag)?;
            }
            c.flush()?;
            model.commit();
            // Unflushed writes just before the procedure: its write-back
            // (line 4) must not lose the flushed data under them.
            for _ in 0..2 {
                write(&mut c, model, metas, &mut rng, &mut tag)?;
            }
            // A plan: 3 slots get 3 uncached segments (round-robin slots,
            // like the evict clock).
            let mut plan = Vec::new();
            let mut s = (round * 3) as u32 % SSD_SEGS;
            while plan.len() < 3 {
                let h = rng.gen_range(0..12u64);
                if !c.rev.contains_key(&h) && !plan.iter().any(|&(_, p)| p == h) {
                    plan.push((s, h));
                    s = (s + 1) % SSD_SEGS;
                }
            }
            let r = c.caching_and_eviction(&plan);
            metas.after(&c);
            r?;
            for _ in 0..4 {
                write(&mut c, model, metas, &mut rng, &mut tag)?;
            }
            c.flush()?;
            model.commit();
        }
        write(&mut c, model, metas, &mut rng, &mut tag)?;
        let saved = c.saved().clone();
        let mut shadow = c.meta().clone();
        shadow.version = shadow.version.wrapping_add(1);
        shadow.clean = true;
        metas.durable = Some(saved);
        metas.inflight = Some(shadow.clone());
        // Shutdown makes everything durable once it returns.
        let done = c.shutdown()?;
        assert_eq!(done, shadow);
        model.commit();
        metas.durable = Some(done);
        metas.inflight = None;
        // Restart after a clean shutdown and do a little more.
        metas.before_open(env);
        let (mut c, st) = env.open()?;
        assert_eq!(st.kind, StartKind::Clean);
        metas.after(&c);
        for _ in 0..3 {
            write(&mut c, model, metas, &mut rng, &mut tag)?;
        }
        c.flush()?;
        model.commit();
        write(&mut c, model, metas, &mut rng, &mut tag)?;
        Ok(())
    }

    /// Opens after a cut and checks the data through the recovered map.
    fn recover_and_check(env: &Env, model: &Model, ctx: &str) -> StartKind {
        let (mut c, st) = env.open().unwrap_or_else(|e| panic!("{ctx}: recovery failed: {e}"));
        let mut img = vec![0u8; LOGICAL as usize];
        c.read(&mut img, 0).unwrap();
        model.check(&img, ctx);
        // Recovery starts with an all-clean data bitmap (line 47), which is
        // right only if the HDD now holds everything the SSD had: evict every
        // slot (no write-back happens) and check again through the HDD.
        let uncached: Vec<u64> = (0..HDD_SEGS).filter(|h| !c.rev.contains_key(h)).take(SSD_SEGS as usize).collect();
        let plan: Vec<(u32, u64)> = uncached.into_iter().enumerate().map(|(s, h)| (s as u32, h)).collect();
        c.caching_and_eviction(&plan).unwrap();
        c.read(&mut img, 0).unwrap();
        model.check(&img, &format!("{ctx}, after evicting every slot"));
        st.kind
    }

    /// Runs the workload cut at every write point, checks each recovery, and
    /// (with `nested`) also cuts the first recovery at each of its writes.
    fn cut_everywhere(seed: u64, mode: CutMode, nested: bool) -> (u64, u64) {
        let env = Env::new(seed, mode);
        let (mut model, mut metas) = (Model::new(), Metas::default());
        workload(&env, &mut model, &mut metas, seed).unwrap();
        let total = env.dom.writes();
        let (mut cuts, mut nested_cuts) = (0, 0);
        let mut kinds = HashMap::new();
        for k in 0..total {
            let ctx = format!("seed {seed} {mode:?} cut at write {k}/{total}");
            let env = Env::new(seed ^ k.wrapping_mul(0x9E37), mode);
            env.dom.schedule_power_cut(Some(k));
            let (mut model, mut metas) = (Model::new(), Metas::default());
            let r = workload(&env, &mut model, &mut metas, seed);
            assert!(r.is_err() && env.dom.is_off(), "{ctx}: the workload did not hit the cut");
            env.dom.restore_power();
            cuts += 1;
            // The metadata is one of the last two durable states.
            let loaded = load(&env.store()).unwrap_or_else(|e| panic!("{ctx}: {e}")).meta;
            assert!(metas.allows(&loaded), "{ctx}: loaded v{} not among the allowed states", loaded.version);
            if nested {
                // Cut the recovery itself at each of its writes, then recover again.
                let images = (env.dom.durable_image(&env.ssd), env.dom.durable_image(&env.hdd));
                for j in 0.. {
                    let e2 = Env::from_images(seed ^ j, mode, images.0.clone(), images.1.clone());
                    e2.dom.schedule_power_cut(Some(j));
                    if e2.open().is_ok() {
                        break;
                    }
                    e2.dom.restore_power();
                    nested_cuts += 1;
                    recover_and_check(&e2, &model, &format!("{ctx}, recovery cut at its write {j}"));
                }
            }
            *kinds.entry(format!("{:?}", recover_and_check(&env, &model, &ctx))).or_insert(0u32) += 1;
        }
        println!("seed {seed} {mode:?}: {total} write points, {cuts} cuts tried, {nested_cuts} nested recovery cuts; starts: {kinds:?}");
        (cuts, nested_cuts)
    }

    #[test]
    fn workload_without_cut_reads_back_everything() {
        let env = Env::new(1, CutMode::DropUnsynced);
        let (mut model, mut metas) = (Model::new(), Metas::default());
        workload(&env, &mut model, &mut metas, 1).unwrap();
        let (c, _) = env.open().unwrap();
        let mut img = vec![0u8; LOGICAL as usize];
        c.read(&mut img, 0).unwrap();
        model.check(&img, "no cut");
        assert_eq!(c.meta().procedures, 3);
        assert!(c.meta().map.iter().filter(|m| m.is_some()).count() >= 3);
    }

    #[test]
    fn power_cut_at_every_write_point_drop_unsynced() {
        let (cuts, nested) = cut_everywhere(7, CutMode::DropUnsynced, true);
        assert!(cuts > 50 && nested > 0);
    }

    #[test]
    fn power_cut_at_every_write_point_reordered_cache() {
        for seed in [11, 12] {
            let (cuts, _) = cut_everywhere(seed, CutMode::Reorder, seed == 11);
            assert!(cuts > 50);
        }
    }
}
