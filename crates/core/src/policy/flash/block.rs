//! Shared machinery of the block-unit buffers (FAB, BPLRU, CLC, ABM's write
//! buffer): pages grouped by flash block, whole-block flushes, and the orders
//! in which the policies pick a victim block.
//!
//! The block of a page key is `key / block_pages` (`block_pages` a power of
//! two, so a block never straddles devices: 2^44 pages per device is a multiple
//! of it). Each resident block is one arena node holding its page count, dirty
//! count and the time it was last referenced; which of its pages are resident
//! and which dirty are two bitmaps in one flat vector indexed by the node, so a
//! page costs two bits and no hash entry, and nothing is allocated per access
//! once the arena has grown.
//!
//! A flush writes a block's dirty pages back as one [`Io::WriteBack`] per
//! contiguous run, in address order, so an FTL sees them as sequential writes;
//! every page that leaves gets its [`Io::Evict`] first (dirty ones covered by a
//! later run in the same access). BPLRU's padded flush reads the block's
//! missing pages ([`Io::PadRead`], one per run) and writes the whole block as
//! one run.

use crate::list::{reserve_for, upfront, Arena, List};
use crate::policy::{check_mode, Access, BuildCtx, Effects, Io, Mode, ParamInfo, PolicyStats, Spec, SpecError};

/// The `block` parameter every block-unit policy takes.
pub const BLOCK_PARAM: ParamInfo = ParamInfo {
    name: "block",
    default: "64",
    about: "pages per flash block, a power of two (paper 004 gives none; 64 = large-block NAND, \
            2 KiB x 64, as FAB/BPLRU/CLC assume)",
};

/// Largest block accepted (bitmaps and size buckets grow with it).
const MAX_BLOCK: u64 = 1 << 16;

/// Reads and checks `block`.
pub fn block_pages(spec: &Spec) -> Result<u32, SpecError> {
    let b = spec.uint("block")?;
    if b == 0 || !b.is_power_of_two() || b > MAX_BLOCK {
        return Err(spec.invalid("block", format!("must be a power of two from 1 to {MAX_BLOCK}")));
    }
    Ok(b as u32)
}

/// What a write buffer (FAB, BPLRU, CLC) checks when it is built: the mode is
/// write-back or write-only (else the error says `why`), then `block`.
/// Returns the block size.
pub fn write_buffer_block(spec: &Spec, ctx: &BuildCtx, why: &str) -> Result<u32, SpecError> {
    check_mode(spec, ctx, &[Mode::WriteBack, Mode::WriteOnly], why)?;
    block_pages(spec)
}

/// Per-block state.
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockMeta {
    /// Resident pages.
    pub count: u32,
    /// Dirty pages.
    pub dirty: u32,
    /// `seq` of the last reference that counts for the order (LRU tie-breaks).
    pub stamp: u64,
    /// Which list the block is on (policy-defined; CLC's two regions).
    pub tag: u8,
    /// BPLRU: the next page offset if the block has been written strictly
    /// sequentially from its first page so far, else [`NOT_SEQUENTIAL`].
    pub seq_next: u32,
}

pub const NOT_SEQUENTIAL: u32 = u32::MAX;

/// Calls `f(start, len)` for each run of set bits (or clear bits, if `invert`)
/// among the first `nbits` bits of `words`, in order.
fn for_each_run(words: &[u64], nbits: usize, invert: bool, mut f: impl FnMut(usize, usize)) {
    let flip = if invert { !0u64 } else { 0 };
    let mut i = 0;
    while i < nbits {
        let (w, b) = (i / 64, i % 64);
        let word = (words[w] ^ flip) & (!0u64 << b);
        if word == 0 {
            i = (w + 1) * 64;
            continue;
        }
        let start = w * 64 + word.trailing_zeros() as usize;
        if start >= nbits {
            break;
        }
        // Extend the run across words while they stay set.
        let mut end = start;
        loop {
            let (w2, b2) = (end / 64, end % 64);
            let ones = ((!((words[w2] ^ flip) >> b2)).trailing_zeros() as usize).min(64 - b2);
            end += ones;
            if b2 + ones < 64 || end >= nbits {
                break;
            }
        }
        let end = end.min(nbits);
        f(start, end - start);
        i = end;
    }
}

