//! A change of write mode at run time (`ssdcache set mode=…`): leaving
//! write-back stops new dirty data, writes back what is dirty (the caller,
//! with [`CacheMap::write_back`]), then switches; entering it syncs the fills
//! a write-through map never synced, since a save may now name them.

use std::io;
use std::sync::atomic::Ordering::Relaxed;

use super::*;

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> CacheMap<S, H, M> {
    /// Leaving write-back: from now on every write goes to BACKING too
    /// (and to a cached copy), so nothing new becomes dirty; what is dirty
    /// stays dirty until written back.
    pub fn stop_dirtying(&self) {
        lock(&self.state).through = true;
    }

    /// Write-back's own rule again (a drain that failed or was stopped).
    pub fn resume_dirtying(&self) {
        lock(&self.state).through = self.mode() != WriteMode::Back || self.is_degraded();
    }

    /// Switches to `to` with every segment locked, and saves the map as the
    /// new mode saves it. Leaving write-back is refused while a slot is
    /// dirty. With `drop_all` (passthrough, whose requests bypass the map)
    /// every cached segment is dropped, so none goes stale meanwhile.
    pub fn set_mode(&self, to: WriteMode, drop_all: bool) -> io::Result<()> {
        let _admin = lock(&self.admin);
        let _all = self.locks.lock_all();
        let from = self.mode();
        {
            let st = lock(&self.state);
            if st.closed {
                return Err(closed());
            }
            let dirty = st.dirty.iter().filter(|d| **d).count();
            if from == WriteMode::Back && to != WriteMode::Back && dirty > 0 {
                return Err(io::Error::other(format!("{dirty} dirty slot(s): they must be written back first")));
            }
        }
        if to == WriteMode::Back && from != WriteMode::Back {
            // A write-through map's fills were never synced; a write-back
            // save may name them from now on.
            self.ssd.sync().inspect_err(|e| self.ssd_failed(e))?;
        }
        self.fills_on_miss.store(false, Relaxed);
        self.mode.store(to as u8, Relaxed);
        {
            let mut st = lock(&self.state);
            st.through = to != WriteMode::Back || self.is_degraded();
            if drop_all {
                st.meta.map.iter_mut().for_each(|m| *m = None);
                st.rev.clear();
            }
        }
        self.save(|_| {})
    }
}
