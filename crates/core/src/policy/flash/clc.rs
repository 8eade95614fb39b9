//! CLC: cold and largest cluster (Kang, Park, Jung, Shim & Cha, "Performance
//! trade-offs in using NVRAM write buffer for flash memory-based storage
//! devices", IEEE Trans. Computers 58(6), 2009), as restated by papers 002 and
//! 004.
//!
//! An NVRAM **write buffer** whose pages are grouped into clusters, one per
//! flash block. The cluster list has two regions:
//! - the **size-independent** region, an LRU list of clusters: a written
//!   cluster (new, or found anywhere in the buffer) goes to its MRU end;
//!   whatever falls off its LRU end, beyond its share of the buffer, enters
//! - the **size-dependent** region, where clusters are ordered by size (pages
//!   in the buffer), and by recency among clusters of the same size.
//!
//! The victim is the largest cluster of the size-dependent region (the
//! least recent among equals): a cold cluster that flushes many pages at once.
//! Its pages leave together, written back in address order, one
//! [`Io::WriteBack`] per contiguous run. CLC combines FAB (largest block,
//! the size-dependent region alone) with block-level LRU (the
//! size-independent region alone): `lru=0` is FAB's order on writes,
//! `lru=100%` is block-level LRU by writes (both tested).
//!
//! [`Io::WriteBack`]: crate::policy::Io::WriteBack
//!
//! Reads are not buffered: a read hit is served from the buffer and does not
//! count as a reference (the order is by writes), a read miss is served from
//! flash (`Io::Fetch`) without being inserted.
//!
//! Parameters: `block` (pages per cluster, see [`BLOCK_PARAM`]); `lru`, the
//! share of the buffer, in pages, for the size-independent region, default
//! 10%. **Unverified**: we could not read the original's text, so the default
//! (and measuring the region in pages rather than clusters) is our choice;
//! set it explicitly where it matters.
//!
//! Modes: `write-back` and `write-only` mean the same here (a write buffer);
//! other modes are refused.
//!
//! Choices where the sources are silent (our reading):
//! - The region limit is enforced after every write: while the
//!   size-independent region holds more pages than its share, its LRU cluster
//!   moves to the size-dependent region (the written cluster too, if it alone
//!   exceeds the share).
//! - If the size-dependent region is empty, the victim is the LRU cluster of
//!   the size-independent region.
//! - On a miss the victim is chosen before the write counts as a reference,
//!   as in FAB: the written page's own cluster can be the victim (it is then
//!   flushed, and the page starts it anew).
//! - A trim drops the page without making its cluster more recent; in the
//!   size-dependent region the cluster moves to its new size class at the
//!   place its last write gives it.

use super::block::{write_buffer_block, BlockBuffer, Blocks, Order, SizeBuckets, BLOCK_PARAM};
use crate::list::List;
use crate::policy::{Access, BuildCtx, Effects, ParamInfo, Policy, PolicyInfo, PolicyStats, Rules, Spec, SpecError};
use crate::trace::Op;

/// Region tags.
const SI: u8 = 0;
const SD: u8 = 1;

/// CLC's two regions.
pub struct ClcOrder {
    /// Size-independent LRU list of clusters (front = most recent).
    si: List,
    si_pages: usize,
    si_limit: usize,
    sd: SizeBuckets,
}

impl ClcOrder {
    /// `si_limit`: pages the size-independent region may hold.
    pub fn new(block_pages: u32, si_limit: usize) -> Self {
        ClcOrder { si: List::new(), si_pages: 0, si_limit, sd: SizeBuckets::new(block_pages) }
    }

    /// Moves LRU clusters of the size-independent region to the other while it is over its share.
    fn rebalance(&mut self, b: &mut Blocks) {
        while self.si_pages > self.si_limit {
            let Some(tail) = self.si.pop_back(&mut b.arena) else { return };
            self.si_pages -= b.meta(tail).count as usize;
            b.meta_mut(tail).tag = SD;
            self.sd.insert(b, tail);
        }
    }
}

impl Order for ClcOrder {
    const TOUCH_ON_READ: bool = false;

    fn update(&mut self, b: &mut Blocks, idx: u32, old: u32, touched: bool) {
        let count = b.meta(idx).count as usize;
        if old == 0 {
            self.si.push_front(&mut b.arena, idx);
            b.meta_mut(idx).tag = SI;
            self.si_pages += count;
        } else if b.meta(idx).tag == SI {
            if touched {
                self.si.move_to_front(&mut b.arena, idx);
            }
            self.si_pages = self.si_pages + count - old as usize;
        } else {
            self.sd.remove(b, idx, old);
            if touched {
                self.si.push_front(&mut b.arena, idx);
                b.meta_mut(idx).tag = SI;
                self.si_pages += count;
            } else {
                self.sd.insert(b, idx);
            }
        }
        self.rebalance(b);
    }

    fn victim(&self, _b: &Blocks) -> Option<u32> {
        self.sd.victim().or(self.si.back())
    }

    fn leave(&mut self, b: &mut Blocks, idx: u32) {
        let count = b.meta(idx).count;
        if b.meta(idx).tag == SI {
            self.si.unlink(&mut b.arena, idx);
            self.si_pages -= count as usize;
        } else {
            self.sd.remove(b, idx, count);
        }
    }

