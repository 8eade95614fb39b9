//! The power-cut proof: a scripted workload on a small cache, cut at
//! every write point.
use super::*;
use crate::device::MemDevice;
use crate::faulty::{CutMode, FaultyDevice, PowerDomain, SECTOR};
use crate::meta::{region_len, Geometry};
use crate::recover::{load, StartKind};
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
    /// The workload runs a cleaner step after every write.
    cleaner: bool,
    /// Write-back with a replacement policy: fills on misses
    /// ([`CacheMap::set_fills_on_miss`]), driven by [`lru_workload`].
    fills: bool,
    /// [`switch_workload`]: write-back LRU, write-through, write-back again.
    switches: bool,
    /// Some writes are trims and zeroes ([`discard`]) instead.
    trims: bool,
}

/// A cleaner's watch that finds every dirty slot due at once (as
/// `--max-dirty 0%` does), oldest dirtied first.
#[derive(Default)]
struct AllDue(std::collections::VecDeque<u32>);

impl DirtyWatch for AllDue {
    fn dirtied(&mut self, slot: u32) {
        assert!(!self.0.contains(&slot), "slot {slot} dirtied twice without a clean between");
        self.0.push_back(slot);
    }
    fn cleaned(&mut self, slot: u32) {
        let before = self.0.len();
        self.0.retain(|&s| s != slot);
        assert_eq!(self.0.len() + 1, before, "slot {slot} cleaned but not dirty");
    }
}

/// The cleaner's step: the oldest dirty slot written back.
fn clean_oldest(c: &Cache) -> io::Result<CleanOne> {
    let mut buf = vec![0u8; SEG as usize];
    c.clean_one(|w: &mut AllDue| w.0.front().copied(), &mut buf)
}

/// The watch agrees with the dirty bitmap.
fn assert_watch_in_step<S: BlockDevice, H: BlockDevice, M: BlockDevice>(c: &CacheMap<S, H, M>) {
    let mut known: Vec<u32> = c.with_watch(|w: &mut AllDue| w.0.iter().copied().collect()).unwrap();
    known.sort_unstable();
    let st = lock(&c.state);
    let dirty: Vec<u32> = (0..SSD_SEGS).filter(|&s| st.dirty[s as usize]).collect();
    assert_eq!(known, dirty, "the cleaner's watch and the dirty bitmap disagree");
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
        Env { dom, ssd, hdd, cleaner: false, fills: false, switches: false, trims: false }
    }

    fn store(&self) -> MetaStore<FaultyDevice> {
        MetaStore::new(self.hdd.clone(), LOGICAL, geom()).unwrap()
    }

    fn open(&self) -> Result<(Cache, Started), RecoverError> {
        let (c, st) = CacheMap::open(self.ssd.clone(), self.hdd.clone(), self.store(), false)?;
        if self.cleaner {
            c.set_watch(Box::<AllDue>::default());
        }
        if self.fills {
            c.set_fills_on_miss(true)?;
        }
        Ok((c, st))
    }

    fn with_fills(mut self) -> Env {
        self.fills = true;
        self
    }

    fn with_cleaner(mut self) -> Env {
        self.cleaner = true;
        self
    }

    fn with_trims(mut self) -> Env {
        self.trims = true;
        self
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
            assert!(ok, "{ctx}: sector {} (segment {}) lost an acknowledged-and-flushed write", i / s, i as u64 / SEG);
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
        self.inflight = c.saving();
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

/// A write; with a cleaner, then the cleaner's step (and a sync of the
/// backing device every other write), so cuts land in its write-backs.
fn step(env: &Env, c: &Cache, model: &mut Model, metas: &mut Metas, rng: &mut StdRng, tag: &mut u8) -> io::Result<()> {
    if env.trims && rng.gen_bool(0.3) {
        discard(c, model, metas, rng)?;
    } else {
        write(c, model, metas, rng, tag)?;
    }
    if env.cleaner {
        clean_oldest(c)?;
        if tag.is_multiple_of(2) {
            c.sync_backing()?;
        }
        assert_watch_in_step(c);
    }
    Ok(())
}

fn write(c: &Cache, model: &mut Model, metas: &mut Metas, rng: &mut StdRng, tag: &mut u8) -> io::Result<()> {
    // Blocks concentrate on the first 12 segments so that cached ones are hit.
    let block = rng.gen_range(0..(12 * SEG / BLOCK));
    write_block(c, model, metas, block, tag)
}

/// A trim or zeroes of 1 to 5 blocks (whole segments and pieces, cached or
/// not, dirty or not). On these devices a trim punches a hole, so every
/// kind leaves zeroes: the model takes it as a write of zeroes, and a crash
/// must find each sector as it was or zero, never older data.
fn discard(c: &Cache, model: &mut Model, metas: &mut Metas, rng: &mut StdRng) -> io::Result<()> {
    let block = rng.gen_range(0..(12 * SEG / BLOCK));
    let blocks = rng.gen_range(1..=5u64);
    let (off, len) = (block * BLOCK, blocks * BLOCK);
    let how = match rng.gen_range(0..4) {
        0 => Discard::Trim,
        1 => Discard::Zero { punch: true },
        2 => Discard::Zero { punch: false },
        _ => Discard::FastZero { punch: true },
    };
    model.since.push((off, vec![0; len as usize]));
    let r = c.discard(off, len, how);
    metas.after(c);
    r.map(drop)
}

fn write_block(c: &Cache, model: &mut Model, metas: &mut Metas, block: u64, tag: &mut u8) -> io::Result<()> {
    *tag = tag.wrapping_add(1).max(1);
    let data: Vec<u8> = (0..BLOCK).map(|i| tag.wrapping_mul(31) ^ (i / SECTOR) as u8 ^ 0x80).collect();
    model.since.push((block * BLOCK, data.clone()));
    let r = c.write(&data, block * BLOCK);
    metas.after(c);
    r
}

/// A clean shutdown, which makes everything durable once it returns; the
/// metadata it may leave is the last save or the clean one.
fn shut_down(c: &Cache, model: &mut Model, metas: &mut Metas) -> io::Result<()> {
    let mut shadow = c.meta().clone();
    shadow.version = shadow.version.wrapping_add(1);
    shadow.clean = true;
    metas.durable = Some(c.saved().clone());
    metas.inflight = Some(shadow.clone());
    let done = c.shutdown()?;
    assert_eq!(done, shadow);
    model.commit();
    metas.durable = Some(done);
    metas.inflight = None;
    Ok(())
}

/// The scripted workload; stops at the first error (the power cut).
fn workload(env: &Env, model: &mut Model, metas: &mut Metas, seed: u64) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut tag = 0u8;
    metas.before_open(env);
    let (c, _) = env.open()?;
    metas.after(&c);
    for round in 0..3 {
        for _ in 0..5 {
            step(env, &c, model, metas, &mut rng, &mut tag)?;
        }
        c.flush()?;
        model.commit();
        // Unflushed writes just before the procedure: its write-back
        // (line 4) must not lose the flushed data under them.
        for _ in 0..2 {
            step(env, &c, model, metas, &mut rng, &mut tag)?;
        }
        // A plan: 3 slots get 3 uncached segments (round-robin slots,
        // like the evict clock).
        let mut plan = Vec::new();
        let mut s = (round * 3) as u32 % SSD_SEGS;
        while plan.len() < 3 {
            let h = rng.gen_range(0..12u64);
            if c.slot_of(h).is_none() && !plan.iter().any(|&(_, p)| p == h) {
                plan.push((s, h));
                s = (s + 1) % SSD_SEGS;
            }
        }
        let r = c.caching_and_eviction(&plan);
        metas.after(&c);
        r?;
        for _ in 0..4 {
            step(env, &c, model, metas, &mut rng, &mut tag)?;
        }
        c.flush()?;
        model.commit();
    }
    step(env, &c, model, metas, &mut rng, &mut tag)?;
    shut_down(&c, model, metas)?;
    // Restart after a clean shutdown and do a little more.
    metas.before_open(env);
    let (c, st) = env.open()?;
    assert_eq!(st.kind, StartKind::Clean);
    metas.after(&c);
    for _ in 0..3 {
        step(env, &c, model, metas, &mut rng, &mut tag)?;
    }
    c.flush()?;
    model.commit();
    step(env, &c, model, metas, &mut rng, &mut tag)?;
    Ok(())
}

