//! ABM: asymmetric buffer management (Jung, Kang & Cha, paper 004 in
//! `papers/`): separate read and write buffers in one cache, each with the
//! replacement unit and rule that suits it.
//!
//! - The **read buffer** holds clean pages, page by page, under a classic
//!   hit-ratio rule (`read=lru|arc|lirs`, the [`classic`] rules themselves;
//!   §3.1 (2)).
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
//!   buffers remember pages that left each buffer; a pointer `P` (the write
//!   buffer's share) moves one `step` towards the write buffer on a hit in the
//!   read ghost (the read buffer grows) and towards the read buffer on a hit
//!   in the write ghost.
//!
//! ## Parameters (defaults)
//!
//! - `read` (`lru`), `write` (`clc`): paper 004 evaluates all six pairs; its
//!   best is ABM-LRU-CLC.
//! - `block` (64): see [`BLOCK_PARAM`].
//! - `wsize` (50%): the write buffer's share, fixed without `dynamic` and
//!   `P`'s starting point with it. The paper fixes the sizes at initialisation
//!   but gives no value.
//! - `borrow`, `delay`, `dynamic` (all on, as in the paper): switch each
//!   feature off to measure it.
//! - `step` (1 page): how far `P` moves per ghost hit. The paper says only
//!   that it moves "step by step".
//! - `min` (10%): under dynamic sizing neither share goes below this (and
//!   neither below one page). Ours: the paper gives no bound.
//! - `lru` (10%): with `write=clc`, the size-independent LRU region's share
//!   of the write buffer's initial size (see [`clc`]).
//!
//! ## How the pieces are built, and choices where the paper is silent
//!
//! - The read rule is a [`Replacement`] of fixed capacity `rc`: the read
//!   buffer's smallest size (`(1 - wsize)` of the cache without dynamic sizing,
//!   `min` with it). Pages the rule evicts are not dropped but go to the MRU
//!   end of an LRU list below it (the read buffer's cold end): they leave the
//!   cache from its LRU end when the read buffer must give up a page. This is
//!   the "LRU position of the read buffer" the paper puts delayed pages in,
//!   and what lets the read buffer grow beyond `rc` by borrowing or by moving
//!   `P`. With `read=lru` the whole read buffer is exactly one LRU list of
//!   whatever size it has; with ARC or LIRS the adaptive rule governs the
//!   hottest `rc` pages and the rest is LRU. A read hit in the cold list is a
//!   hit; the page goes back to the rule as after a miss (ARC then sees a hit
//!   in its ghost list and adapts).
//! - Delayed pages enter the cold list at its LRU end, so they are the first
//!   read pages to leave, the lowest address first; the freed page is the
//!   victim block's lowest-addressed page.
//! - Which buffer gives up a page when a miss needs one: the buffer above its
//!   share (`w > P`: the write buffer; `r > C - P`: the read buffer); if
//!   neither, the missed page's own buffer; if that one is empty, the other.
//!   Without `borrow`, a miss takes a free page only while its own buffer is
//!   below its share. A read-buffer replacement drops the cold list's LRU
//!   page (so the borrowed pages, the coldest read pages, go first); a
//!   write-buffer replacement flushes the victim block.
//! - The write buffer is FAB's or CLC's block order over the written pages:
//!   FAB's counts reads as references, CLC's does not, as in [`fab`] and
//!   [`clc`]. A page moved in from the read buffer is a write to it.
//! - Ghosts: a page that leaves the cache from the read buffer (cold list)
//!   enters the read ghost; a page that leaves from the write buffer enters
//!   the write ghost (delayed pages leave later, from the read buffer). Each
//!   ghost holds at most the cache size in keys. A miss on a key in either
//!   ghost, read or write, moves `P` (ARC's rule: any re-reference counts).
//!   Without `dynamic` no ghosts are kept.
//! - Trim drops the page from whichever buffer holds it (`Io::Invalidate`).
//!   Drain writes back the write buffer's dirty pages, runs per block.
//! - Only write-back mode: ABM is a write-back buffer cache by design.
//!
//! Tested identities: with `dynamic`, `borrow` and `delay` off, on reads only
//! ABM is its read rule at `(1 - wsize)` of the cache, and on writes only its
//! write rule at `wsize`; with `read=lru` and borrowing, on reads only it is
//! LRU at the whole cache.
//!
//! [`classic`]: crate::policy::classic
//! [`fab`]: super::fab
//! [`clc`]: super::clc

use super::block::{block_pages, BlockBuffer, Blocks, FabOrder, Order, SizeBuckets, BLOCK_PARAM};
use super::clc::ClcOrder;
use crate::list::{Arena, List};
use crate::policy::{
    check_mode, Access, BuildCtx, Effects, Io, Mode, ParamInfo, Policy, PolicyInfo, PolicyStats, Replacement, Rules,
    Spec, SpecError,
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
}

impl AbmConfig {
    /// The read rule's capacity: the read buffer's smallest size.
    pub fn rule_capacity(&self) -> usize {
        self.capacity - self.pmax
    }
}