/// Calls `f(offset)` for each set bit among the first `nbits` of `words`.
fn for_each_bit(words: &[u64], nbits: usize, mut f: impl FnMut(usize)) {
    for (w, &word) in words.iter().enumerate() {
        let mut word = word;
        while word != 0 {
            let off = w * 64 + word.trailing_zeros() as usize;
            if off >= nbits {
                return;
            }
            f(off);
            word &= word - 1;
        }
    }
}

/// Resident blocks and their pages.
pub struct Blocks {
    /// Nodes keyed by block number (`key >> shift`).
    pub arena: Arena<BlockMeta>,
    /// Per node: `words` resident-bit words, then `words` dirty-bit words.
    bits: Vec<u64>,
    words: usize,
    shift: u32,
    block_pages: u32,
    pages: usize,
    dirty: usize,
}

impl Blocks {
    /// Room for about `capacity` pages (the node count is at most the page count).
    pub fn new(block_pages: u32, capacity: usize) -> Self {
        assert!(block_pages.is_power_of_two());
        let words = (block_pages as usize).div_ceil(64);
        let nodes = capacity.min(1 << 20);
        Blocks {
            arena: Arena::with_capacity(nodes),
            // (grown by `block_for`: a big block times many nodes is too much up front)
            bits: upfront(nodes * 2 * words),
            words,
            shift: block_pages.trailing_zeros(),
            block_pages,
            pages: 0,
            dirty: 0,
        }
    }

    #[inline]
    pub fn block_pages(&self) -> u32 {
        self.block_pages
    }
    /// Resident pages.
    #[inline]
    pub fn pages(&self) -> usize {
        self.pages
    }
    /// Dirty pages.
    #[inline]
    pub fn dirty(&self) -> usize {
        self.dirty
    }
    #[inline]
    pub fn meta(&self, idx: u32) -> &BlockMeta {
        self.arena.val(idx)
    }
    #[inline]
    pub fn meta_mut(&mut self, idx: u32) -> &mut BlockMeta {
        self.arena.val_mut(idx)
    }

    /// Block number and page offset of `key`.
    #[inline]
    pub fn split(&self, key: u64) -> (u64, usize) {
        (key >> self.shift, (key & (self.block_pages as u64 - 1)) as usize)
    }
    /// First page key of the block of node `idx`.
    #[inline]
    pub fn first_key(&self, idx: u32) -> u64 {
        self.arena.key(idx) << self.shift
    }

    #[inline]
    fn res_words(&self, idx: u32) -> &[u64] {
        let at = idx as usize * 2 * self.words;
        &self.bits[at..at + self.words]
    }
    #[inline]
    fn dirty_words(&self, idx: u32) -> &[u64] {
        let at = idx as usize * 2 * self.words + self.words;
        &self.bits[at..at + self.words]
    }
    #[inline]
    fn bit(&self, idx: u32, off: usize, dirty: bool) -> bool {
        let at = idx as usize * 2 * self.words + if dirty { self.words } else { 0 } + off / 64;
        self.bits[at] >> (off % 64) & 1 != 0
    }
    #[inline]
    fn set_bit(&mut self, idx: u32, off: usize, dirty: bool, on: bool) {
        let at = idx as usize * 2 * self.words + if dirty { self.words } else { 0 } + off / 64;
        if on {
            self.bits[at] |= 1 << (off % 64);
        } else {
            self.bits[at] &= !(1 << (off % 64));
        }
    }