/// LRU over the slots, as the engine's decider runs a replacement policy in
/// write-back: a miss fills its segment; a full cache first evicts the least
/// recently used segment (written back if dirty, unmapped by a save).
struct Lru(std::collections::VecDeque<u64>);

impl Lru {
    /// Seeded with what the map holds (a warm restart keeps it).
    fn of(c: &Cache) -> Lru {
        Lru(c.meta().map.iter().flatten().copied().collect())
    }

    fn access(&mut self, c: &Cache, metas: &mut Metas, h: u64) -> io::Result<()> {
        if let Some(i) = self.0.iter().position(|&x| x == h) {
            self.0.remove(i);
            self.0.push_back(h);
            return Ok(());
        }
        if self.0.len() == SSD_SEGS as usize {
            let victim = self.0.pop_front().expect("full");
            let r = c.evict(victim);
            metas.after(c);
            assert!(r?, "the victim was cached");
        }
        let slot = c.meta().map.iter().position(|m| m.is_none()).expect("a free slot") as u32;
        let r = c.replace(slot, h);
        metas.after(c);
        r?;
        self.0.push_back(h);
        Ok(())
    }
}

/// The workload of a write-back cache with LRU: reads and writes on 12 hot
/// segments over 8 slots (write-allocate: a write miss fills first), so
/// that fills, evictions of dirty segments and their saves interleave with
/// flushes, a clean shutdown and a warm restart.
fn lru_workload(env: &Env, model: &mut Model, metas: &mut Metas, seed: u64) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut tag = 0u8;
    let mut img = vec![0u8; BLOCK as usize];
    let mut one = |c: &Cache, lru: &mut Lru, model: &mut Model, metas: &mut Metas, tag: &mut u8| -> io::Result<()> {
        if env.trims && rng.gen_bool(0.2) {
            discard(c, model, metas, &mut rng)?;
            // The policy learns what the discard dropped (the engine's
            // decider finds out at its next eviction instead).
            *lru = Lru::of(c);
            return Ok(());
        }
        let block = rng.gen_range(0..(12 * SEG / BLOCK));
        lru.access(c, metas, block * BLOCK / SEG)?;
        if rng.gen_bool(0.7) {
            write_block(c, model, metas, block, tag)?;
        } else {
            c.read(&mut img, block * BLOCK)?;
        }
        if env.cleaner && rng.gen_bool(0.3) {
            clean_oldest(c)?;
            metas.after(c);
            // Not always synced at once: a save between a write-back and its
            // sync must not unmap the slot before BACKING has it.
            if rng.gen_bool(0.5) {
                c.sync_backing()?;
            }
            assert_watch_in_step(c);
        }
        Ok(())
    };
    metas.before_open(env);
    let (c, _) = env.open()?;
    metas.after(&c);
    let mut lru = Lru::of(&c);
    for _ in 0..4 {
        for _ in 0..6 {
            one(&c, &mut lru, model, metas, &mut tag)?;
        }
        c.flush()?;
        model.commit();
        one(&c, &mut lru, model, metas, &mut tag)?;
    }
    shut_down(&c, model, metas)?;
    // A warm restart: the segments stay cached, and evicting them later
    // must unmap them durably first.
    metas.before_open(env);
    let (c, st) = env.open()?;
    assert_eq!(st.kind, StartKind::Clean);
    metas.after(&c);
    let mut lru = Lru::of(&c);
    for _ in 0..8 {
        one(&c, &mut lru, model, metas, &mut tag)?;
    }
    c.flush()?;
    model.commit();
    one(&c, &mut lru, model, metas, &mut tag)?;
    Ok(())
}

