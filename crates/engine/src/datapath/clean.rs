//! Write-back: one slot at a time (the cleaner's `clean_one`), every dirty slot
//! (`ssdcache flush`), and the backing device's sync after a batch.

use std::io;
use std::sync::atomic::Ordering::Relaxed;

use super::*;

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> CacheMap<S, H, M> {
    /// The dirty slots and the segments they cache.
    pub(super) fn dirty_slots(&self) -> io::Result<Vec<(u32, u64)>> {
        let st = lock(&self.state);
        if st.closed {
            return Err(closed());
        }
        let slots = st.dirty.iter().enumerate().filter(|(_, d)| **d);
        Ok(slots.map(|(s, _)| (s as u32, st.meta.map[s].expect("a dirty slot caches a segment"))).collect())
    }

    /// Copies dirty slot `s` to HDD segment `h`; the caller holds `h`.
    pub(super) fn write_back_slot(&self, s: u32, h: u64, buf: &mut [u8]) -> io::Result<()> {
        self.ssd.read_at(buf, s as u64 * self.seg).inspect_err(|e| self.ssd_failed(e))?;
        self.hdd.write_at(buf, h * self.seg).map_err(|e| self.hdd_failed(e))?;
        // Only now, with the bytes on the backing device (a crash before its
        // sync loses nothing: dirty state is never saved, see the module doc).
        lock(&self.state).set_clean(s);
        self.counters.written_back.fetch_add(1, Relaxed);
        Ok(())
    }

    /// Sets the watch told of every dirty-state change, first told of the
    /// slots dirty now.
    pub fn set_watch(&self, mut w: Box<dyn DirtyWatch>) {
        let mut st = lock(&self.state);
        for (s, _) in st.dirty.iter().enumerate().filter(|(_, d)| **d) {
            w.dirtied(s as u32);
        }
        st.watch = Some(w);
    }

    /// Runs `f` on the watch (downcast to `W`) under the map's mutex;
    /// `None` without a watch of that type.
    pub fn with_watch<W: DirtyWatch, T>(&self, f: impl FnOnce(&mut W) -> T) -> Option<T> {
        let mut st = lock(&self.state);
        let w: &mut dyn Any = st.watch.as_deref_mut()?;
        w.downcast_mut::<W>().map(f)
    }

    /// The background cleaner's step: `pick` (run on the watch under the
    /// map's mutex) names a dirty slot, which is written back under its
    /// segment's lock by the procedure's own code ([`write_back_if_still`]
    /// (Self::write_back_if_still)). Not under the admin mutex: fills,
    /// evictions and procedures go on meanwhile instead of waiting for a
    /// write to the slow backing device. A failed write-back leaves the slot
    /// dirty. Not synced: see [`sync_backing`](Self::sync_backing).
    pub fn clean_one<W: DirtyWatch>(
        &self,
        pick: impl FnOnce(&mut W) -> Option<u32>,
        buf: &mut [u8],
    ) -> io::Result<CleanOne> {
        if self.is_degraded() {
            return Ok(CleanOne::Stopped);
        }
        let (slot, h) = {
            let mut st = lock(&self.state);
            if st.closed {
                return Ok(CleanOne::Stopped);
            }
            let w: Option<&mut dyn Any> = st.watch.as_deref_mut().map(|w| w as &mut dyn Any);
            let Some(slot) = w.and_then(|w| w.downcast_mut::<W>()).and_then(pick) else {
                return Ok(CleanOne::Nothing);
            };
            if !st.dirty[slot as usize] {
                // Cannot happen (the watch hears of every change); heal it.
                log::warn!("cleaner picked slot {slot}, which is clean");
                if let Some(w) = &mut st.watch {
                    w.cleaned(slot);
                }
                return Ok(CleanOne::Nothing);
            }
            (slot, st.meta.map[slot as usize].expect("a dirty slot caches a segment"))
        };
        match self.write_back_if_still(slot, h, buf) {
            Ok(true) => Ok(CleanOne::Cleaned { slot, segment: h }),
            Ok(false) => Ok(CleanOne::Moved),
            Err(_) if lock(&self.state).closed => Ok(CleanOne::Stopped),
            Err(e) => Err(e),
        }
    }

    /// Writes slot `s` back if, once segment `h`'s lock is held, the slot
    /// still caches `h` and is dirty (between a look at the map and that
    /// lock, a fill or an eviction may have moved it; its own write-back
    /// then did the work). Every slot move locks the segment it moves out,
    /// and every write-back the segment it writes, so while `h` is held the
    /// slot neither moves nor changes. Returns whether it wrote.
    pub(super) fn write_back_if_still(&self, s: u32, h: u64, buf: &mut [u8]) -> io::Result<bool> {
        let _held = self.locks.lock([h]);
        {
            let st = lock(&self.state);
            if st.closed {
                return Err(closed());
            }
            if st.meta.map[s as usize] != Some(h) || !st.dirty[s as usize] {
                return Ok(false);
            }
        }
        self.write_back_slot(s, h, buf)?;
        Ok(true)
    }

    /// Syncs the backing device (after a batch of [`clean_one`](Self::clean_one)).
    pub fn sync_backing(&self) -> io::Result<()> {
        self.hdd.sync().map_err(|e| self.hdd_failed(e))
    }

    /// Copies every dirty slot to its HDD segment (under that segment's
    /// lock) and syncs both devices. Writes arriving meanwhile may dirty
    /// slots again unless writes go through.
    pub(super) fn write_back_dirty(&self) -> io::Result<()> {
        let mut buf = vec![0u8; self.seg as usize];
        for (s, h) in self.dirty_slots()? {
            // A discard may have dropped the slot meanwhile (not an admin
            // operation): its data must then not reach BACKING.
            self.write_back_if_still(s, h, &mut buf)?;
        }
        self.ssd.sync()?;
        self.hdd.sync()
    }

    /// Writes every dirty slot back now (`ssdcache flush`) and syncs both
    /// devices; requests go on (and may dirty slots again). Its progress is
    /// in [`status`](Self::status) while it runs; [`stop_write_back`]
    /// (Self::stop_write_back) ends it at the next slot, synced.
    ///
    /// Not under the admin mutex (like the cleaner's [`clean_one`]
    /// (Self::clean_one)): misses still fill, and evict, while it runs.
    /// One flush at a time (its own mutex).
    pub fn write_back(&self) -> io::Result<FlushProgress> {
        let _one = lock(&self.flush_one);
        self.flush_stop.store(false, Relaxed);
        let todo = self.dirty_slots()?;
        let mut p = FlushProgress { total: todo.len() as u64, ..Default::default() };
        *lock(&self.flush) = Some(p);
        self.flushing.store(true, Relaxed);
        let mut buf = vec![0u8; self.seg as usize];
        let copy = || -> io::Result<()> {
            for (s, h) in todo {
                if self.flush_stop.load(Relaxed) {
                    p.interrupted = true;
                    log::warn!("flush stopped on request after {} of {} segment(s)", p.written_back, p.total);
                    break;
                }
                // A slot the cleaner or an eviction wrote back meanwhile
                // counts as done.
                self.write_back_if_still(s, h, &mut buf)?;
                p.written_back += 1;
                *lock(&self.flush) = Some(p);
            }
            Ok(())
        };
        let r = copy().and_then(|()| self.ssd.sync()).and_then(|()| self.hdd.sync());
        self.flushing.store(false, Relaxed);
        *lock(&self.flush) = Some(p);
        r.map(|()| p)
    }

    /// Asks a running [`write_back`](Self::write_back) to stop at its next
    /// slot; returns whether one was running.
    pub fn stop_write_back(&self) -> bool {
        self.flush_stop.store(true, Relaxed);
        self.flushing.load(Relaxed)
    }
}
