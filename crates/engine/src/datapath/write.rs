//! Writes in the three write modes, invalidation, and an NBD flush.

use std::io;
use std::sync::atomic::Ordering::Relaxed;

use super::*;

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> CacheMap<S, H, M> {
    /// Writes through the map: to the SSD only for a cached segment in
    /// write-back mode (dirty); to the HDD only, dropping any cached copy, in
    /// invalidate mode; to the HDD and any cached copy otherwise.
    pub fn write(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.write_filled(data, offset, &[], &[]).map(drop)
    }

    /// Invalidate mode: drops HDD segment `h` from the map now (under its
    /// lock, so after any request reading its slot), for a write about to
    /// go to the HDD. Like the write's own drop, never persisted while
    /// running. Returns whether it was cached.
    pub fn invalidate(&self, h: u64) -> bool {
        let _held = self.locks.lock([h]);
        let mut st = lock(&self.state);
        if st.closed {
            return false;
        }
        match st.rev.remove(&h) {
            Some(s) => {
                st.meta.map[s as usize] = None;
                true
            }
            None => false,
        }
    }

    /// [`write`](Self::write); pieces of the segments in `filled` (filled
    /// from the HDD for this request: a write-through cache's write miss)
    /// are counted as misses, those in `dropped` (invalidated for this
    /// write by [`invalidate`](Self::invalidate)) as write hits.
    pub fn write_filled(&self, data: &[u8], offset: u64, filled: &[u64], dropped: &[u64]) -> io::Result<Tally> {
        let mut pieces = self.pieces(offset, data.len())?;
        let invalidate = self.mode() == WriteMode::Invalidate;
        // Pieces whose segment was cached when the write arrived.
        let mut found = vec![false; pieces.len()];
        let _held = self.locks.lock(pieces.iter().map(|p| p.hdd_seg));
        let through = {
            let mut st = lock(&self.state);
            if st.closed {
                return Err(closed());
            }
            let through = st.through;
            if let Some(p) = pieces.iter().find(|p| st.rev.get(&p.hdd_seg).is_some_and(|&s| st.poisoned[s as usize])) {
                return Err(io::Error::other(format!(
                    "segment {} cannot be written: its stale cached copy could not be dropped from the saved map",
                    p.hdd_seg
                )));
            }
            for (p, found) in pieces.iter_mut().zip(&mut found) {
                let h = p.hdd_seg as usize;
                st.meta.freq[h] = st.meta.freq[h].saturating_add(INCREMENT);
                st.meta.touched[h] = true;
                p.slot = st.rev.get(&p.hdd_seg).copied();
                *found = (p.slot.is_some() && !filled.contains(&p.hdd_seg)) || dropped.contains(&p.hdd_seg);
                if let (Some(s), true) = (p.slot, invalidate) {
                    // Dropped before the write reaches the HDD, under the
                    // segment's lock: no read can see the old copy after it.
                    // Never persisted while running (see `save`), so a crash
                    // cannot bring the slot back either.
                    st.rev.remove(&p.hdd_seg);
                    st.meta.map[s as usize] = None;
                    p.slot = None;
                } else if let (Some(s), false) = (p.slot, through) {
                    st.set_dirty(s);
                }
            }
            through
        };
        let c = &self.counters;
        c.request_bytes.fetch_add(data.len() as u64, Relaxed);
        let mut tally = Tally::default();
        for (p, &found) in pieces.iter().zip(&found) {
            if found {
                tally.hits += 1;
            } else {
                tally.misses += 1;
            }
            let d = &data[p.pos..p.pos + p.len];
            let n = p.len as u64;
            if through || p.slot.is_none() {
                self.hdd.write_at(d, p.hdd_seg * self.seg + p.within).map_err(|e| self.hdd_failed(e))?;
                c.hdd_written.fetch_add(n, Relaxed);
            }
            match p.slot {
                Some(s) => {
                    if let Err(e) = self.ssd.write_at(d, s as u64 * self.seg + p.within) {
                        self.ssd_failed(&e);
                        if through {
                            // The backing store has this piece; a dirty slot's
                            // other bytes go there too, so the slot is clean
                            // (and then dropped) instead of failing the write.
                            self.merge_back(s, p.hdd_seg, d, p.within).map_err(|me| {
                                io::Error::new(
                                    e.kind(),
                                    format!("{e}; and the segment could not be written back: {me}"),
                                )
                            })?;
                        }
                        self.drop_stale_slot(s, p.hdd_seg, through, e)?;
                        continue;
                    }
                    c.ssd_written.fetch_add(n, Relaxed);
                    if !found {
                        c.write_misses.fetch_add(1, Relaxed);
                    } else if through {
                        c.write_hits.fetch_add(1, Relaxed);
                        c.write_hits_to_backing.fetch_add(1, Relaxed);
                    } else {
                        c.write_hits.fetch_add(1, Relaxed);
                        c.served_pieces.fetch_add(1, Relaxed);
                        c.served_bytes.fetch_add(n, Relaxed);
                    }
                }
                None if found => {
                    // Invalidate mode: the segment was cached and is dropped.
                    c.write_hits.fetch_add(1, Relaxed);
                    c.write_hits_to_backing.fetch_add(1, Relaxed);
                }
                None => {
                    c.write_misses.fetch_add(1, Relaxed);
                }
            }
        }
        if self.fills_on_miss() && !through && pieces.iter().filter_map(|p| p.slot).any(|s| !self.durably_mapped(s)) {
            // A slot this write dirtied that no durable save names: until one
            // does, a crash would not copy it back. The segments stay locked,
            // so no write-back cleans it first.
            self.save(|_| {})?;
        }
        Ok(tally)
    }

    /// After a failed SSD write of `piece` (at `within` of segment `h`, whose
    /// lock the caller holds) that already reached the HDD: if slot `s` is
    /// dirty, its bytes with `piece` laid over them are written to the HDD
    /// and the slot marked clean, so a degraded cache (or a procedure's
    /// double writes) serves the write instead of failing it while the slot
    /// waits for its write-back. A slot that cannot be read stays dirty.
    pub(super) fn merge_back(&self, s: u32, h: u64, piece: &[u8], within: u64) -> io::Result<()> {
        if !lock(&self.state).dirty[s as usize] {
            return Ok(());
        }
        let mut buf = vec![0u8; self.seg as usize];
        self.ssd.read_at(&mut buf, s as u64 * self.seg).inspect_err(|e| self.ssd_failed(e))?;
        buf[within as usize..within as usize + piece.len()].copy_from_slice(piece);
        self.hdd.write_at(&buf, h * self.seg).map_err(|e| self.hdd_failed(e))?;
        lock(&self.state).set_clean(s);
        self.counters.written_back.fetch_add(1, Relaxed);
        Ok(())
    }

    /// After a failed SSD write to slot `s` (caching `h`, whose lock the
    /// caller holds): if the write went to the HDD too and the slot is clean,
    /// the HDD is right and the slot stale, so the slot is unmapped and the
    /// map saved before the write is acknowledged; otherwise the write fails.
    pub(super) fn drop_stale_slot(&self, s: u32, h: u64, through: bool, e: io::Error) -> io::Result<()> {
        if !through || lock(&self.state).dirty[s as usize] {
            return Err(e);
        }
        // Saved first, unmapped in memory after: until the save is durable a
        // crash would copy the stale slot back, so nothing may be
        // acknowledged on the HDD alone. The HDD is synced before: the slot
        // may be clean by a write-back (cleaner, flush) not yet synced, and
        // once unmapped no unclean start copies it back.
        let saved =
            self.hdd.sync().map_err(|e| self.hdd_failed(e)).and_then(|()| self.save(|m| m.map[s as usize] = None));
        let mut st = lock(&self.state);
        match saved {
            Ok(()) => {
                st.rev.remove(&h);
                log::warn!("slot {s} (segment {h}) dropped from the cache after a failed write to it");
                Ok(())
            }
            Err(se) => {
                st.meta.map[s as usize] = Some(h);
                st.poisoned[s as usize] = true;
                Err(io::Error::new(e.kind(), format!("{e}; and the map could not be saved: {se}")))
            }
        }
    }

    /// Makes every returned write durable (an NBD flush). Every write that
    /// returned has reached both devices' files, so syncing both covers it.
    pub fn flush(&self) -> io::Result<()> {
        self.ssd.sync()?;
        self.hdd.sync()
    }
}