/// Mode switches under writes: write-back with LRU; then leaving it (no new
/// dirty data, every dirty slot written back, the map switched to
/// write-through and saved empty); write-through writes and fills; then
/// write-back again (the unsynced fills synced first) with LRU; each phase
/// flushed. A start after a cut opens the map as write-back, which reads a
/// write-through map's empty saves right too.
fn switch_workload(
    env: &Env,
    model: &mut Model,
    metas: &mut Metas,
    seed: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut tag = 0u8;
    metas.before_open(env);
    let (c, _) = env.open()?;
    metas.after(&c);
    let mut lru = Lru::of(&c);
    let mut phase = |c: &Cache, lru: &mut Lru, model: &mut Model, metas: &mut Metas, tag: &mut u8| -> io::Result<()> {
        for _ in 0..8 {
            let block = rng.gen_range(0..(12 * SEG / BLOCK));
            lru.access(c, metas, block * BLOCK / SEG)?;
            write_block(c, model, metas, block, tag)?;
        }
        c.flush()?;
        model.commit();
        Ok(())
    };
    phase(&c, &mut lru, model, metas, &mut tag)?;
    c.stop_dirtying();
    let r = c.write_back();
    metas.after(&c);
    r?;
    let r = c.set_mode(WriteMode::Through, false);
    metas.after(&c);
    r?;
    phase(&c, &mut lru, model, metas, &mut tag)?;
    // Fills after the last flush: not yet synced when write-back resumes.
    for h in 12..15 {
        lru.access(&c, metas, h)?;
    }
    let r = c.set_mode(WriteMode::Back, false).and_then(|()| c.set_fills_on_miss(true));
    metas.after(&c);
    r?;
    phase(&c, &mut lru, model, metas, &mut tag)?;
    Ok(())
}

/// Opens after a cut and checks the data through the recovered map.
fn recover_and_check(env: &Env, model: &Model, ctx: &str) -> StartKind {
    let (c, st) = env.open().unwrap_or_else(|e| panic!("{ctx}: recovery failed: {e}"));
    let mut img = vec![0u8; LOGICAL as usize];
    c.read(&mut img, 0).unwrap();
    model.check(&img, ctx);
    // Recovery starts with an all-clean data bitmap (line 47), which is
    // right only if the HDD now holds everything the SSD had: evict every
    // slot (no write-back happens) and check again through the HDD.
    if env.fills {
        for h in 0..HDD_SEGS {
            c.evict(h).unwrap();
        }
    } else {
        let uncached: Vec<u64> = (0..HDD_SEGS).filter(|h| c.slot_of(*h).is_none()).take(SSD_SEGS as usize).collect();
        let plan: Vec<(u32, u64)> = uncached.into_iter().enumerate().map(|(s, h)| (s as u32, h)).collect();
        c.caching_and_eviction(&plan).unwrap();
    }
    c.read(&mut img, 0).unwrap();
    model.check(&img, &format!("{ctx}, after evicting every slot"));
    st.kind
}

/// Runs the workload cut at every write point, checks each recovery, and
/// (with `nested`) also cuts the first recovery at each of its writes.
fn cut_everywhere(seed: u64, mode: CutMode, nested: bool) -> (u64, u64) {
    cut_everywhere_with(seed, mode, nested, false)
}