    /// The node of `key`'s block and whether `key` itself is resident.
    #[inline]
    pub fn lookup(&self, key: u64) -> (Option<u32>, bool) {
        let (block, off) = self.split(key);
        match self.arena.find(block) {
            Some(idx) => (Some(idx), self.bit(idx, off, false)),
            None => (None, false),
        }
    }

    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        self.lookup(key).1
    }

    /// Whether resident `key` is dirty.
    #[inline]
    pub fn is_dirty(&self, key: u64) -> bool {
        let (block, off) = self.split(key);
        self.arena.find(block).is_some_and(|idx| self.bit(idx, off, true))
    }

    /// The node of `key`'s block, created empty (unlinked) if absent. Returns
    /// the node and whether it was created.
    pub fn block_for(&mut self, key: u64, now: u64) -> (u32, bool) {
        let (block, _) = self.split(key);
        if let Some(idx) = self.arena.find(block) {
            return (idx, false);
        }
        let idx = self.arena.insert(block, BlockMeta { stamp: now, seq_next: NOT_SEQUENTIAL, ..BlockMeta::default() });
        let need = (idx as usize + 1) * 2 * self.words;
        if self.bits.len() < need {
            reserve_for(&mut self.bits, need, self.arena.limit().saturating_mul(2 * self.words));
            self.bits.resize(need, 0);
        }
        (idx, true)
    }

    /// Makes `key` (in node `idx`) resident; dirty if `dirty` (a resident page
    /// only ever turns dirty here). Returns whether the page was added.
    pub fn set_page(&mut self, idx: u32, key: u64, dirty: bool) -> bool {
        let (_, off) = self.split(key);
        let added = !self.bit(idx, off, false);
        if added {
            self.set_bit(idx, off, false, true);
            self.arena.val_mut(idx).count += 1;
            self.pages += 1;
        }
        if dirty && !self.bit(idx, off, true) {
            self.set_bit(idx, off, true, true);
            self.arena.val_mut(idx).dirty += 1;
            self.dirty += 1;
        }
        added
    }

    /// Drops resident `key` from node `idx`; returns whether it was dirty. The
    /// node stays (possibly empty: the caller frees it with [`Blocks::free`]).
    pub fn clear_page(&mut self, idx: u32, key: u64) -> bool {
        let (_, off) = self.split(key);
        debug_assert!(self.bit(idx, off, false));
        let was_dirty = self.bit(idx, off, true);
        self.set_bit(idx, off, false, false);
        self.set_bit(idx, off, true, false);
        let m = self.arena.val_mut(idx);
        m.count -= 1;
        self.pages -= 1;
        if was_dirty {
            m.dirty -= 1;
            self.dirty -= 1;
        }
        was_dirty
    }

    /// Frees node `idx` (unlinked by the caller), dropping whatever pages it
    /// still holds without any I/O.
    pub fn free(&mut self, idx: u32) {
        let m = *self.arena.val(idx);
        self.pages -= m.count as usize;
        self.dirty -= m.dirty as usize;
        let at = idx as usize * 2 * self.words;
        self.bits[at..at + 2 * self.words].fill(0);
        self.arena.remove(idx);
    }

    /// Writes back node `idx`'s dirty pages, one run each; they stay resident, clean.
    pub fn write_back(&mut self, idx: u32, fx: &mut Effects) {
        let first = self.first_key(idx);
        for_each_run(self.dirty_words(idx), self.block_pages as usize, false, |s, n| {
            fx.push(Io::WriteBack { key: first + s as u64, pages: n as u32 });
        });
        let at = idx as usize * 2 * self.words + self.words;
        self.bits[at..at + self.words].fill(0);
        self.dirty -= self.arena.val(idx).dirty as usize;
        self.arena.val_mut(idx).dirty = 0;
    }

    /// Flushes node `idx` (unlinked by the caller) out of the buffer: every page
    /// leaves with `Evict`, dirty ones written back as runs. Each key that left
    /// is pushed to `gone`.
    pub fn evict(&mut self, idx: u32, fx: &mut Effects, gone: &mut Vec<u64>) {
        let first = self.first_key(idx);
        let nbits = self.block_pages as usize;
        let (res, dirty) = (self.res_words(idx), self.dirty_words(idx));
        for_each_bit(res, nbits, |off| {
            let key = first + off as u64;
            let d = dirty[off / 64] >> (off % 64) & 1 != 0;
            fx.push(Io::Evict { key, dirty: d });
            gone.push(key);
        });
        for_each_run(dirty, nbits, false, |s, n| fx.push(Io::WriteBack { key: first + s as u64, pages: n as u32 }));
        self.free(idx);
    }

    /// BPLRU's padded flush of node `idx` (unlinked by the caller): reads the
    /// block's missing pages from backing (one `PadRead` per run), evicts its
    /// pages, and writes the whole block back as one run. A block with nothing
    /// dirty (only after a drain) is just dropped: there is nothing to write.
    pub fn evict_padded(&mut self, idx: u32, fx: &mut Effects, gone: &mut Vec<u64>) {
        if self.arena.val(idx).dirty == 0 {
            return self.evict(idx, fx, gone);
        }
        let first = self.first_key(idx);
        let nbits = self.block_pages as usize;
        let (res, dirty) = (self.res_words(idx), self.dirty_words(idx));
        for_each_run(res, nbits, true, |s, n| fx.push(Io::PadRead { key: first + s as u64, pages: n as u32 }));
        for_each_bit(res, nbits, |off| {
            let d = dirty[off / 64] >> (off % 64) & 1 != 0;
            fx.push(Io::Evict { key: first + off as u64, dirty: d });
            gone.push(first + off as u64);
        });
        fx.push(Io::WriteBack { key: first, pages: self.block_pages });
        self.free(idx);
    }

    /// ABM's delayed flush of node `idx` (unlinked by the caller): the dirty
    /// pages are written back as runs, but only the block's first page leaves
    /// (`Evict`, pushed to `gone`); the other pages, clean now, are pushed to
    /// `kept` in address order and leave this buffer without leaving the cache.
    pub fn evict_keep(&mut self, idx: u32, fx: &mut Effects, kept: &mut Vec<u64>, gone: &mut Vec<u64>) {
        let first = self.first_key(idx);
        let nbits = self.block_pages as usize;
        let (res, dirty) = (self.res_words(idx), self.dirty_words(idx));
        let mut freed = false;
        for_each_bit(res, nbits, |off| {
            let key = first + off as u64;
            if freed {
                kept.push(key);
            } else {
                freed = true;
                let d = dirty[off / 64] >> (off % 64) & 1 != 0;
                fx.push(Io::Evict { key, dirty: d });
                gone.push(key);
            }
        });
        for_each_run(dirty, nbits, false, |s, n| fx.push(Io::WriteBack { key: first + s as u64, pages: n as u32 }));
        self.free(idx);
    }

    /// Writes back every dirty page, blocks in address order (drain).
    pub fn drain(&mut self, nodes: impl Iterator<Item = u32>, fx: &mut Effects) {
        let mut dirty: Vec<(u64, u32)> =
            nodes.filter(|&i| self.arena.val(i).dirty > 0).map(|i| (self.arena.key(i), i)).collect();
        dirty.sort_unstable();
        for (_, idx) in dirty {
            self.write_back(idx, fx);
        }
    }
}

