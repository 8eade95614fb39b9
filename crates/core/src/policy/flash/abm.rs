//! ABM: asymmetric buffer management (Jung, Kang & Cha, paper 004 in
//! `papers/`): separate read and write buffers in one cache, each with the
//! replacement unit and rule that suits it.
//!
//! - The **read buffer** holds clean pages, page by page, under a classic
//!   hit-ratio rule (`read=lru|arc|lirs`, the [`classic`] rules themselves;
//!   §3.1 (2)). The rule governs the whole read buffer, whatever its size:
//!   it is resized ([`Replacement::set_capacity`]) as the buffers trade pages.
//! - The **write buffer** holds written pages grouped by flash block under a
//!   block-unit flash rule (`write=fab|clc`, the orders of [`fab`] and
//!   [`clc`]), so its flushes are sequential runs (§3.1 (1), (3)).
//! - A write to a page in the read buffer is a hit and **moves** the page to
//!   the write buffer (§3.2, Fig. 4 A); a read of a page in the write buffer is
//!   a hit served from it.
//! - **Borrowing** (`borrow`, §3.1): a miss may take a free page of the other
//!   buffer. When the cache is full, the replacement runs in the buffer that
//!   holds more than its share (the pseudo code of §3.1: for a read, "if w > W
//!   run write buffer replacement, else read buffer replacement"; symmetric
//!   for writes), so the borrowed pages are the first given back.
//! - **Write-replacement delay** (`delay`, §3.2, Fig. 4 B, C): a flushed
//!   victim block writes all its dirty pages back as sequential runs, but only
//!   one page is freed; the others stay cached, now clean, at the LRU position
//!   of the read buffer, where a re-reference still hits.
//! - **Dynamic sizing** (`dynamic`, §3.3, Fig. 5): ghost read and write
//!   buffers remember pages that each buffer replaced; a pointer `P` (the
//!   write buffer's share) moves one `step` towards the write buffer on a hit
//!   in the read ghost (the read buffer grows) and towards the read buffer on
//!   a hit in the write ghost. [`Policy::split`] reports `P` (its mean in a
//!   run's report, per interval in a series).
//!
//! ## Parameters (defaults)
//!
//! - `read` (`lru`), `write` (`clc`): paper 004 evaluates all six pairs; its
//!   best is ABM-LRU-CLC. The read rule must be resizable (LRU, ARC, LIRS's
//!   paper variant).
//! - `block` (64): see [`BLOCK_PARAM`].
//! - `wsize` (50%): the write buffer's share, fixed without `dynamic` and
//!   `P`'s starting point with it. The paper fixes the sizes at initialisation
//!   but gives no value.
//! - `borrow`, `delay`, `dynamic` (all on, as in the paper): switch each
//!   feature off to measure it.
//! - `ghost` (`origin`): which ghost a delayed page enters if it leaves the
//!   cache before anything references it again, see below.
//! - `step` (1 page): how far `P` moves per ghost hit. The paper says only
//!   that it moves "step by step".
//! - `min` (10%): under dynamic sizing neither share goes below this (and
//!   neither below one page). Ours: the paper gives no bound.
//! - `lru` (10%): with `write=clc`, the size-independent LRU region's share
//!   of the write buffer's initial size (see [`clc`]).
//!
//! ## How the pieces are built, and choices where the paper is silent
//!
//! - The read rule holds every read page but the delayed ones. Its capacity
//!   is the room the read buffer has now: the cache less the write buffer's
//!   pages and the delayed pages (with `borrow`), or less `max(P, w)` and the
//!   delayed pages (without). So it evicts its own victim (ARC's, LIRS's
//!   choice) when the read buffer must give up a page, and its adaptive state
//!   (ARC's `p`, LIRS's LIR/HIR split) follows the buffer's size. Without
//!   dynamic sizing, borrowing and delay, on reads alone, the capacity never
//!   changes, and ABM is its read rule at `(1 - wsize)` of the cache.
//! - Delayed pages sit in a list of their own below the rule (the read
//!   buffer's LRU end, Fig. 4 C), lowest address last in: they are the first
//!   read pages to leave, lowest address first. A read hit there is a hit;
//!   the page becomes a read page and goes to the rule (as a miss from the
//!   rule's point of view; ARC then sees a hit in its ghost list and adapts).
//!   The freed page is the victim block's lowest-addressed page.
//! - Which buffer gives up a page when a miss needs one: the buffer above its
//!   share (`w > P`: the write buffer; `r > C - P`: the read buffer); if
//!   neither, the missed page's own buffer; if that one is empty, the other.
//!   Without `borrow`, a miss takes a free page only while its own buffer is
//!   below its share. A read-buffer replacement drops the oldest delayed page
//!   if there is one, else the rule's victim; a write-buffer replacement
//!   flushes the victim block.
//! - The write buffer is FAB's or CLC's block order over the written pages:
//!   FAB's counts reads as references, CLC's does not, as in [`fab`] and
//!   [`clc`]. A page moved in from the read buffer is a write to it.
//! - Ghosts (§3.3: "the information of replaced pages"): a page the read
//!   rule evicts enters the read ghost; a page a write-buffer flush evicts
//!   enters the write ghost. A delayed page was replaced by the write buffer
//!   (its flush wrote it back); parked at the read buffer's LRU end it is
//!   the first read page to go, so a read-buffer replacement only finishes
//!   what the write buffer started. With `ghost=origin` it enters the write
//!   ghost; with `ghost=exit` (our earlier model) the read ghost, which made
//!   every re-reference of a write-hot page move `P` towards the read side
//!   until `P` sat at its floor. A delayed page read again is a read page
//!   from then on. Each ghost holds at most the cache size in keys. A miss
//!   on a key in either ghost, read or write, moves `P` (ARC's rule: any
//!   re-reference counts). Without `dynamic` no ghosts are kept.
//! - Trim drops the page from whichever buffer holds it (`Io::Invalidate`).
//!   Drain writes back the write buffer's dirty pages, runs per block.
//! - Only write-back mode: ABM is a write-back buffer cache by design.
//!
//! Tested identities: with `dynamic`, `borrow` and `delay` off, on reads only
//! ABM is its read rule at `(1 - wsize)` of the cache, and on writes only its
//! write rule at `wsize`; with borrowing, on reads only it is its read rule
//! at the whole cache.
//!
//! [`classic`]: crate::policy::classic
//! [`fab`]: super::fab
//! [`clc`]: super::clc