/// [`cut_everywhere`], with a cleaner step after every write if `cleaner`.
fn cut_everywhere_with(seed: u64, mode: CutMode, nested: bool, cleaner: bool) -> (u64, u64) {
    cut_everywhere_of(seed, mode, nested, cleaner, false)
}

/// The workload of the env: PWC's, LRU's for a map that fills on misses, or
/// mode switches'.
fn run(env: &Env, model: &mut Model, metas: &mut Metas, seed: u64) -> Result<(), Box<dyn std::error::Error>> {
    if env.switches {
        switch_workload(env, model, metas, seed)
    } else if env.fills {
        lru_workload(env, model, metas, seed)
    } else {
        workload(env, model, metas, seed)
    }
}

/// [`cut_everywhere_of`] for [`switch_workload`].
fn cut_everywhere_switching(seed: u64, mode: CutMode, nested: bool) -> (u64, u64) {
    cut_everywhere_env(seed, mode, nested, &|e: Env| Env { switches: true, ..e.with_fills() })
}

/// [`cut_everywhere_with`]; with `fills`, of write-back with a replacement
/// policy ([`lru_workload`]).
fn cut_everywhere_of(seed: u64, mode: CutMode, nested: bool, cleaner: bool, fills: bool) -> (u64, u64) {
    let with = |e: Env| {
        let e = if cleaner { e.with_cleaner() } else { e };
        if fills {
            e.with_fills()
        } else {
            e
        }
    };
    cut_everywhere_env(seed, mode, nested, &with)
}

