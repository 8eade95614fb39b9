//! Caches over more than one kind of memory: paper 003's DRAM + NVRAM buffer
//! cache ([`nvram`]: Read Volatile and Read Global, with Write Global and
//! Write Purge), and paper 000's persistent SSD cache in front of an HDD
//! ([`pwc`]) and the segment-unit LRU it is compared against ([`segment_lru`]).
//!
//! A tiered cache keeps each tier under its own replacement rule, built by
//! the registry from a nested spec (`tier=2q(kin=30%)`, through
//! [`Rules`](crate::policy::Rules)), so a tier's rule is the same code
//! `ssdcache sim --policy NAME` runs.

pub mod cleaner;
pub mod nvram;
pub mod pwc;
pub mod segment_lru;

use crate::policy::{Effects, Io};

/// Writes back a segment's dirty pages, one `WriteBack` per contiguous run
/// of set bits in `words` (bit `off` = page `base + off`, `pages` pages), and
/// clears the bits. Shared by the segment-unit caches (PWC, segment LRU).
pub(crate) fn write_back_runs(words: &mut [u64], base: u64, pages: u64, fx: &mut Effects) {
    let mut run: Option<u64> = None;
    for off in 0..pages {
        let set = words[(off / 64) as usize] >> (off % 64) & 1 == 1;
        match (set, run) {
            (true, None) => run = Some(off),
            (false, Some(start)) => {
                fx.push(Io::WriteBack { key: base + start, pages: (off - start) as u32 });
                run = None;
            }
            _ => {}
        }
    }
    if let Some(start) = run {
        fx.push(Io::WriteBack { key: base + start, pages: (pages - start) as u32 });
    }
    words.fill(0);
}
