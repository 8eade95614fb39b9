//! FAB: flash-aware buffer management (Jo, Kang, Park, Kim & Lee, IEEE Trans.
//! Consumer Electronics 52(2), 2006), as restated by paper 004 §2.3.
//!
//! The buffer (a buffer cache for reads and writes, on a portable media player)
//! groups its pages by flash block. Blocks sit in a block-level LRU list: any
//! reference to a page, read or write, makes its block the most recent. When a
//! page must be brought in and the buffer is full, the victim is the block with
//! the **most pages in the buffer**; among blocks with equally many, the one
//! at the LRU end (paper 004: "the one referenced longer ago"). All of the
//! victim's pages leave at once: clean ones are dropped, dirty ones written
//! back in address order, one [`Io::WriteBack`] per contiguous run, so the FTL
//! sees sequential writes and can switch-merge full blocks. FAB has no separate
//! sequential-write detection: its victim rule is what favours the full blocks
//! that sequential (multimedia) writes produce.
//!
//! Parameters: `block` (pages per block, see [`BLOCK_PARAM`]).
//!
//! Modes: `write-back` (the paper's buffer cache) and `write-only` (read misses
//! are served from backing and not inserted, paper 001's WO cache); other modes
//! are refused, as the policy exists to reorder dirty pages.
//!
//! Choices where the paper is silent (our reading):
//! - The victim is chosen before the missed page is inserted, among all blocks
//!   in the buffer, including the missed page's own block (it is then flushed
//!   and the page starts the block anew).
//! - A trim drops the page (`Io::Invalidate`) without making its block more
//!   recent: the block moves to the bucket of its new size at the place its
//!   last reference gives it.
//! - A partial write miss reads the old page first (`Io::ReadForWrite`), as for
//!   page policies.
//!
//! With `block=1` every block holds one page and FAB is exactly LRU (tested).
//! Each access is `O(1)` except after a trim (a walk within one size bucket).

use super::block::{write_buffer_block, BlockBuffer, Blocks, FabOrder, SizeBuckets, BLOCK_PARAM};
use crate::policy::{Access, BuildCtx, Effects, Io, Mode, Policy, PolicyInfo, PolicyStats, Rules, Spec, SpecError};
use crate::trace::Op;

pub struct Fab {
    buf: BlockBuffer<FabOrder>,
    capacity: usize,
    /// Insert read misses (write-back mode) or not (write-only).
    cache_reads: bool,
}

impl Fab {
    pub fn new(capacity: usize, block_pages: u32, cache_reads: bool) -> Self {
        let capacity = capacity.max(1);
        let blocks = Blocks::new(block_pages, capacity);
        Fab { buf: BlockBuffer::new(blocks, FabOrder(SizeBuckets::new(block_pages))), capacity, cache_reads }
    }
}

impl Policy for Fab {
    fn access(&mut self, a: &Access, fx: &mut Effects) {
        match a.op {
            Op::Read => {
                if !self.buf.read(a, fx) && self.cache_reads {
                    self.buf.make_room(self.capacity, fx);
                    self.buf.add(a.key, false, a.seq);
                    fx.push(Io::CacheWrite { key: a.key });
                }
            }
            Op::Write => self.buf.write(a, self.capacity, fx),
            Op::Trim => {
                self.buf.trim(a.key, fx);
            }
        }
    }

    fn drain(&mut self, fx: &mut Effects) {
        self.buf.drain(fx);
    }

    fn stats(&self) -> PolicyStats {
        self.buf.stats(self.capacity)
    }
}

fn build(spec: &Spec, ctx: &BuildCtx, _: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    let block = write_buffer_block(spec, ctx, "fab buffers writes: write-back or write-only")?;
    Ok(Box::new(Fab::new(ctx.capacity, block, ctx.mode == Mode::WriteBack)))
}