/// Runs [`run`] on envs made by `with`, cut at every write point, and checks
/// each recovery (with `nested`, also cut inside the first recovery).
fn cut_everywhere_env(seed: u64, mode: CutMode, nested: bool, with: &dyn Fn(Env) -> Env) -> (u64, u64) {
    let env = with(Env::new(seed, mode));
    let (mut model, mut metas) = (Model::new(), Metas::default());
    run(&env, &mut model, &mut metas, seed).unwrap();
    let total = env.dom.writes();
    let (mut cuts, mut nested_cuts) = (0, 0);
    let mut kinds = HashMap::new();
    for k in 0..total {
        let ctx = format!("seed {seed} {mode:?} cut at write {k}/{total}");
        let env = with(Env::new(seed ^ k.wrapping_mul(0x9E37), mode));
        env.dom.schedule_power_cut(Some(k));
        let (mut model, mut metas) = (Model::new(), Metas::default());
        let r = run(&env, &mut model, &mut metas, seed);
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
                let e2 = with(Env::from_images(seed ^ j, mode, images.0.clone(), images.1.clone()));
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

/// One writer thread's view: the blocks it owns, what each held at its
/// last completed flush, and what it wrote since.
#[derive(Default)]
struct Writer {
    durable: HashMap<u64, Vec<u8>>,
    since: Vec<(u64, Vec<u8>)>,
}

/// Writers on interleaved blocks (so they share segments) while the
/// procedure runs again and again: the power is cut at write `cut` (or
/// never), then the cache is recovered and every block checked against
/// its writer. Returns the write points the run had.
fn concurrent_run(seed: u64, cut: Option<u64>) -> u64 {
    concurrent_run_with(seed, cut, false)
}

/// [`concurrent_run`]; with `cleaner`, a cleaner thread writes back
/// every dirty slot as soon as it can, racing the writers on their
/// segments and the procedures.
fn concurrent_run_with(seed: u64, cut: Option<u64>, cleaner: bool) -> u64 {
    const WRITERS: u64 = 3;
    let env = Env::new(seed, CutMode::DropUnsynced);
    let env = if cleaner { env.with_cleaner() } else { env };
    let writing = AtomicU64::new(WRITERS);
    env.dom.schedule_power_cut(cut);
    let writers: Vec<Mutex<Writer>> = (0..WRITERS).map(|_| Mutex::new(Writer::default())).collect();
    if let Ok((c, _)) = env.open() {
        // Cache half the hot segments first so that writes hit the SSD.
        let _ = c.caching_and_eviction(&[(0, 0), (1, 3), (2, 6), (3, 9)]);
        std::thread::scope(|sc| {
            for (t, w) in writers.iter().enumerate() {
                let (c, writing) = (&c, &writing);
                sc.spawn(move || {
                    let _done = Done(writing);
                    let mut rng = StdRng::seed_from_u64(seed * 31 + t as u64);
                    for i in 0..40u32 {
                        let block = rng.gen_range(0..(12 * SEG / BLOCK) / WRITERS) * WRITERS + t as u64;
                        let data: Vec<u8> = (0..BLOCK)
                            .map(|k| (i as u8).wrapping_mul(7) ^ (t as u8) << 5 ^ (k / SECTOR) as u8)
                            .collect();
                        lock(w).since.push((block, data.clone()));
                        if c.write(&data, block * BLOCK).is_err() {
                            return;
                        }
                        if i % 5 == 4 {
                            if c.flush().is_err() {
                                return;
                            }
                            let mut w = lock(w);
                            let done: Vec<_> = w.since.drain(..).collect();
                            w.durable.extend(done);
                        }
                    }
                });
            }
            if cleaner {
                let (c, writing) = (&c, &writing);
                sc.spawn(move || {
                    let mut cleaned = 0u32;
                    while writing.load(Relaxed) > 0 {
                        match clean_oldest(c) {
                            Err(_) => return, // the power cut
                            Ok(CleanOne::Cleaned { .. }) => {
                                cleaned += 1;
                                if cleaned.is_multiple_of(2) && c.sync_backing().is_err() {
                                    return;
                                }
                            }
                            Ok(_) => std::thread::yield_now(),
                        }
                    }
                });
            }
            // The procedure, again and again, with plans moving slots
            // between the writers' segments.
            let mut rng = StdRng::seed_from_u64(seed);
            for _ in 0..6 {
                let cached: Vec<u64> = c.meta().map.iter().flatten().copied().collect();
                let free: Vec<u64> = (0..12u64).filter(|h| !cached.contains(h)).collect();
                let plan: Vec<(u32, u64)> = (0..2)
                    .map(|k| (rng.gen_range(0..SSD_SEGS / 2) * 2 + k, free[rng.gen_range(0..free.len())]))
                    .collect();
                let plan = if plan[0].1 == plan[1].1 { vec![plan[0]] } else { plan };
                if c.caching_and_eviction(&plan).is_err() {
                    return;
                }
            }
        });
        if cleaner && cut.is_none() {
            assert_watch_in_step(&c);
        }
    }
    let writes = env.dom.writes();
    // Interleavings differ from run to run: a cut past this run's end
    // must not land in the recovery.
    env.dom.schedule_power_cut(None);
    env.dom.restore_power();
    let ctx = format!("seed {seed}, cut at {cut:?} of {writes}");
    let (c, _) = env.open().unwrap_or_else(|e| panic!("{ctx}: recovery failed: {e}"));
    let mut img = vec![0u8; LOGICAL as usize];
    c.read(&mut img, 0).unwrap();
    let initial: Vec<u8> = (0..LOGICAL).map(|i| (i / SECTOR) as u8).collect();
    let s = SECTOR as usize;
    for (t, w) in writers.iter().enumerate() {
        let w = lock(w);
        for block in (t as u64..12 * SEG / BLOCK).step_by(WRITERS as usize) {
            let at = (block * BLOCK) as usize;
            let base = w.durable.get(&block).map_or(&initial[at..at + BLOCK as usize], |d| &d[..]);
            for k in (0..BLOCK as usize).step_by(s) {
                let got = &img[at + k..at + k + s];
                let ok = got == &base[k..k + s] || w.since.iter().any(|(b, d)| *b == block && got == &d[k..k + s]);
                assert!(ok, "{ctx}: block {block} sector {} lost a flushed write (writer {t})", k / s);
            }
        }
    }
    writes
}

/// Counts a writer thread out when it ends, however it ends.
struct Done<'a>(&'a AtomicU64);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

#[test]
fn concurrent_writers_and_the_cleaner_during_procedures_survive_power_cuts() {
    let mut cuts = 0;
    for seed in 0..16u64 {
        let total = concurrent_run_with(seed, None, true);
        let mut rng = StdRng::seed_from_u64(seed ^ 0xC1EA);
        for _ in 0..8 {
            concurrent_run_with(seed, Some(rng.gen_range(0..total)), true);
            cuts += 1;
        }
    }
    println!("{cuts} cuts of concurrent runs with the cleaner");
}

#[test]
fn power_cut_at_every_write_point_with_the_cleaner_active() {
    for (seed, mode) in [(21, CutMode::DropUnsynced), (22, CutMode::Reorder)] {
        let (cuts, nested) = cut_everywhere_with(seed, mode, seed == 21, true);
        assert!(cuts > 50 && (seed != 21 || nested > 0));
    }
}

#[test]
fn power_cut_at_every_write_point_with_trims_and_zeroes() {
    // PWC with procedures, then with the cleaner (write-backs racing the
    // dropped dirty slots), then write-back LRU (fills, evictions and their
    // saves), each cut at every write point and the first one's recovery too.
    for (seed, mode, cleaner, fills) in [
        (41, CutMode::DropUnsynced, false, false),
        (42, CutMode::Reorder, true, false),
        (43, CutMode::DropUnsynced, false, true),
        (44, CutMode::Reorder, true, true),
    ] {
        let with = |e: Env| {
            let e = e.with_trims();
            let e = if cleaner { e.with_cleaner() } else { e };
            if fills {
                e.with_fills()
            } else {
                e
            }
        };
        let (cuts, nested) = cut_everywhere_env(seed, mode, seed == 41, &with);
        assert!(cuts > 50 && (seed != 41 || nested > 0), "seed {seed}: {cuts} cuts");
    }
}

#[test]
fn a_discard_drops_whole_dirty_segments_unwritten_and_zeroes_pieces_through_the_map() {
    let env = Env::new(5, CutMode::DropUnsynced);
    let (c, _) = env.open().unwrap();
    c.caching_and_eviction(&[(0, 0), (1, 1), (2, 2)]).unwrap();
    for h in 0..3 {
        c.write(&[0x5A; SEG as usize], h * SEG).unwrap();
    }
    assert_eq!(c.status().dirty, 3);
    let version = c.saved().version;
    // half of segment 0, segment 1 whole; then uncached segment 3 whole
    c.discard(SEG / 2, SEG + SEG / 2, Discard::Trim).unwrap();
    let st = c.status();
    assert_eq!((st.trim_dropped_segments, st.cached, st.dirty), (1, 2, 2), "{st:?}");
    assert!(c.saved().version > version, "the dropped slot was durably mapped: saved");
    assert_eq!(c.saved().map[1], None);
    c.discard(3 * SEG, SEG, Discard::Trim).unwrap();
    let mut img = vec![0u8; 4 * SEG as usize];
    c.read(&mut img, 0).unwrap();
    assert!(img[..(SEG / 2) as usize].iter().all(|&b| b == 0x5A));
    assert!(img[(SEG / 2) as usize..2 * SEG as usize].iter().all(|&b| b == 0), "trimmed: zeroes");
    assert!(img[2 * SEG as usize..3 * SEG as usize].iter().all(|&b| b == 0x5A));
    assert!(img[3 * SEG as usize..].iter().all(|&b| b == 0), "uncached: the hole on the backing store");
    // a dropped dirty slot is never written back
    let written = c.status().written_back;
    c.shutdown().unwrap();
    assert_eq!(c.status().written_back, written + 2, "segments 0 and 2 only");
    let mut hdd = vec![0u8; SEG as usize];
    env.hdd.read_at(&mut hdd, SEG).unwrap();
    assert!(hdd.iter().all(|&b| b == 0), "the backing store holds the trim, not the dirty data");
}

#[test]
fn fast_zeroes_fail_where_the_backing_store_cannot_zero_fast_and_change_nothing() {
    /// A backing store that can neither punch nor zero ranges.
    struct Plain(MemDevice);
    impl BlockDevice for Plain {
        fn len(&self) -> u64 {
            self.0.len()
        }
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            self.0.read_at(buf, offset)
        }
        fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
            self.0.write_at(data, offset)
        }
        fn sync(&self) -> io::Result<()> {
            Ok(())
        }
    }
    let hdd = MemDevice::new((LOGICAL + region_len(&geom())) as usize);
    hdd.write_at(&vec![7u8; LOGICAL as usize], 0).unwrap();
    MetaStore::new(&hdd, LOGICAL, geom()).unwrap().format().unwrap();
    let hdd = std::sync::Arc::new(Plain(hdd));
    let ssd = MemDevice::new((SEG * SSD_SEGS as u64) as usize);
    let (c, _) =
        CacheMap::open(&ssd, hdd.clone(), MetaStore::new(hdd.clone(), LOGICAL, geom()).unwrap(), false).unwrap();
    c.caching_and_eviction(&[(0, 0)]).unwrap();
    c.write(&[9; 16], 0).unwrap();
    let e = c.discard(0, 4 * SEG, Discard::FastZero { punch: true }).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP));
    assert_eq!(c.slot_of(0), Some(0), "nothing dropped");
    // a trim it cannot pass on changes nothing either; zeroes are written
    c.discard(0, 4 * SEG, Discard::Trim).unwrap();
    let mut b = [0u8; 16];
    c.read(&mut b, 0).unwrap();
    assert_eq!(b, [9; 16]);
    c.discard(0, 4 * SEG, Discard::Zero { punch: true }).unwrap();
    let mut img = vec![1u8; 4 * SEG as usize];
    c.read(&mut img, 0).unwrap();
    assert!(img.iter().all(|&b| b == 0));
    assert_eq!(c.slot_of(0), None);
    assert_eq!(c.status().zeroed_bytes, 0, "written, not zeroed in place");
}