use super::block::{block_pages, BlockBuffer, Blocks, FabOrder, Order, SizeBuckets, BLOCK_PARAM};
use super::clc::ClcOrder;
use crate::list::{Arena, List};
use crate::policy::{
    check_mode, Access, BuildCtx, Effects, Io, Mode, ParamInfo, Policy, PolicyInfo, PolicyStats, Replacement, Rules,
    Spec, SpecError, Split,
};
use crate::trace::Op;

/// Ghost list tags.
const GHOST_READ: u8 = 0;
const GHOST_WRITE: u8 = 1;

/// Sizes and switches, in pages.
#[derive(Clone, Copy, Debug)]
pub struct AbmConfig {
    pub capacity: usize,
    /// Initial (or fixed) write buffer share `P`.
    pub wsize: usize,
    /// Bounds of `P` (equal to `wsize` without dynamic sizing).
    pub pmin: usize,
    pub pmax: usize,
    pub step: usize,
    pub borrow: bool,
    pub delay: bool,
    pub dynamic: bool,
    /// A delayed page that leaves unreferenced enters the write ghost (else the read ghost).
    pub ghost_origin: bool,
}

impl AbmConfig {
    /// The read rule's capacity in an empty cache.
    pub fn rule_capacity(&self) -> usize {
        if self.borrow {
            self.capacity
        } else {
            self.capacity - self.wsize
        }
    }
}

pub struct Abm<R: Replacement, O: Order> {
    cfg: AbmConfig,
    /// Write buffer share now.
    p: usize,
    /// Σ of `p` as each access found it, and the accesses (for [`Policy::split`]).
    p_sum: u64,
    accesses: u64,
    rule: R,
    /// Delayed pages: clean, at the read buffer's LRU end (front = most recent).
    cold: List,
    cold_arena: Arena<()>,
    wb: BlockBuffer<O>,
    ghosts: Arena<u8>,
    ghost_read: List,
    ghost_write: List,
    /// Scratch: pages the rule evicted; pages a delayed flush keeps.
    evicted: Vec<u64>,
    kept: Vec<u64>,
}

impl<R: Replacement, O: Order> Abm<R, O> {
    /// `rule` must have capacity [`AbmConfig::rule_capacity`] and be resizable.
    pub fn new(cfg: AbmConfig, rule: R, block_pages: u32, order: O) -> Self {
        assert!(cfg.capacity >= 2 && 1 <= cfg.pmin && cfg.pmin <= cfg.wsize && cfg.wsize <= cfg.pmax);
        assert!(cfg.pmax < cfg.capacity && rule.capacity() == cfg.rule_capacity());
        let c = cfg.capacity;
        Abm {
            cfg,
            p: cfg.wsize,
            p_sum: 0,
            accesses: 0,
            rule,
            cold: List::new(),
            cold_arena: Arena::with_capacity(block_pages as usize),
            wb: BlockBuffer::new(Blocks::new(block_pages, c), order),
            ghosts: Arena::with_capacity(if cfg.dynamic { 2 * c } else { 0 }),
            ghost_read: List::new(),
            ghost_write: List::new(),
            evicted: Vec::with_capacity(4),
            kept: Vec::with_capacity(block_pages as usize),
        }
    }

    /// Pages in the read buffer.
    #[inline]
    fn r(&self) -> usize {
        self.rule.len() + self.cold.len()
    }

    /// The write buffer's share now.
    pub fn target(&self) -> usize {
        self.p
    }

    /// The room the read rule has now: what the write buffer (or, without
    /// borrowing, its share if larger) and the delayed pages leave.
    fn room(&self) -> usize {
        let w = self.wb.pages();
        let taken = if self.cfg.borrow { w } else { w.max(self.p) };
        self.cfg.capacity.saturating_sub(taken + self.cold.len())
    }