/// Blocks bucketed by page count, each bucket ordered by `stamp` (front = most
/// recent): the victim is the least recent block among those with the most
/// pages (FAB's rule, and CLC's in its size-dependent region).
pub struct SizeBuckets {
    lists: Vec<List>,
    /// Highest count whose bucket may be non-empty.
    max: usize,
    /// Scratch for ordered insertion (trims move a block to a smaller bucket
    /// without making it more recent).
    scratch: Vec<u32>,
}

impl SizeBuckets {
    pub fn new(block_pages: u32) -> Self {
        SizeBuckets { lists: vec![List::new(); block_pages as usize + 1], max: 0, scratch: Vec::new() }
    }

    /// Links `idx` into the bucket of its current count, by its stamp.
    pub fn insert(&mut self, b: &mut Blocks, idx: u32) {
        let (count, stamp) = (b.meta(idx).count as usize, b.meta(idx).stamp);
        debug_assert!(count > 0);
        let list = &mut self.lists[count];
        // Nearly always the newest: push at the front. Otherwise walk from the
        // front past the more recent blocks and put them back.
        while let Some(front) = list.front() {
            if b.meta(front).stamp <= stamp {
                break;
            }
            list.pop_front(&mut b.arena);
            self.scratch.push(front);
        }
        list.push_front(&mut b.arena, idx);
        while let Some(i) = self.scratch.pop() {
            list.push_front(&mut b.arena, i);
        }
        self.max = self.max.max(count);
    }