#[test]
fn the_cleaner_writes_back_only_dirty_slots_and_a_later_write_dirties_again() {
    let env = Env::new(3, CutMode::DropUnsynced).with_cleaner();
    let (c, _) = env.open().unwrap();
    c.caching_and_eviction(&[(0, 0), (1, 1)]).unwrap();
    assert_eq!(clean_oldest(&c).unwrap(), CleanOne::Nothing, "nothing dirty");
    c.write(&[7; 100], SEG + 10).unwrap();
    c.write(&[8; 100], 10).unwrap();
    assert_eq!(c.status().dirty, 2);
    let hdd_byte = |at: u64| {
        let mut b = [0u8];
        env.hdd.read_at(&mut b, at).unwrap();
        b[0]
    };
    assert_ne!(hdd_byte(SEG + 10), 7, "write-back: the HDD has not seen it");
    // Oldest dirtied first: segment 1 (slot 1).
    assert_eq!(clean_oldest(&c).unwrap(), CleanOne::Cleaned { slot: 1, segment: 1 });
    assert_eq!(hdd_byte(SEG + 10), 7);
    assert_eq!(c.status().dirty, 1);
    c.write(&[9; 1], SEG).unwrap();
    assert_watch_in_step(&c);
    assert_eq!(clean_oldest(&c).unwrap(), CleanOne::Cleaned { slot: 0, segment: 0 });
    assert_eq!(clean_oldest(&c).unwrap(), CleanOne::Cleaned { slot: 1, segment: 1 });
    assert_eq!((hdd_byte(10), hdd_byte(SEG)), (8, 9));
    assert_eq!(c.status().dirty, 0);
    assert_eq!(c.status().written_back, 3);
    c.shutdown().unwrap();
    assert_eq!(clean_oldest(&c).unwrap(), CleanOne::Stopped);
}