pub struct Abm<R: Replacement, O: Order> {
    cfg: AbmConfig,
    /// Write buffer share now.
    p: usize,
    rule: R,
    /// The read buffer's cold end: clean pages below the rule (front = most recent).
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
    /// `rule` must have capacity [`AbmConfig::rule_capacity`].
    pub fn new(cfg: AbmConfig, rule: R, block_pages: u32, order: O) -> Self {
        assert!(cfg.capacity >= 2 && 1 <= cfg.pmin && cfg.pmin <= cfg.wsize && cfg.wsize <= cfg.pmax);
        assert!(cfg.pmax < cfg.capacity && rule.capacity() == cfg.rule_capacity());
        let c = cfg.capacity;
        Abm {
            cfg,
            p: cfg.wsize,
            rule,
            cold: List::new(),
            cold_arena: Arena::with_capacity(c - cfg.rule_capacity()),
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

    /// Pages the rule just evicted go to the cold list's MRU end (still cached).
    fn demote(&mut self) {
        for &key in &self.evicted {
            let idx = self.cold_arena.insert(key, ());
            self.cold.push_front(&mut self.cold_arena, idx);
        }
        self.evicted.clear();
    }

    /// Puts a read page into the rule (after `touch` returned false); a page
    /// the rule declines stays in the cold list.
    fn admit_read(&mut self, a: &Access) {
        if !self.rule.insert(a, false, &mut self.evicted) {
            self.evicted.push(a.key);
        }
        self.demote();
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

    /// The read buffer gives up its coldest page.
    fn drop_cold(&mut self, fx: &mut Effects) {
        let Some(idx) = self.cold.pop_back(&mut self.cold_arena) else {
            // Unreachable: the read buffer is only asked for a page when it
            // holds more than the rule's capacity, or the rule is full.
            debug_assert!(false, "read buffer replacement with an empty cold list");
            self.flush_block(fx);
            return;
        };
        let key = self.cold_arena.remove(idx);
        fx.push(Io::Evict { key, dirty: false });
        self.ghost_add(key, GHOST_READ);
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

    /// Makes room for a missed page of the read (`write` false) or write buffer.
    /// Returns true if a read page must leave after the page is admitted (a
    /// read-buffer replacement for a read: the rule's own victim may be it).
    fn make_room(&mut self, write: bool, fx: &mut Effects) -> bool {
        let (c, p) = (self.cfg.capacity, self.p);
        let (r, w) = (self.r(), self.wb.pages());
        let own_full = if write { w >= p } else { r >= c - p };
        if r + w < c && (self.cfg.borrow || !own_full) {
            return false;
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
            false
        } else if write {
            self.drop_cold(fx);
            false
        } else {
            true
        }
    }

    fn read(&mut self, a: &Access, fx: &mut Effects) {
        let key = a.key;
        if self.wb.contains(key) {
            fx.hit = true;
            self.wb.hit(key, false, a.seq);
            return;
        }
        fx.hit = self.rule.touch(a, false, &mut self.evicted);
        self.demote();
        if fx.hit {
            return;
        }
        if self.take_cold(key) {
            fx.hit = true;
            self.admit_read(a);
            return;
        }
        fx.push(Io::Fetch { key, pages: 1 });
        self.ghost_hit(key);
        let drop_after = self.make_room(false, fx);
        self.admit_read(a);
        if drop_after {
            self.drop_cold(fx);
        }
        fx.push(Io::CacheWrite { key });
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
                self.demote();
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
        fx.push(Io::CacheWrite { key });
    }

    fn trim(&mut self, a: &Access, fx: &mut Effects) {
        let key = a.key;
        if self.wb.trim(key, fx) {
            return;
        }
        if self.take_cold(key) || self.rule.remove(key, &mut self.evicted) {
            self.demote();
            fx.hit = true;
            fx.push(Io::Invalidate { key, dirty: false });
        }
    }
}

impl<R: Replacement, O: Order + Send> Policy for Abm<R, O> {
    fn access(&mut self, a: &Access, fx: &mut Effects) {
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
    let rule = rules.nested(spec, "read", Some(READ_RULES), rc, ctx)?;
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
        ParamInfo { name: "step", default: "1", about: "pages P moves per ghost hit (paper: \"step by step\")" },
        ParamInfo {
            name: "min",
            default: "10%",
            about: "with dynamic sizing, neither buffer's share goes below this (ours; the read rule is this size)",
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
    use crate::policy::flash::testing::{run, same_effects, stream};
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::{read, write};

    fn ctx(capacity: usize) -> BuildCtx {
        BuildCtx { capacity, mode: Mode::WriteBack, page_bytes: 4096 }
    }

    fn abm_lru_fab(capacity: usize, wsize: usize, borrow: bool, delay: bool) -> Abm<Lru, FabOrder> {
        let cfg = AbmConfig { capacity, wsize, pmin: wsize, pmax: wsize, step: 1, borrow, delay, dynamic: false };
        Abm::new(cfg, Lru::new(capacity - wsize), 4, FabOrder(SizeBuckets::new(4)))
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
        // pushing its LRU page 20 to the cold list's front).
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

    #[test]
    fn ghost_hits_move_the_split() {
        let cfg =
            AbmConfig { capacity: 8, wsize: 4, pmin: 1, pmax: 7, step: 1, borrow: true, delay: false, dynamic: true };
        let mut p: Abm<Lru, FabOrder> = Abm::new(cfg, Lru::new(1), 4, FabOrder(SizeBuckets::new(4)));
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
            // With borrowing (and dynamic sizing), ABM-LRU reads use the whole cache.
            for spec in ["abm(read=lru,dynamic=off)", "abm(read=lru)", "abm(read=lru,write=fab,step=3)"] {
                let (mut abm, _) = build_spec(spec, &ctx(c)).unwrap();
                let (mut lru, _) = build_spec("lru", &ctx(c)).unwrap();
                same_effects(abm.as_mut(), lru.as_mut(), &reads, spec);
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
                            let st = p.stats();
                            assert!(st.resident <= st.capacity && st.dirty <= st.resident, "{spec} c={c}: {st:?}");
                        }
                        assert!(hits > 0, "{spec}");
                    }
                }
            }
        }
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
    }
}