pub const INFO: PolicyInfo = PolicyInfo {
    name: "fab",
    about: "FAB: flush the block with the most buffered pages, LRU among equals (Jo et al. 2006)",
    params: &[BLOCK_PARAM],
    build,
    rule: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::flash::testing::{same_accesses, same_drain, stream};
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::run;
    use crate::policy::testing::{read, write};
    use crate::policy::Mode;

    fn trim(key: u64, seq: u64) -> Access {
        Access { op: Op::Trim, ..read(key, seq) }
    }

    #[test]
    fn flushes_the_largest_block_oldest_first_in_runs() {
        // 4 pages per block, 6 pages of buffer.
        let mut p = Fab::new(6, 4, true);
        // Block 0: pages 0, 1, 3 (dirty 0 and 3, clean 1); block 1: pages 4, 5 (dirty);
        // block 2: page 8 (dirty).
        run(&mut p, write(0, 0));
        run(&mut p, read(1, 1));
        run(&mut p, write(3, 2));
        run(&mut p, write(4, 3));
        run(&mut p, write(5, 4));
        run(&mut p, write(8, 5));
        assert_eq!(p.stats().resident, 6);
        // Full: a miss on 12 flushes block 0 (3 pages, the largest): every page
        // evicted, the dirty ones written back as two runs (0 and 3).
        let (hit, io) = run(&mut p, write(12, 6));
        assert!(!hit);
        assert_eq!(
            io,
            vec![
                Io::Evict { key: 0, dirty: true },
                Io::Evict { key: 1, dirty: false },
                Io::Evict { key: 3, dirty: true },
                Io::WriteBack { key: 0, pages: 1 },
                Io::WriteBack { key: 3, pages: 1 },
                Io::CacheWrite { key: 12 },
            ]
        );
        // Blocks 1 (4, 5) and now 2 (8, 9): equal size, so the least recently
        // referenced goes. A read of 4 makes block 1 the most recent.
        run(&mut p, write(9, 7));
        let (hit, io) = run(&mut p, read(4, 8));
        assert!(hit && io.is_empty());
        run(&mut p, write(16, 9));
        let (_, io) = run(&mut p, write(20, 10));
        assert_eq!(
            io,
            vec![
                Io::Evict { key: 8, dirty: true },
                Io::Evict { key: 9, dirty: true },
                Io::WriteBack { key: 8, pages: 2 },
                Io::CacheWrite { key: 20 },
            ]
        );
        // Drain: runs per block, blocks in address order; pages stay, clean.
        let mut fx = Effects::new();
        p.drain(&mut fx);
        assert_eq!(
            fx.io,
            vec![
                Io::WriteBack { key: 4, pages: 2 },
                Io::WriteBack { key: 12, pages: 1 },
                Io::WriteBack { key: 16, pages: 1 },
                Io::WriteBack { key: 20, pages: 1 },
            ]
        );
        assert_eq!((p.stats().resident, p.stats().dirty), (5, 0));
    }

    #[test]
    fn a_trim_keeps_the_block_in_its_place_in_recency() {
        let mut p = Fab::new(5, 4, true);
        for (i, k) in [0u64, 1, 4, 5, 6].into_iter().enumerate() {
            run(&mut p, write(k, i as u64));
        }
        // Block 1 (4, 5, 6) is the largest; trim 6: now blocks 0 and 1 have two
        // pages each and block 0 is older.
        assert_eq!(run(&mut p, trim(6, 5)), (true, vec![Io::Invalidate { key: 6, dirty: true }]));
        assert_eq!(run(&mut p, trim(7, 6)), (false, vec![]));
        run(&mut p, write(8, 7));
        let (_, io) = run(&mut p, read(12, 8));
        assert_eq!(
            io,
            vec![
                Io::Fetch { key: 12, pages: 1 },
                Io::Evict { key: 0, dirty: true },
                Io::Evict { key: 1, dirty: true },
                Io::WriteBack { key: 0, pages: 2 },
                Io::CacheWrite { key: 12 },
            ]
        );
    }

    #[test]
    fn write_only_mode_does_not_keep_read_misses() {
        let mut p = Fab::new(4, 4, false);
        assert_eq!(run(&mut p, read(1, 0)), (false, vec![Io::Fetch { key: 1, pages: 1 }]));
        assert_eq!(p.stats().resident, 0);
        run(&mut p, write(1, 1));
        assert!(run(&mut p, read(1, 2)).0);
    }

    #[test]
    fn modes_and_blocks_are_checked() {
        let ctx = BuildCtx { capacity: 8, mode: Mode::WriteThrough, page_bytes: 4096 };
        let e = build_spec("fab", &ctx).err().unwrap().to_string();
        assert!(e.contains("mode=write-through"), "{e}");
        let ctx = BuildCtx { capacity: 8, mode: Mode::WriteBack, page_bytes: 4096 };
        let e = build_spec("fab(block=3)", &ctx).err().unwrap().to_string();
        assert!(e.contains("power of two"), "{e}");
        assert!(build_spec("fab(block=1,mode=wo)", &ctx).is_ok());
    }

    #[test]
    fn with_one_page_blocks_fab_is_lru() {
        // Same hits and the same effects, access by access, as `lru` (in
        // write-back and write-only mode), on random reads, writes and trims.
        for mode in [Mode::WriteBack, Mode::WriteOnly] {
            for (capacity, keys, seed) in [(1, 4, 1), (5, 20, 2), (16, 40, 3), (64, 300, 4)] {
                let ctx = BuildCtx { capacity, mode, page_bytes: 4096 };
                let (mut fab, _) = build_spec("fab(block=1)", &ctx).unwrap();
                let (mut lru, _) = build_spec("lru", &ctx).unwrap();
                let what = format!("{mode} capacity {capacity}");
                let misses = same_accesses(fab.as_mut(), lru.as_mut(), &stream(20_000, keys, seed, true), &what);
                assert!(misses > 0);
                assert_eq!(fab.stats(), lru.stats());
                same_drain(fab.as_mut(), lru.as_mut(), &what);
            }
        }
    }
}