    fn nodes<'a>(&'a self, b: &'a Blocks) -> Box<dyn Iterator<Item = u32> + 'a> {
        Box::new(self.si.nodes(&b.arena).chain(self.sd.nodes(b)))
    }
}

pub struct Clc {
    buf: BlockBuffer<ClcOrder>,
    capacity: usize,
}

impl Clc {
    /// `lru`: share of the buffer for the size-independent region.
    pub fn new(capacity: usize, block_pages: u32, lru: f64) -> Self {
        let capacity = capacity.max(1);
        let si_limit = (lru * capacity as f64).round() as usize;
        let blocks = Blocks::new(block_pages, capacity);
        Clc { buf: BlockBuffer::new(blocks, ClcOrder::new(block_pages, si_limit)), capacity }
    }
}

impl Policy for Clc {
    fn access(&mut self, a: &Access, fx: &mut Effects) {
        match a.op {
            Op::Read => {
                self.buf.read(a, fx);
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
    let block = write_buffer_block(spec, ctx, "clc is a write buffer: write-back or write-only")?;
    Ok(Box::new(Clc::new(ctx.capacity, block, spec.ratio("lru")?)))
}

pub const INFO: PolicyInfo = PolicyInfo {
    name: "clc",
    about: "CLC: flush the largest cluster outside an LRU region of recent clusters (Kang et al. 2009)",
    params: &[
        BLOCK_PARAM,
        ParamInfo {
            name: "lru",
            default: "10%",
            about: "share of the buffer (pages) for the size-independent LRU region (our default; 0 = FAB's \
                    order, 100% = block LRU)",
        },
    ],
    build,
    rule: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::flash::fab::Fab;
    use crate::policy::flash::testing::{check_block_lru, same_effects, stream};
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::run;
    use crate::policy::testing::{read, write};
    use crate::policy::{Io, Mode};
    use crate::trace::Op;

    #[test]
    fn victim_is_the_largest_cold_cluster() {
        // 4 pages per cluster, 8 pages of buffer, 3 of them for the LRU region.
        let mut p = Clc::new(8, 4, 3.0 / 8.0);
        // Cluster 0: pages 0-2 (3 pages), cluster 1: 4-5, cluster 2: 8, cluster 3: 12-13.
        for (i, k) in [0u64, 1, 2, 4, 5, 8, 12, 13].into_iter().enumerate() {
            run(&mut p, write(k, i as u64));
        }
        // LRU region (3 pages): cluster 3 (2 pages) and cluster 2 (1 page);
        // size-dependent: cluster 0 (3 pages), cluster 1 (2 pages).
        assert_eq!(p.buf.order.si_pages, 3);
        // Reads do not count: cluster 0 stays cold.
        assert_eq!(run(&mut p, read(0, 8)), (true, vec![]));
        let (hit, io) = run(&mut p, write(16, 9));
        assert!(!hit);
        assert_eq!(
            io,
            vec![
                Io::Evict { key: 0, dirty: true },
                Io::Evict { key: 1, dirty: true },
                Io::Evict { key: 2, dirty: true },
                Io::WriteBack { key: 0, pages: 3 },
                Io::CacheWrite { key: 16 },
            ]
        );
        // Cluster 2 went cold when cluster 4 arrived. A write to cluster 1
        // (cold) makes it hot again: it enters the LRU region and pushes
        // cluster 3 out; cluster 5's two writes push 4 and then 1 out again.
        // The largest cold clusters are 3 and 1 (2 pages); 3 is older.
        run(&mut p, write(4, 10));
        run(&mut p, write(20, 11));
        run(&mut p, write(21, 12));
        let (_, io) = run(&mut p, write(24, 13));
        assert_eq!(
            io,
            vec![
                Io::Evict { key: 12, dirty: true },
                Io::Evict { key: 13, dirty: true },
                Io::WriteBack { key: 12, pages: 2 },
                Io::CacheWrite { key: 24 },
            ]
        );
    }

    #[test]
    fn zero_lru_region_is_fab_order_and_full_region_is_block_lru() {
        // lru=0 against FAB on streams of writes and trims (FAB also counts reads).
        let writes = |seed| stream(20_000, 60, seed, true).into_iter().filter(|a| a.op != Op::Read).collect::<Vec<_>>();
        for (capacity, block, seed) in [(1, 1, 1), (7, 4, 2), (24, 8, 3), (16, 2, 4)] {
            let (mut clc, mut fab) = (Clc::new(capacity, block, 0.0), Fab::new(capacity, block, true));
            same_effects(&mut clc, &mut fab, &writes(seed), &format!("capacity {capacity} block {block}"));
        }
        // lru=100% against the block-LRU model, with reads.
        for (capacity, block, keys, seed) in [(1, 1, 5, 1), (6, 4, 40, 2), (32, 8, 200, 3), (10, 2, 30, 4)] {
            let mut p = Clc::new(capacity, block, 1.0);
            check_block_lru(&mut p, capacity, block as u64, &stream(20_000, keys, seed, true), false);
        }
    }

    #[test]
    fn the_lru_share_is_checked() {
        let ctx = BuildCtx { capacity: 8, mode: Mode::WriteOnly, page_bytes: 4096 };
        assert!(build_spec("clc(lru=25%,block=8)", &ctx).is_ok());
        assert!(build_spec("clc(lru=150%)", &ctx).is_err());
    }
}