/// An SSD whose whole-segment reads (the write-back's) stop after
/// reading, at a gate the test opens.
struct GatedSsd {
    dev: MemDevice,
    gate: Mutex<(bool, bool)>, // (a reader waits, open)
    changed: std::sync::Condvar,
}

impl GatedSsd {
    /// Returns once a whole-segment read has reached the (closed) gate.
    fn wait_at_gate(&self) {
        let mut g = lock(&self.gate);
        while !g.0 {
            g = self.changed.wait(g).unwrap();
        }
    }
}

impl BlockDevice for GatedSsd {
    fn len(&self) -> u64 {
        self.dev.len()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.dev.read_at(buf, offset)?;
        if buf.len() == SEG as usize {
            let mut g = lock(&self.gate);
            g.0 = true;
            self.changed.notify_all();
            while !g.1 {
                g = self.changed.wait(g).unwrap();
            }
        }
        Ok(())
    }
    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.dev.write_at(data, offset)
    }
    fn sync(&self) -> io::Result<()> {
        Ok(())
    }
}

type GatedCache = CacheMap<std::sync::Arc<GatedSsd>, std::sync::Arc<MemDevice>, std::sync::Arc<MemDevice>>;

/// A formatted cache whose cache device stops whole-segment reads at the
/// gate (open at first), over an in-memory HDD.
fn gated_cache() -> (GatedCache, std::sync::Arc<GatedSsd>, std::sync::Arc<MemDevice>) {
    let hdd = std::sync::Arc::new(MemDevice::new((LOGICAL + region_len(&geom())) as usize));
    MetaStore::new(hdd.clone(), LOGICAL, geom()).unwrap().format().unwrap();
    let ssd = std::sync::Arc::new(GatedSsd {
        dev: MemDevice::new((SEG * SSD_SEGS as u64) as usize),
        gate: Mutex::new((false, true)),
        changed: Default::default(),
    });
    let store = MetaStore::new(hdd.clone(), LOGICAL, geom()).unwrap();
    let (c, _) = CacheMap::open(ssd.clone(), hdd.clone(), store, false).unwrap();
    (c, ssd, hdd)
}

#[test]
fn a_write_racing_the_cleaner_on_its_segment_ends_dirty_or_on_the_backing_device() {
    let (c, ssd, hdd) = gated_cache();
    c.set_watch(Box::<AllDue>::default());
    c.caching_and_eviction(&[(0, 2)]).unwrap();
    c.write(&[1; 64], 2 * SEG).unwrap();
    lock(&ssd.gate).1 = false;
    let c = &c;
    std::thread::scope(|sc| {
        let cleaner = sc.spawn(move || {
            let mut buf = vec![0u8; SEG as usize];
            c.clean_one(|w: &mut AllDue| w.0.front().copied(), &mut buf).unwrap()
        });
        // The cleaner has read the slot and waits at the gate.
        ssd.wait_at_gate();
        let writer = sc.spawn(|| c.write(&[2; 64], 2 * SEG).unwrap());
        // Give an unordered write the time to land under the cleaner.
        std::thread::sleep(std::time::Duration::from_millis(30));
        lock(&ssd.gate).1 = true;
        ssd.changed.notify_all();
        assert_eq!(cleaner.join().unwrap(), CleanOne::Cleaned { slot: 0, segment: 2 });
        writer.join().unwrap();
    });
    let mut b = [0u8; 64];
    hdd.read_at(&mut b, 2 * SEG).unwrap();
    let dirty = lock(&c.state).dirty[0];
    assert!(dirty || b == [2; 64], "the racing write is neither dirty nor on the backing device");
    assert_watch_in_step(c);
}

