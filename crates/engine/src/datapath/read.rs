//! Reads, and the block-status extents of a range: each request split at
//! segment boundaries into pieces served by the SSD or the HDD.

use std::io;
use std::sync::atomic::Ordering::Relaxed;

use super::*;

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> CacheMap<S, H, M> {
    /// Whether segment `h` is cached now (the caller holds its lock); an
    /// error once the map is closed.
    pub(super) fn cached_now(&self, h: u64) -> io::Result<bool> {
        let st = lock(&self.state);
        if st.closed {
            return Err(closed());
        }
        Ok(st.rev.contains_key(&h))
    }

    /// Splits `offset..offset+len` at segment boundaries (slots unresolved).
    pub(super) fn pieces(&self, offset: u64, len: usize) -> io::Result<Vec<Piece>> {
        crate::device::check_range(self.len(), offset, len)?;
        let seg = self.seg;
        let mut out = Vec::with_capacity(2);
        let (mut at, end) = (offset, offset + len as u64);
        while at < end {
            let n = (seg - at % seg).min(end - at);
            out.push(Piece {
                hdd_seg: at / seg,
                within: at % seg,
                pos: (at - offset) as usize,
                len: n as usize,
                slot: None,
            });
            at += n;
        }
        Ok(out)
    }

    /// The allocation of `offset..offset+len` as a reader sees it: a segment
    /// the cache holds (clean or dirty) is data, whatever the HDD says (a
    /// dirty segment over an HDD hole holds data the HDD has not seen yet);
    /// any other piece is what the HDD reports. At most `max` extents, then
    /// a prefix of the range. Each segment is looked at under its lock, so a
    /// write-back or a slot move of it cannot fall between the two looks.
    pub fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<ssdcache_block::Extent>> {
        use ssdcache_block::extents::{push, Extent};
        crate::device::check_range(self.len(), offset, len as usize)?;
        let (seg, end) = (self.seg, offset + len);
        let mut out: Vec<Extent> = Vec::new();
        let mut at = offset;
        // Bounded work per query (a lock and two lseeks per segment): at most
        // this many segments, then the prefix so far (the client asks again).
        let stop = end.min(offset.saturating_add(MAX_STATUS_SEGMENTS * seg - offset % seg));
        while at < stop && out.len() < max.max(1) {
            let h = at / seg;
            let n = (seg - at % seg).min(stop - at);
            let _held = self.locks.lock([h]);
            let cached = self.cached_now(h)?;
            if cached {
                push(&mut out, Extent::data(n));
            } else {
                // Room for this piece's extents, keeping the merged list within `max`.
                let room = (max.max(1) - out.len()).max(1);
                let piece = self.hdd.extents(at, n, room).map_err(|e| self.hdd_failed(e))?;
                let covered: u64 = piece.iter().map(|e| e.len).sum();
                for e in piece {
                    push(&mut out, e);
                }
                if covered < n {
                    break; // the device stopped early: report the prefix
                }
            }
            at += n;
        }
        out.truncate(max.max(1));
        Ok(out)
    }

    /// Reads through the map.
    pub fn read(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.read_filled(buf, offset, &[]).map(drop)
    }

    /// Reads through the map; pieces of the segments in `filled` (copied
    /// from the HDD for this very request: a real-time fill) are counted as
    /// misses, not as hits served without the backing device.
    pub fn read_filled(&self, buf: &mut [u8], offset: u64, filled: &[u64]) -> io::Result<Tally> {
        let mut pieces = self.pieces(offset, buf.len())?;
        let _held = self.locks.lock(pieces.iter().map(|p| p.hdd_seg));
        {
            let st = lock(&self.state);
            if st.closed {
                return Err(closed());
            }
            for p in &mut pieces {
                p.slot = st.rev.get(&p.hdd_seg).copied().filter(|&s| !st.poisoned[s as usize]);
            }
        }
        let c = &self.counters;
        c.request_bytes.fetch_add(buf.len() as u64, Relaxed);
        let mut tally = Tally::default();
        for p in &pieces {
            let b = &mut buf[p.pos..p.pos + p.len];
            if let Some(s) = p.slot {
                match self.ssd.read_at(b, s as u64 * self.seg + p.within) {
                    Ok(()) => {
                        c.ssd_read.fetch_add(p.len as u64, Relaxed);
                        if filled.contains(&p.hdd_seg) {
                            c.read_misses.fetch_add(1, Relaxed);
                            tally.misses += 1;
                        } else {
                            c.read_hits.fetch_add(1, Relaxed);
                            tally.hits += 1;
                            c.served_pieces.fetch_add(1, Relaxed);
                            c.served_bytes.fetch_add(p.len as u64, Relaxed);
                        }
                        continue;
                    }
                    Err(e) => {
                        self.ssd_failed(&e);
                        // We hold the segment's lock: its dirty bit is stable.
                        if lock(&self.state).dirty[s as usize] {
                            return Err(io::Error::new(
                                e.kind(),
                                format!(
                                    "segment {} holds writes not yet on the backing store, and the cache device \
                                     failed to read them: {e}",
                                    p.hdd_seg
                                ),
                            ));
                        }
                        // Clean: the HDD holds the same bytes.
                    }
                }
            }
            self.hdd.read_at(b, p.hdd_seg * self.seg + p.within).map_err(|e| self.hdd_failed(e))?;
            c.read_misses.fetch_add(1, Relaxed);
            c.hdd_read.fetch_add(p.len as u64, Relaxed);
            tally.misses += 1;
        }
        Ok(tally)
    }
}