    /// Unlinks `idx`, which is in the bucket of `count` pages.
    pub fn remove(&mut self, b: &mut Blocks, idx: u32, count: u32) {
        self.lists[count as usize].unlink(&mut b.arena, idx);
        while self.max > 0 && self.lists[self.max].is_empty() {
            self.max -= 1;
        }
    }

    /// The least recent of the largest blocks.
    pub fn victim(&self) -> Option<u32> {
        self.lists[self.max].back()
    }

    pub fn is_empty(&self) -> bool {
        self.max == 0
    }

    /// Every linked node.
    pub fn nodes<'a>(&'a self, b: &'a Blocks) -> impl Iterator<Item = u32> + 'a {
        self.lists.iter().flat_map(move |l| l.nodes(&b.arena))
    }
}

/// How a block-unit policy orders its blocks. The buffer calls `update` after
/// every change to a block: a page added or dropped, or a reference. `old` is
/// the count the block is linked under (0: a new block, not linked yet);
/// `touched` says the block was referenced now (its `stamp` already set), else
/// only its count changed (a trim) and it keeps its place in recency. A block
/// with no pages left is unlinked with `leave` (under its linked count) and freed.
pub trait Order {
    /// Whether a read hit counts as a reference (FAB: yes; write buffers: no).
    const TOUCH_ON_READ: bool;
    /// A block's count changed from `old` (0 = new, unlinked) or it was touched.
    fn update(&mut self, b: &mut Blocks, idx: u32, old: u32, touched: bool);
    /// The block to flush next.
    fn victim(&self, b: &Blocks) -> Option<u32>;
    /// Unlinks `idx` (whose count is still the linked one).
    fn leave(&mut self, b: &mut Blocks, idx: u32);
    /// Every linked node (for drain).
    fn nodes<'a>(&'a self, b: &'a Blocks) -> Box<dyn Iterator<Item = u32> + 'a>;
}

/// FAB's order: the largest block, least recently referenced among equals.
pub struct FabOrder(pub SizeBuckets);

impl Order for FabOrder {
    const TOUCH_ON_READ: bool = true;
    fn update(&mut self, b: &mut Blocks, idx: u32, old: u32, _touched: bool) {
        if old > 0 {
            self.0.remove(b, idx, old);
        }
        self.0.insert(b, idx);
    }
    fn victim(&self, _b: &Blocks) -> Option<u32> {
        self.0.victim()
    }
    fn leave(&mut self, b: &mut Blocks, idx: u32) {
        let count = b.meta(idx).count;
        self.0.remove(b, idx, count);
    }
    fn nodes<'a>(&'a self, b: &'a Blocks) -> Box<dyn Iterator<Item = u32> + 'a> {
        Box::new(self.0.nodes(b))
    }
}

/// A block-unit buffer: blocks, their order, and the page operations every
/// block policy shares. Capacity is the caller's business.
pub struct BlockBuffer<O: Order> {
    pub blocks: Blocks,
    pub order: O,
    /// Scratch for the keys a flush evicts.
    pub gone: Vec<u64>,
}