#[test]
fn concurrent_writers_during_procedures_survive_power_cuts() {
    let mut cuts = 0;
    for seed in 0..24u64 {
        let total = concurrent_run(seed, None);
        let mut rng = StdRng::seed_from_u64(seed ^ 0xC0FFEE);
        for _ in 0..8 {
            concurrent_run(seed, Some(rng.gen_range(0..total)));
            cuts += 1;
        }
    }
    println!("{cuts} cuts of concurrent runs");
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

#[test]
fn write_back_lru_reads_back_everything_and_saves_only_dirty_slots() {
    let env = Env::new(5, CutMode::DropUnsynced).with_fills();
    let (mut model, mut metas) = (Model::new(), Metas::default());
    lru_workload(&env, &mut model, &mut metas, 5).unwrap();
    let (c, _) = env.open().unwrap();
    let mut img = vec![0u8; LOGICAL as usize];
    c.read(&mut img, 0).unwrap();
    model.check(&img, "no cut");
    c.shutdown().unwrap();
    // 12 segments written through 8 slots: every miss fills, every eviction
    // writes a dirty segment back, and the durable map names exactly the
    // dirty slots.
    let env = Env::new(6, CutMode::DropUnsynced).with_fills();
    let (c, _) = env.open().unwrap();
    let (mut model, mut metas, mut lru, mut tag) = (Model::new(), Metas::default(), Lru::of(&c), 0u8);
    for h in 0..12u64 {
        lru.access(&c, &mut metas, h).unwrap();
        write_block(&c, &mut model, &mut metas, h * SEG / BLOCK, &mut tag).unwrap();
        let dirty: Vec<Option<u64>> = {
            let st = lock(&c.state);
            st.meta.map.iter().zip(&st.dirty).map(|(m, d)| m.filter(|_| *d)).collect()
        };
        assert_eq!(c.saved().map, dirty, "after writing segment {h}");
    }
    let s = c.status();
    assert_eq!((s.filled, s.written_back, s.dirty), (12, 4, 8), "{s:?}");
    c.read(&mut img, 0).unwrap();
    model.check(&img, "12 segments through 8 slots");
}

#[test]
fn write_back_lru_survives_a_power_cut_at_every_write_point() {
    for (seed, mode) in [(31, CutMode::DropUnsynced), (32, CutMode::Reorder)] {
        let (cuts, nested) = cut_everywhere_of(seed, mode, seed == 31, false, true);
        assert!(cuts > 50 && (seed != 31 || nested > 0), "{cuts} cuts, {nested} nested");
    }
}

#[test]
fn write_back_lru_with_the_cleaner_survives_a_power_cut_at_every_write_point() {
    for (seed, mode) in [(41, CutMode::DropUnsynced), (42, CutMode::Reorder)] {
        let (cuts, _) = cut_everywhere_of(seed, mode, false, true, true);
        assert!(cuts > 50, "{cuts} cuts");
    }
}

#[test]
fn mode_switches_survive_a_power_cut_at_every_write_point() {
    for (seed, mode) in [(51, CutMode::DropUnsynced), (52, CutMode::Reorder)] {
        let (cuts, nested) = cut_everywhere_switching(seed, mode, seed == 51);
        assert!(cuts > 50 && (seed != 51 || nested > 0), "{cuts} cuts, {nested} nested");
    }
}

#[test]
fn a_miss_fills_while_the_cleaner_writes_back() {
    // The cleaner holds only the segment it writes back: a fill of another
    // segment (and an eviction of a clean one) completes while that
    // write-back waits at the gate, where it once waited for the admin mutex.
    let (c, ssd, hdd) = gated_cache();
    c.set_fills_on_miss(true).unwrap();
    c.set_watch(Box::<AllDue>::default());
    c.replace(0, 2).unwrap();
    c.replace(1, 3).unwrap();
    c.write(&[7; 64], 2 * SEG).unwrap();
    lock(&ssd.gate).1 = false;
    let c = &c;
    std::thread::scope(|sc| {
        let cleaner = sc.spawn(move || {
            let mut buf = vec![0u8; SEG as usize];
            c.clean_one(|w: &mut AllDue| w.0.front().copied(), &mut buf).unwrap()
        });
        ssd.wait_at_gate();
        let (tx, rx) = std::sync::mpsc::channel();
        sc.spawn(move || {
            let r = c.replace(4, 5).and_then(|()| c.evict(3));
            tx.send(r.map_err(|e| e.to_string())).unwrap();
        });
        let filled = rx.recv_timeout(std::time::Duration::from_secs(20));
        lock(&ssd.gate).1 = true;
        ssd.changed.notify_all();
        assert_eq!(filled.expect("the fill waited for the cleaner's write-back"), Ok(true));
        assert_eq!(cleaner.join().unwrap(), CleanOne::Cleaned { slot: 0, segment: 2 });
    });
    let mut b = [0u8; 64];
    hdd.read_at(&mut b, 2 * SEG).unwrap();
    assert_eq!(b, [7; 64]);
    assert_watch_in_step(c);
}

#[test]
fn a_slot_that_moved_after_the_cleaner_picked_it_is_not_written_back() {
    let (c, _) = Env::new(3, CutMode::DropUnsynced).with_fills().with_cleaner().open().unwrap();
    c.replace(0, 2).unwrap();
    c.write(&[9; 64], 2 * SEG).unwrap();
    // Evicted (written back) and the slot refilled with segment 6, dirty.
    assert!(c.evict(2).unwrap());
    c.replace(0, 6).unwrap();
    c.write(&[5; 64], 6 * SEG).unwrap();
    let mut buf = vec![0u8; SEG as usize];
    assert!(!c.write_back_if_still(0, 2, &mut buf).unwrap(), "slot 0 no longer caches segment 2");
    let mut b = [0u8; 64];
    c.hdd.read_at(&mut b, 2 * SEG).unwrap();
    assert_eq!(b, [9; 64], "segment 2 keeps its own write-back, not slot 0's new bytes");
    assert!(lock(&c.state).dirty[0], "slot 0 (segment 6) stays dirty");
    assert!(c.write_back_if_still(0, 6, &mut buf).unwrap());
    assert_watch_in_step(&c);
}