    /// Pages the rule evicted leave the cache, into the read ghost.
    fn leave_read(&mut self, fx: &mut Effects) {
        let mut evicted = std::mem::take(&mut self.evicted);
        for &key in &evicted {
            fx.push(Io::Evict { key, dirty: false });
            self.ghost_add(key, GHOST_READ);
        }
        evicted.clear();
        self.evicted = evicted;
    }

    /// Gives the rule the room it has now (shrinking evicts its victims).
    fn resize(&mut self, fx: &mut Effects) {
        let room = self.room();
        if room != self.rule.capacity() {
            let resized = self.rule.set_capacity(room, &mut self.evicted);
            debug_assert!(resized, "abm's read rule is checked to be resizable when built");
            self.leave_read(fx);
        }
    }

    fn take_cold(&mut self, key: u64) -> bool {
        self.cold.remove_key(&mut self.cold_arena, key)
    }

    fn ghost_add(&mut self, key: u64, which: u8) {
        if !self.cfg.dynamic {
            return;
        }
        debug_assert!(self.ghosts.find(key).is_none(), "a cached page is never a ghost");
        let idx = self.ghosts.insert(key, which);
        let list = if which == GHOST_READ { &mut self.ghost_read } else { &mut self.ghost_write };
        list.push_front(&mut self.ghosts, idx);
        if list.len() > self.cfg.capacity {
            let old = list.pop_back(&mut self.ghosts).expect("non-empty");
            self.ghosts.remove(old);
        }
    }

    /// A miss on `key`: a ghost hit moves `P`.
    fn ghost_hit(&mut self, key: u64) {
        if !self.cfg.dynamic {
            return;
        }
        let Some(idx) = self.ghosts.find(key) else { return };
        let which = *self.ghosts.val(idx);
        if which == GHOST_READ {
            self.ghost_read.unlink(&mut self.ghosts, idx);
            self.p = self.p.saturating_sub(self.cfg.step).max(self.cfg.pmin);
        } else {
            self.ghost_write.unlink(&mut self.ghosts, idx);
            self.p = (self.p + self.cfg.step).min(self.cfg.pmax);
        }
        self.ghosts.remove(idx);
    }

    /// The oldest delayed page leaves (the read buffer's LRU end).
    fn drop_cold(&mut self, fx: &mut Effects) {
        let idx = self.cold.pop_back(&mut self.cold_arena).expect("a delayed page");
        let key = self.cold_arena.remove(idx);
        fx.push(Io::Evict { key, dirty: false });
        self.ghost_add(key, if self.cfg.ghost_origin { GHOST_WRITE } else { GHOST_READ });
    }

    /// The write buffer flushes its victim block.
    fn flush_block(&mut self, fx: &mut Effects) {
        let Some(idx) = self.wb.take_victim() else { return };
        let mut gone = std::mem::take(&mut self.wb.gone);
        gone.clear();
        if self.cfg.delay {
            self.kept.clear();
            self.wb.blocks.evict_keep(idx, fx, &mut self.kept, &mut gone);
            // To the LRU end, lowest address last in, first out.
            for &key in self.kept.iter().rev() {
                let i = self.cold_arena.insert(key, ());
                self.cold.push_back(&mut self.cold_arena, i);
            }
        } else {
            self.wb.blocks.evict(idx, fx, &mut gone);
        }
        for &key in &gone {
            self.ghost_add(key, GHOST_WRITE);
        }
        self.wb.gone = gone;
    }

    /// Makes room for a missed page of the read (`write` false) or write
    /// buffer. A read-buffer replacement for a read with no delayed page is
    /// left to the rule's `insert` (its room is then exactly its pages).
    fn make_room(&mut self, write: bool, fx: &mut Effects) {
        let (c, p) = (self.cfg.capacity, self.p);
        let (r, w) = (self.r(), self.wb.pages());
        let own_full = if write { w >= p } else { r >= c - p };
        if r + w < c && (self.cfg.borrow || !own_full) {
            return;
        }
        let from_write = if w > p {
            true
        } else if r > c - p {
            false
        } else {
            write
        };
        let from_write = if from_write { w > 0 } else { r == 0 };
        if from_write {
            self.flush_block(fx);
        } else if !self.cold.is_empty() {
            self.drop_cold(fx);
        } else if write {
            // The rule gives up its victim.
            let n = self.rule.len() - 1;
            self.rule.set_capacity(n, &mut self.evicted);
            self.leave_read(fx);
        }
    }

    /// Puts a page the rule just missed into it; false if it is not cached.
    fn admit_read(&mut self, a: &Access, fx: &mut Effects) -> bool {
        self.resize(fx);
        // Without borrowing, a delayed flush can fill the read buffer's share
        // with delayed pages: the oldest give way, as in any read-buffer replacement.
        while self.rule.capacity() == 0 && !self.cold.is_empty() {
            self.drop_cold(fx);
            self.resize(fx);
        }
        if self.rule.capacity() == 0 {
            // Unreachable: P stays below the cache size, so the read share is at least a page.
            debug_assert!(false, "no room for a read page");
            return false;
        }
        let cached = self.rule.insert(a, false, &mut self.evicted);
        self.leave_read(fx);
        cached
    }