impl<O: Order> BlockBuffer<O> {
    pub fn new(blocks: Blocks, order: O) -> Self {
        BlockBuffer { blocks, order, gone: Vec::new() }
    }

    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        self.blocks.contains(key)
    }
    #[inline]
    pub fn pages(&self) -> usize {
        self.blocks.pages()
    }

    /// A read of `a.key`: sets `fx.hit`; a hit is served from the buffer (and
    /// makes its block the most recent where the order counts reads), a miss
    /// is read from backing (`Io::Fetch`). Caching the missed page is the
    /// caller's business. Returns whether it hit.
    pub fn read(&mut self, a: &Access, fx: &mut Effects) -> bool {
        fx.hit = self.contains(a.key);
        if !fx.hit {
            fx.push(Io::Fetch { key: a.key, pages: 1 });
        } else if O::TOUCH_ON_READ {
            self.hit(a.key, false, a.seq);
        }
        fx.hit
    }

    /// A write of `a.key` to a buffer of `capacity` pages (FAB's and CLC's): a
    /// hit dirties the page and makes its block the most recent; a miss reads
    /// the old page first if the write is partial, flushes victim blocks until
    /// a page is free (the victim is chosen before the write counts as a
    /// reference) and adds the page dirty. Either way the page is written
    /// into the cache.
    pub fn write(&mut self, a: &Access, capacity: usize, fx: &mut Effects) {
        let key = a.key;
        fx.hit = self.contains(key);
        if fx.hit {
            self.hit(key, true, a.seq);
        } else {
            if a.partial {
                fx.push(Io::ReadForWrite { key });
            }
            self.make_room(capacity, fx);
            self.add(key, true, a.seq);
        }
        fx.push(Io::CacheWrite { key });
    }

    /// A trim of `key`: drops it if resident (`Io::Invalidate`, a hit).
    /// Returns whether it was resident.
    pub fn trim(&mut self, key: u64, fx: &mut Effects) -> bool {
        let Some(dirty) = self.remove(key) else { return false };
        fx.hit = true;
        fx.push(Io::Invalidate { key, dirty });
        true
    }

    /// Flushes victim blocks until fewer than `capacity` pages are buffered.
    pub fn make_room(&mut self, capacity: usize, fx: &mut Effects) {
        while self.pages() >= capacity && self.evict_victim(fx) {}
    }

    /// Occupancy, for a policy that is this buffer alone with `capacity` pages.
    pub fn stats(&self, capacity: usize) -> PolicyStats {
        PolicyStats {
            capacity: capacity as u64,
            resident: self.pages() as u64,
            dirty: self.blocks.dirty() as u64,
            ghosts: 0,
        }
    }

    /// A hit on resident `key`: a write marks it dirty; a write (or a read,
    /// where the order counts reads) makes its block the most recent.
    pub fn hit(&mut self, key: u64, write: bool, now: u64) {
        let (idx, _) = self.blocks.lookup(key);
        let idx = idx.expect("hit on a resident page");
        if write {
            self.blocks.set_page(idx, key, true);
        }
        if write || O::TOUCH_ON_READ {
            self.hit_block(idx, now);
        }
    }

    /// A reference to the block of node `idx` (it becomes the most recent).
    pub fn hit_block(&mut self, idx: u32, now: u64) {
        let count = self.blocks.meta(idx).count;
        self.blocks.meta_mut(idx).stamp = now;
        self.order.update(&mut self.blocks, idx, count, true);
    }

    /// Makes non-resident `key` resident (its block becomes the most recent).
    /// Returns the block's node.
    pub fn add(&mut self, key: u64, dirty: bool, now: u64) -> u32 {
        let (idx, _) = self.blocks.block_for(key, now);
        let old = self.blocks.meta(idx).count;
        self.blocks.set_page(idx, key, dirty);
        self.blocks.meta_mut(idx).stamp = now;
        self.order.update(&mut self.blocks, idx, old, true);
        idx
    }

    /// Drops resident `key` without I/O (trim, or a move to another buffer).
    /// Returns whether it was dirty, or `None` if it was not resident. Its
    /// block keeps its place in the order's recency.
    pub fn remove(&mut self, key: u64) -> Option<bool> {
        let (Some(idx), true) = self.blocks.lookup(key) else { return None };
        let old = self.blocks.meta(idx).count;
        if old == 1 {
            self.order.leave(&mut self.blocks, idx);
            let dirty = self.blocks.clear_page(idx, key);
            self.blocks.free(idx);
            return Some(dirty);
        }
        let dirty = self.blocks.clear_page(idx, key);
        self.order.update(&mut self.blocks, idx, old, false);
        Some(dirty)
    }

    /// Unlinks the victim block from the order and returns its node, whose
    /// pages are still in `blocks` for the caller to flush (and free); `None`
    /// if the buffer is empty.
    pub fn take_victim(&mut self) -> Option<u32> {
        let idx = self.order.victim(&self.blocks)?;
        self.order.leave(&mut self.blocks, idx);
        Some(idx)
    }

    /// Flushes the victim block out (all its pages leave); their keys are in
    /// `self.gone` afterwards. Returns false if the buffer is empty.
    pub fn evict_victim(&mut self, fx: &mut Effects) -> bool {
        self.gone.clear();
        let Some(idx) = self.take_victim() else { return false };
        self.blocks.evict(idx, fx, &mut self.gone);
        true
    }

    /// Writes back every dirty page (runs, blocks in address order); pages stay, clean.
    pub fn drain(&mut self, fx: &mut Effects) {
        let nodes: Vec<u32> = self.order.nodes(&self.blocks).collect();
        self.blocks.drain(nodes.into_iter(), fx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(words: &[u64], nbits: usize, invert: bool) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for_each_run(words, nbits, invert, |s, n| out.push((s, n)));
        out
    }

    #[test]
    fn runs_cross_words_and_stop_at_the_block_end() {
        assert_eq!(runs(&[0b1011_0110], 8, false), vec![(1, 2), (4, 2), (7, 1)]);
        assert_eq!(runs(&[0b1011_0110], 8, true), vec![(0, 1), (3, 1), (6, 1)]);
        assert_eq!(runs(&[0b1111], 4, true), vec![]);
        assert_eq!(runs(&[0], 4, true), vec![(0, 4)]);
        // A run from bit 60 of word 0 to bit 3 of word 1.
        assert_eq!(runs(&[0xf << 60, 0xf], 128, false), vec![(60, 8)]);
        assert_eq!(runs(&[!0, !0], 128, false), vec![(0, 128)]);
        assert_eq!(runs(&[!0, 1 << 63], 128, true), vec![(64, 63)]);
        let mut bits = Vec::new();
        for_each_bit(&[0b1001, 1], 128, |o| bits.push(o));
        assert_eq!(bits, vec![0, 3, 64]);
    }

    #[test]
    fn size_buckets_pick_the_oldest_of_the_largest() {
        let mut b = Blocks::new(4, 16);
        let mut s = SizeBuckets::new(4);
        let node = |b: &mut Blocks, key: u64, pages: u64, now: u64| {
            let (idx, _) = b.block_for(key, now);
            for k in key..key + pages {
                b.set_page(idx, k, true);
            }
            idx
        };
        let x = node(&mut b, 0, 2, 1);
        let y = node(&mut b, 4, 3, 2);
        let z = node(&mut b, 8, 3, 3);
        for i in [x, y, z] {
            s.insert(&mut b, i);
        }
        assert_eq!(s.victim(), Some(y));
        // y loses a page by a trim: it joins x's bucket at its own (older) place.
        s.remove(&mut b, y, 3);
        b.clear_page(y, 6);
        s.insert(&mut b, y);
        assert_eq!(s.victim(), Some(z));
        s.remove(&mut b, z, 3);
        assert_eq!(s.victim(), Some(x), "x (stamp 1) is older than y (stamp 2)");
        assert_eq!(s.nodes(&b).count(), 2);
    }
}
