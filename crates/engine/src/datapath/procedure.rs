//! Paper 000's caching-and-eviction procedure (Fig. 5 lines 4–26), one slot
//! refilled at once (`replace`) or emptied (`evict`), and PWC's frequencies.

use std::io;
use std::sync::atomic::Ordering::Relaxed;

use super::*;

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> CacheMap<S, H, M> {
    /// Replaces the frequency table (and the touched bits) the next save
    /// persists: the engine keeps its policy's there (PWC's, counting reads
    /// and decayed at each procedure) instead of the map's own count of
    /// writes. `freq(h)` is `None` for a segment never referenced.
    pub fn set_frequencies(&self, freq: impl Fn(u64) -> Option<u16>) {
        let mut st = lock(&self.state);
        let m = &mut st.meta;
        for (h, (f, t)) in m.freq.iter_mut().zip(m.touched.iter_mut()).enumerate() {
            let v = freq(h as u64);
            *t = v.is_some();
            *f = v.unwrap_or(0);
        }
    }

    /// Evicts whatever `slot` holds and caches HDD segment `h` there: the
    /// slot's segment (written back first if dirty) and `h` are locked, the
    /// map updated, `h` copied in. The map is not saved (a write-through map
    /// never saves it while running; the procedure saves around its moves),
    /// except in a map that fills on misses, whose rules
    /// ([`set_fills_on_miss`](Self::set_fills_on_miss)) this keeps.
    pub(super) fn move_slot(&self, slot: u32, h: u64, buf: &mut [u8]) -> io::Result<()> {
        let fills = self.fills_on_miss();
        let old = lock(&self.state).meta.map[slot as usize];
        let _held = self.locks.lock(old.into_iter().chain([h]));
        let seg = self.seg;
        if let Some(old) = old {
            if lock(&self.state).dirty[slot as usize] {
                self.write_back_slot(slot, old, buf)?;
                self.hdd.sync().map_err(|e| self.hdd_failed(e))?;
            }
        }
        {
            let mut st = lock(&self.state);
            assert!(!st.rev.contains_key(&h), "segment {h} is already cached");
            if let Some(old) = st.meta.map[slot as usize].take() {
                st.rev.remove(&old); // lines 13–16
            }
        }
        if fills && self.durably_mapped(slot) {
            // Unmapped in memory above, so the save leaves the slot out:
            // after it no crash copies the slot back over its old segment.
            self.save(|_| {})?;
        }
        // Line 20 (errors counted per device).
        self.hdd.read_at(buf, h * seg).map_err(|e| self.hdd_failed(e))?;
        self.ssd.write_at(buf, slot as u64 * seg).inspect_err(|e| self.ssd_failed(e))?;
        if fills {
            // Durable before a write may dirty it and a save name it.
            self.ssd.sync().inspect_err(|e| self.ssd_failed(e))?;
        }
        let mut st = lock(&self.state);
        st.meta.map[slot as usize] = Some(h); // line 18
        st.rev.insert(h, slot); // line 21
        st.poisoned[slot as usize] = false; // refilled from the HDD
        self.counters.filled.fetch_add(1, Relaxed);
        Ok(())
    }

    /// A fill on a miss (write-through, write-around, read-only, and
    /// write-back with a replacement policy): segment `h` into `slot` now
    /// (evicting what it holds). Panics if `h` is cached already.
    pub fn replace(&self, slot: u32, h: u64) -> io::Result<()> {
        let _admin = lock(&self.admin);
        if lock(&self.state).closed {
            return Err(closed());
        }
        if self.is_degraded() {
            return Err(io::Error::other("the cache is degraded: nothing new is cached"));
        }
        let mut buf = vec![0u8; self.seg as usize];
        self.move_slot(slot, h, &mut buf)
    }

    /// Write-back with a replacement policy: the policy evicted segment `h`.
    /// Its slot is written back if dirty (and BACKING synced), unmapped, and,
    /// if the durable map names it, the map saved, so that the slot may take
    /// another segment. Returns whether `h` was cached. On an error the slot
    /// stays as it was (dirty data is never dropped).
    pub fn evict(&self, h: u64) -> io::Result<bool> {
        let _admin = lock(&self.admin);
        let _held = self.locks.lock([h]);
        let (slot, dirty) = {
            let st = lock(&self.state);
            if st.closed {
                return Err(closed());
            }
            match st.rev.get(&h) {
                Some(&s) => (s, st.dirty[s as usize]),
                None => return Ok(false),
            }
        };
        if dirty {
            let mut buf = vec![0u8; self.seg as usize];
            self.write_back_slot(slot, h, &mut buf)?;
            self.hdd.sync().map_err(|e| self.hdd_failed(e))?;
            self.counters.dirty_evictions.fetch_add(1, Relaxed);
        }
        {
            let mut st = lock(&self.state);
            st.rev.remove(&h);
            st.meta.map[slot as usize] = None;
        }
        if self.durably_mapped(slot) {
            self.save(|_| {})?;
        }
        Ok(true)
    }

    /// Fig. 5 lines 4–26 for `plan`: each `(slot, hdd_segment)` evicts what
    /// the slot holds and caches the segment there. Requests go on meanwhile,
    /// writing through to both devices. Panics if a planned segment is
    /// already cached or a slot is out of range.
    pub fn caching_and_eviction(&self, plan: &[(u32, u64)]) -> io::Result<()> {
        let _admin = lock(&self.admin);
        if self.is_degraded() {
            return Err(io::Error::other("the cache is degraded: nothing new is cached"));
        }
        {
            let mut st = lock(&self.state);
            if st.closed {
                return Err(closed());
            }
            st.through = true; // §3.6: double writes from now on
        }
        self.in_procedure.store(true, Relaxed);
        let r = self.procedure(plan);
        self.in_procedure.store(false, Relaxed);
        if r.is_err() && !lock(&self.saves).saved.update {
            // Failed before the update bit was saved (its write-back, say, on
            // a BACKING that refuses writes): nothing moved, so writes may
            // stay on the cache. Once that bit is saved they must not, since
            // a start after a crash then trusts BACKING to hold every write.
            lock(&self.state).through = self.mode() != WriteMode::Back || self.is_degraded();
        }
        r
    }

    pub(super) fn procedure(&self, plan: &[(u32, u64)]) -> io::Result<()> {
        self.write_back_dirty()?; // line 4
        self.save(|m| m.update = true)?; // line 5
        let mut buf = vec![0u8; self.seg as usize];
        for &(slot, h) in plan {
            if self.interrupted.load(Relaxed) {
                // A stop was asked for: the moves done so far are complete, so
                // ending here (synced and saved below) is a consistent state.
                log::warn!("caching and eviction interrupted by a stop request");
                break;
            }
            self.move_slot(slot, h, &mut buf)?; // lines 12–23
            lock(&self.state).meta.evict_hand = slot;
        }
        // The copies must be durable before a save says they are there.
        self.ssd.sync()?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.save(|m| {
            m.update = false; // line 26
            m.procedures += 1;
            m.last_procedure = now.min(u32::MAX as u64) as u32;
        })?;
        lock(&self.state).through = self.mode() != WriteMode::Back || self.is_degraded();
        Ok(())
    }

    /// Writes every dirty slot back that can be; returns the `(slot,
    /// segment)`s that could not be (they stay dirty). Holds each segment's
    /// lock unless `all_locked` (the caller holds every lock).
    pub(super) fn write_back_each(&self, all_locked: bool) -> io::Result<Vec<(u32, u64)>> {
        let mut buf = vec![0u8; self.seg as usize];
        let mut failed = Vec::new();
        for (s, h) in self.dirty_slots()? {
            // Unless every segment is held, a discard may drop the slot
            // before its lock is taken: then it is not written back.
            let r = if all_locked {
                self.write_back_slot(s, h, &mut buf)
            } else {
                self.write_back_if_still(s, h, &mut buf).map(drop)
            };
            if let Err(e) = r {
                log::error!("write-back of slot {s} (segment {h}) failed, it stays dirty: {e}");
                failed.push((s, h));
            }
        }
        Ok(failed)
    }
}