    fn read(&mut self, a: &Access, fx: &mut Effects) {
        let key = a.key;
        if self.wb.contains(key) {
            fx.hit = true;
            self.wb.hit(key, false, a.seq);
            return;
        }
        fx.hit = self.rule.touch(a, false, &mut self.evicted);
        self.leave_read(fx);
        if fx.hit {
            return;
        }
        if self.take_cold(key) {
            // A delayed page read again: a read page now.
            fx.hit = true;
            if !self.admit_read(a, fx) {
                fx.push(Io::Evict { key, dirty: false });
            }
            return;
        }
        fx.push(Io::Fetch { key, pages: 1 });
        self.ghost_hit(key);
        self.make_room(false, fx);
        if self.admit_read(a, fx) {
            fx.push(Io::CacheWrite { key });
        }
        self.resize(fx);
    }

    fn write(&mut self, a: &Access, fx: &mut Effects) {
        let key = a.key;
        if self.wb.contains(key) {
            fx.hit = true;
            self.wb.hit(key, true, a.seq);
        } else if self.rule.contains(key) || self.cold_arena.find(key).is_some() {
            // Fig. 4 A: the page becomes dirty and moves to the write buffer.
            fx.hit = true;
            if !self.take_cold(key) {
                self.rule.remove(key, &mut self.evicted);
                self.leave_read(fx);
            }
            self.wb.add(key, true, a.seq);
        } else {
            if a.partial {
                fx.push(Io::ReadForWrite { key });
            }
            self.ghost_hit(key);
            self.make_room(true, fx);
            self.wb.add(key, true, a.seq);
        }
        self.resize(fx);
        fx.push(Io::CacheWrite { key });
    }

    fn trim(&mut self, a: &Access, fx: &mut Effects) {
        let key = a.key;
        if !self.wb.trim(key, fx) && (self.take_cold(key) || self.rule.remove(key, &mut self.evicted)) {
            self.leave_read(fx);
            fx.hit = true;
            fx.push(Io::Invalidate { key, dirty: false });
        }
        self.resize(fx);
    }
}

impl<R: Replacement, O: Order + Send> Policy for Abm<R, O> {
    fn access(&mut self, a: &Access, fx: &mut Effects) {
        self.p_sum += self.p as u64;
        self.accesses += 1;
        match a.op {
            Op::Read => self.read(a, fx),
            Op::Write => self.write(a, fx),
            Op::Trim => self.trim(a, fx),
        }
    }

    fn drain(&mut self, fx: &mut Effects) {
        self.wb.drain(fx);
    }

    fn stats(&self) -> PolicyStats {
        PolicyStats {
            capacity: self.cfg.capacity as u64,
            resident: (self.r() + self.wb.pages()) as u64,
            dirty: self.wb.blocks.dirty() as u64,
            ghosts: (self.ghost_read.len() + self.ghost_write.len() + self.rule.ghosts()) as u64,
        }
    }

    fn split(&self) -> Option<Split> {
        Some(Split { capacity: self.cfg.capacity as u64, now: self.p as u64, sum: self.p_sum, accesses: self.accesses })
    }
}

fn boxed<R: Replacement + 'static, O: Order + Send + 'static>(
    cfg: AbmConfig,
    rule: R,
    block: u32,
    order: O,
) -> Box<dyn Policy> {
    Box::new(Abm::new(cfg, rule, block, order))
}

/// The read buffer's rules (the paper's three).
const READ_RULES: &[&str] = &["lru", "arc", "lirs"];

fn build(spec: &Spec, ctx: &BuildCtx, rules: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    check_mode(spec, ctx, &[Mode::WriteBack], "abm is a write-back buffer cache")?;
    spec.nested("read", "policy", READ_RULES)?;
    let write = spec.choice("write", &["fab", "clc"])?;
    let block = block_pages(spec)?;
    let c = ctx.capacity;
    if c < 2 {
        return Err(spec.invalid("wsize", "abm splits the cache in two: it needs at least 2 pages"));
    }
    let pages = |share: f64| ((share * c as f64).round() as usize).clamp(1, c - 1);
    let wsize = spec.ratio("wsize")?;
    let min = spec.ratio("min")?;
    if min > 0.5 {
        return Err(spec.invalid("min", "each buffer's minimum share must be at most 50%"));
    }
    let step = spec.uint("step")?;
    if step == 0 {
        return Err(spec.invalid("step", "must be at least 1 page"));
    }
    let dynamic = spec.flag("dynamic")?;
    let mut cfg = AbmConfig {
        capacity: c,
        wsize: pages(wsize),
        pmin: 0,
        pmax: 0,
        step: step.min(c as u64) as usize,
        borrow: spec.flag("borrow")?,
        delay: spec.flag("delay")?,
        dynamic,
        ghost_origin: spec.choice("ghost", &["origin", "exit"])? == "origin",
    };
    if dynamic {
        let floor = pages(min).min(c / 2);
        (cfg.pmin, cfg.pmax) = (floor, c - floor);
        cfg.wsize = cfg.wsize.clamp(cfg.pmin, cfg.pmax);
    } else {
        (cfg.pmin, cfg.pmax) = (cfg.wsize, cfg.wsize);
    }
    let rc = cfg.rule_capacity();
    let si = (spec.ratio("lru")? * cfg.wsize as f64).round() as usize;
    let fab = || FabOrder(SizeBuckets::new(block));
    let clc = || ClcOrder::new(block, si);
    // the read rule, built by the registry from its nested spec (`read=lirs(hir=5%)`)
    let mut rule = rules.nested(spec, "read", Some(READ_RULES), rc, ctx)?;
    if !rule.set_capacity(rc, &mut Vec::new()) {
        return Err(spec
            .invalid("read", "the read rule must be able to change its capacity (lirs's libcachesim variant cannot)"));
    }
    Ok(match write.as_str() {
        "fab" => boxed(cfg, rule, block, fab()),
        _ => boxed(cfg, rule, block, clc()),
    })
}

pub const INFO: PolicyInfo = PolicyInfo {
    name: "abm",
    about: "ABM: page-unit read buffer + block-unit write buffer, borrowing, delayed flush, ghost-driven split \
            (paper 004)",
    params: &[
        ParamInfo {
            name: "read",
            default: "lru",
            about: "read buffer rule, a spec: lru, arc or lirs, e.g. lirs(hir=5%) (paper's best: lru)",
        },
        ParamInfo { name: "write", default: "clc", about: "write buffer rule: fab or clc (paper's best: clc)" },
        BLOCK_PARAM,
        ParamInfo {
            name: "wsize",
            default: "50%",
            about: "write buffer share: fixed, or the start of P with dynamic sizing (paper: set at init, no value)",
        },
        ParamInfo {
            name: "borrow",
            default: "true",
            about: "a miss may use the other buffer's free pages (paper: on)",
        },
        ParamInfo {
            name: "delay",
            default: "true",
            about: "write-replacement delay: a flushed block frees one page, the rest stay as clean read pages \
                    (paper: on)",
        },
        ParamInfo {
            name: "dynamic",
            default: "true",
            about: "ghost buffers move the split P on ghost hits (paper: on)",
        },
        ParamInfo {
            name: "ghost",
            default: "origin",
            about: "a delayed page that leaves unreferenced is remembered as a write page (origin) or a read page \
                    (exit, the buffer it leaves from)",
        },
        ParamInfo { name: "step", default: "1", about: "pages P moves per ghost hit (paper: \"step by step\")" },
        ParamInfo {
            name: "min",
            default: "10%",
            about: "with dynamic sizing, neither buffer's share goes below this (ours; the paper gives no bound)",
        },
        ParamInfo {
            name: "lru",
            default: "10%",
            about: "write=clc: share of the write buffer for CLC's size-independent LRU region",
        },
    ],
    build,
    rule: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::classic::lru::Lru;
    use crate::policy::flash::testing::{same_effects, stream};
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::run;
    use crate::policy::testing::{read, write};

    fn ctx(capacity: usize) -> BuildCtx {
        BuildCtx { capacity, mode: Mode::WriteBack, page_bytes: 4096 }
    }

    fn abm_lru_fab(capacity: usize, wsize: usize, borrow: bool, delay: bool) -> Abm<Lru, FabOrder> {
        let cfg = AbmConfig {
            capacity,
            wsize,
            pmin: wsize,
            pmax: wsize,
            step: 1,
            borrow,
            delay,
            dynamic: false,
            ghost_origin: true,
        };
        Abm::new(cfg, Lru::new(cfg.rule_capacity()), 4, FabOrder(SizeBuckets::new(4)))
    }

    #[test]
    fn paper_fig4_write_moves_and_delayed_flush() {
        // 8 pages: 4 for reads, 4 for writes; 4-page blocks.
        let mut p = abm_lru_fab(8, 4, true, true);
        // Reads of 20, 21, 22, 23: the read buffer is full.
        for (i, k) in [20u64, 21, 22, 23].into_iter().enumerate() {
            assert_eq!(
                run(&mut p, read(k, i as u64)),
                (false, vec![Io::Fetch { key: k, pages: 1 }, Io::CacheWrite { key: k }])
            );
        }
        // A: a write of 21 (read buffer) is a hit, and moves it to the write buffer.
        assert_eq!(run(&mut p, write(21, 4)), (true, vec![Io::CacheWrite { key: 21 }]));
        assert_eq!((p.r(), p.wb.pages()), (3, 1));
        // A read of a page in the write buffer is a hit.
        assert_eq!(run(&mut p, read(21, 5)), (true, vec![]));
        // Block 0 (pages 0-2) and 21: write buffer full.
        for (i, k) in [0u64, 1, 2].into_iter().enumerate() {
            run(&mut p, write(k, 6 + i as u64));
        }
        // 21 left a read page free: a read miss takes it.
        run(&mut p, read(30, 9));
        assert_eq!((p.r(), p.wb.pages()), (4, 4));
        // B, C: a write miss flushes block 0 (3 pages, the largest): all three
        // written back as one run, page 0 freed, 1 and 2 kept as clean read
        // pages at the read buffer's LRU end.
        let (hit, io) = run(&mut p, write(8, 10));
        assert!(!hit);
        assert_eq!(
            io,
            vec![Io::Evict { key: 0, dirty: true }, Io::WriteBack { key: 0, pages: 3 }, Io::CacheWrite { key: 8 }]
        );
        assert_eq!((p.r(), p.wb.pages(), p.stats().dirty), (6, 2, 2));
        // They still hit.
        assert_eq!(run(&mut p, read(2, 11)), (true, vec![]));
        // The read buffer is over its share: a write miss takes its coldest
        // page, the delayed page 1 (2 was just read and went into the rule,
        // which has room for it); then the rule's LRU page, 20.
        assert_eq!(
            run(&mut p, write(12, 12)),
            (false, vec![Io::Evict { key: 1, dirty: false }, Io::CacheWrite { key: 12 }])
        );
        let (_, io) = run(&mut p, write(16, 13));
        assert_eq!(io, vec![Io::Evict { key: 20, dirty: false }, Io::CacheWrite { key: 16 }]);
        // Drain: the write buffer's dirty pages, per block in address order.
        let mut fx = Effects::new();
        p.drain(&mut fx);
        assert_eq!(
            fx.io,
            vec![
                Io::WriteBack { key: 8, pages: 1 },
                Io::WriteBack { key: 12, pages: 1 },
                Io::WriteBack { key: 16, pages: 1 },
                Io::WriteBack { key: 21, pages: 1 },
            ]
        );
    }

    #[test]
    fn without_delay_the_whole_block_leaves() {
        let mut p = abm_lru_fab(8, 4, true, false);
        for (i, k) in [0u64, 1, 2, 5].into_iter().enumerate() {
            run(&mut p, write(k, i as u64));
        }
        for (i, k) in [20u64, 21, 22, 23].into_iter().enumerate() {
            run(&mut p, read(k, 4 + i as u64));
        }
        let (_, io) = run(&mut p, write(8, 8));
        assert_eq!(
            io,
            vec![
                Io::Evict { key: 0, dirty: true },
                Io::Evict { key: 1, dirty: true },
                Io::Evict { key: 2, dirty: true },
                Io::WriteBack { key: 0, pages: 3 },
                Io::CacheWrite { key: 8 },
            ]
        );
        assert_eq!((p.r(), p.wb.pages()), (4, 2));
    }

    #[test]
    fn borrowing_off_keeps_each_buffer_in_its_share() {
        let mut p = abm_lru_fab(4, 2, false, false);
        run(&mut p, read(10, 0));
        run(&mut p, read(11, 1));
        // The read buffer is at its share; with room in the write buffer, a
        // read miss still replaces in the read buffer.
        assert_eq!(
            run(&mut p, read(12, 2)),
            (
                false,
                vec![Io::Fetch { key: 12, pages: 1 }, Io::Evict { key: 10, dirty: false }, Io::CacheWrite { key: 12 }]
            )
        );
        // With borrowing it takes the free page.
        let mut q = abm_lru_fab(4, 2, true, false);
        for (i, k) in [10u64, 11, 12].into_iter().enumerate() {
            run(&mut q, read(k, i as u64));
        }
        assert_eq!((q.r(), q.stats().resident), (3, 3));
        // ... and gives it back to the next write miss once the cache is full.
        run(&mut q, write(0, 3));
        assert_eq!(
            run(&mut q, write(4, 4)),
            (false, vec![Io::Evict { key: 10, dirty: false }, Io::CacheWrite { key: 4 }])
        );
    }

    /// An 8-page ABM-LRU-FAB with dynamic sizing from a 4-page write buffer
    /// (P in 1..=7, steps of one page), borrowing on.
    fn abm8(delay: bool, ghost_origin: bool) -> Abm<Lru, FabOrder> {
        let cfg = AbmConfig {
            capacity: 8,
            wsize: 4,
            pmin: 1,
            pmax: 7,
            step: 1,
            borrow: true,
            delay,
            dynamic: true,
            ghost_origin,
        };
        Abm::new(cfg, Lru::new(8), 4, FabOrder(SizeBuckets::new(4)))
    }

    #[test]
    fn ghost_hits_move_the_split() {
        let mut p = abm8(false, true);
        for i in 0..8u64 {
            run(&mut p, read(100 + i, i));
        }
        // Full of reads (borrowed); the write buffer is empty and below its share.
        run(&mut p, write(0, 8)); // evicts read page 100 into the read ghost
        assert_eq!(p.target(), 4);
        run(&mut p, read(100, 9)); // read ghost hit: the read buffer should grow
        assert_eq!(p.target(), 3);
        // Writes of blocks 1, 2, 3: the write buffer grows to its share and flushes.
        for (i, k) in [4u64, 8, 12].into_iter().enumerate() {
            run(&mut p, write(k, 10 + i as u64));
        }
        let before = p.target();
        let flushed: Vec<u64> = p.ghost_write.keys(&p.ghosts);
        assert!(!flushed.is_empty());
        run(&mut p, write(flushed[0], 20)); // write ghost hit: the write buffer should grow
        assert_eq!(p.target(), before + 1);
        // Clamped at the bounds.
        for i in 0..20 {
            p.p = 7;
            p.ghost_add(1000 + i, GHOST_WRITE);
            p.ghost_hit(1000 + i);
            assert_eq!(p.target(), 7);
        }
        p.p = 1;
        p.ghost_add(2000, GHOST_READ);
        p.ghost_hit(2000);
        assert_eq!(p.target(), 1);
    }

    #[test]
    fn on_reads_alone_abm_is_its_read_rule() {
        for (c, keys, seed) in [(8, 20, 1), (40, 100, 2), (200, 600, 3)] {
            let reads: Vec<Access> =
                stream(20_000, keys, seed, false).into_iter().filter(|a| a.op == Op::Read).collect();
            for rule in ["lru", "arc", "lirs"] {
                for wsize in [25, 50] {
                    let spec = format!("abm(read={rule},wsize={wsize}%,dynamic=off,borrow=off,delay=off)");
                    let (mut abm, _) = build_spec(&spec, &ctx(c)).unwrap();
                    let share = c - ((wsize as f64 / 100.0 * c as f64).round() as usize);
                    let (mut plain, _) = build_spec(rule, &ctx(share)).unwrap();
                    same_effects(abm.as_mut(), plain.as_mut(), &reads, &spec);
                }
            }
            // With borrowing (and dynamic sizing), the read rule spans the whole cache.
            for rule in ["lru", "arc", "lirs", "lirs(hir=20%)", "arc(variant=libcachesim)"] {
                for flags in [",dynamic=off", "", ",write=fab,step=3"] {
                    let spec = format!("abm(read={rule}{flags})");
                    let (mut abm, _) = build_spec(&spec, &ctx(c)).unwrap();
                    let (mut plain, _) = build_spec(rule, &ctx(c)).unwrap();
                    same_effects(abm.as_mut(), plain.as_mut(), &reads, &spec);
                }
            }
        }
    }

    #[test]
    fn on_writes_alone_abm_is_its_write_rule() {
        for (c, block, keys, seed) in [(8, 4, 30, 1), (40, 8, 200, 2), (100, 2, 300, 3)] {
            let writes: Vec<Access> =
                stream(20_000, keys, seed, true).into_iter().filter(|a| a.op != Op::Read).collect();
            let w = c / 2;
            for (write, plain) in
                [("fab", format!("fab(block={block})")), ("clc", format!("clc(block={block},lru=20%)"))]
            {
                let spec = format!("abm(write={write},block={block},lru=20%,dynamic=off,borrow=off,delay=off)");
                let (mut abm, _) = build_spec(&spec, &ctx(c)).unwrap();
                let (mut other, _) = build_spec(&plain, &ctx(w)).unwrap();
                same_effects(abm.as_mut(), other.as_mut(), &writes, &spec);
            }
        }
    }

    #[test]
    fn every_combination_holds_its_invariants() {
        for read in ["lru", "arc", "lirs"] {
            for write in ["fab", "clc"] {
                for flags in ["", ",borrow=off", ",delay=off", ",dynamic=off", ",borrow=off,delay=off,dynamic=off"] {
                    for (c, seed) in [(2, 1), (9, 2), (64, 3)] {
                        let spec = format!("abm(read={read},write={write},block=4{flags})");
                        let (mut p, _) = build_spec(&spec, &ctx(c)).unwrap();
                        let mut fx = Effects::new();
                        let mut hits = 0;
                        for a in stream(5_000, 3 * c as u64, seed, true) {
                            fx.clear();
                            p.access(&a, &mut fx);
                            hits += fx.hit as u32;
                            if a.op == Op::Read && !fx.hit {
                                assert!(
                                    fx.io.contains(&Io::CacheWrite { key: a.key }),
                                    "{spec} c={c}: {a:?} not cached"
                                );
                            }
                            let st = p.stats();
                            assert!(st.resident <= st.capacity && st.dirty <= st.resident, "{spec} c={c}: {st:?}");
                        }
                        assert!(hits > 0, "{spec}");
                    }
                }
            }
        }
    }

    /// Hits, and the pages each access evicted, over a stream.
    fn trail(spec: &str, c: usize, accesses: &[Access]) -> Vec<(bool, Vec<u64>)> {
        let (mut p, _) = build_spec(spec, &ctx(c)).unwrap();
        let mut fx = Effects::new();
        accesses
            .iter()
            .map(|a| {
                fx.clear();
                p.access(a, &mut fx);
                let ev = fx.io.iter().filter_map(|io| if let Io::Evict { key, .. } = io { Some(*key) } else { None });
                (fx.hit, ev.collect())
            })
            .collect()
    }

    #[test]
    fn the_read_rule_matters_wherever_it_differs_from_lru() {
        // A hot set read twice a round, then a scan: ARC and LIRS keep the
        // hot set through the scan, LRU does not.
        let mut accesses = Vec::new();
        for round in 0..60u64 {
            for k in 0..20 {
                accesses.push(read(k, 0));
                accesses.push(read(k, 0));
            }
            for k in 0..60 {
                accesses.push(read(10_000 + round * 60 + k, 0));
            }
            // writes to blocks of their own
            for k in 0..8 {
                accesses.push(write(1_000 + (round % 4) * 64 + k, 0));
            }
        }
        for (i, a) in accesses.iter_mut().enumerate() {
            a.seq = i as u64;
        }
        let reads: Vec<Access> = accesses.iter().filter(|a| a.op == Op::Read).copied().collect();
        let hits = |t: &[(bool, Vec<u64>)]| t.iter().filter(|x| x.0).count();
        let c = 64;
        let lru_plain = hits(&trail("lru", c, &reads));
        for rule in ["arc", "lirs"] {
            let plain = hits(&trail(rule, c, &reads));
            assert!(plain > lru_plain + 100, "{rule} {plain} vs lru {lru_plain}: the trace must tell them apart");
            for flags in ["", ",delay=off", ",dynamic=off", ",borrow=off"] {
                let with_rule = trail(&format!("abm(read={rule},block=8{flags})"), c, &accesses);
                let with_lru = trail(&format!("abm(read=lru,block=8{flags})"), c, &accesses);
                assert_ne!(with_rule, with_lru, "{rule}{flags}");
                assert!(
                    hits(&with_rule) > hits(&with_lru),
                    "{rule}{flags}: {} vs {}",
                    hits(&with_rule),
                    hits(&with_lru)
                );
            }
        }
    }

    #[test]
    fn a_delayed_page_is_remembered_by_the_write_buffer_that_replaced_it() {
        for (ghost, want) in [("origin", GHOST_WRITE), ("exit", GHOST_READ)] {
            let mut p = abm8(true, ghost == "origin");
            // Block 0 (0-3) written, then reads fill the cache.
            for k in 0..4u64 {
                run(&mut p, write(k, k));
            }
            for k in 0..4u64 {
                run(&mut p, read(100 + k, 4 + k));
            }
            // A write of a new block flushes block 0: 0 freed, 1-3 delayed.
            run(&mut p, write(8, 8));
            assert_eq!((p.cold.len(), p.ghost_write.keys(&p.ghosts)), (3, vec![0]));
            // Writes go on: the delayed pages leave first, then read pages.
            for (i, k) in [9u64, 10, 11].into_iter().enumerate() {
                let (_, io) = run(&mut p, write(k, 9 + i as u64));
                assert_eq!(io[0], Io::Evict { key: 1 + i as u64, dirty: false });
            }
            let tag = |k: u64| *p.ghosts.val(p.ghosts.find(k).unwrap());
            assert!([1, 2, 3].iter().all(|&k| tag(k) == want), "{ghost}");
            // Re-writing one of them moves P towards the write buffer with
            // `origin`, towards the read buffer with `exit`.
            run(&mut p, write(2, 20));
            assert_eq!(p.target(), if want == GHOST_WRITE { 5 } else { 3 }, "{ghost}");
            let sp = p.split().unwrap();
            assert_eq!((sp.capacity, sp.now, sp.accesses, sp.sum), (8, p.target() as u64, 13, 13 * 4));
        }
        // A delayed page read again is a read page from then on: if it
        // leaves, it is the read ghost's.
        let mut p = abm8(true, true);
        for k in 0..4u64 {
            run(&mut p, write(k, k));
        }
        for k in 0..4u64 {
            run(&mut p, read(100 + k, 4 + k));
        }
        run(&mut p, write(8, 8));
        assert_eq!(run(&mut p, read(3, 9)), (true, vec![]));
        assert!(p.rule.contains(3) && p.cold_arena.find(3).is_none());
        let mut k = 200;
        while p.ghosts.find(3).is_none() {
            assert!(k < 300, "3 never left");
            run(&mut p, read(k, k));
            k += 1;
        }
        assert_eq!(*p.ghosts.val(p.ghosts.find(3).unwrap()), GHOST_READ);
    }

    #[test]
    fn parameters_are_checked() {
        let e = build_spec("abm(read=mru)", &ctx(8)).err().unwrap().to_string();
        assert!(e.contains("lru, arc, lirs"), "{e}");
        assert!(build_spec("abm", &ctx(1)).is_err());
        assert!(build_spec("abm(step=0)", &ctx(8)).is_err());
        assert!(build_spec("abm(min=60%)", &ctx(8)).is_err());
        let wt = BuildCtx { capacity: 8, mode: Mode::WriteThrough, page_bytes: 4096 };
        assert!(build_spec("abm", &wt).is_err());
        assert!(build_spec("abm(read=lirs,write=fab,wsize=90%,min=0)", &ctx(8)).is_ok());
        assert!(build_spec("abm(ghost=exit)", &ctx(8)).is_ok());
        assert!(build_spec("abm(ghost=read)", &ctx(8)).is_err());
        let e = build_spec("abm(read=lirs(variant=libcachesim))", &ctx(300)).err().unwrap().to_string();
        assert!(e.contains("capacity"), "{e}");
    }
}
