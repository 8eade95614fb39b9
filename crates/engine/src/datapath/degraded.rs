//! Device failures: counting cache-device errors, going degraded, and settling
//! a degraded cache (every dirty slot written back, an empty map saved).

use std::io;
use std::sync::atomic::Ordering::Relaxed;

use super::*;

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> CacheMap<S, H, M> {
    /// Counts a cache-device error; enough of them (or a device that
    /// shrank) make the cache degraded.
    pub(super) fn ssd_failed(&self, e: &io::Error) {
        let n = self.counters.ssd_errors.fetch_add(1, Relaxed) + 1;
        let shrunk = e.to_string().contains("shrank");
        log::error!("cache device error #{n}: {e}");
        if (shrunk || n >= self.error_limit.load(Relaxed)) && !self.degraded.swap(true, Relaxed) {
            log::error!("the cache is now DEGRADED: writes go to the backing store, nothing new is cached");
            let mut st = lock(&self.state);
            st.through = true;
            st.meta.degraded = true;
        }
    }

    /// Counts a backing-device error and passes it on.
    pub(super) fn hdd_failed(&self, e: io::Error) -> io::Error {
        let n = self.counters.hdd_errors.fetch_add(1, Relaxed) + 1;
        log::error!("backing device error #{n}: {e}");
        e
    }

    /// Whether the cache is degraded.
    pub fn is_degraded(&self) -> bool {
        self.degraded.load(Relaxed)
    }

    /// Cache-device errors before the cache goes degraded (at least 1).
    pub fn set_error_limit(&self, n: u64) {
        self.error_limit.store(n.max(1), Relaxed);
    }

    /// Whether a degraded cache still maps slots (dirty or not): the engine
    /// calls [`settle_degraded`](Self::settle_degraded) until it does not.
    pub fn needs_settling(&self) -> bool {
        self.is_degraded() && !lock(&self.state).rev.is_empty()
    }

    /// A degraded cache's clean-up: every dirty slot written back, then
    /// (once none is left) the map emptied and saved with the degraded bit.
    /// Returns how many dirty slots remain (retry later).
    pub fn settle_degraded(&self) -> io::Result<usize> {
        let _admin = lock(&self.admin);
        let failed = self.write_back_each(false)?;
        self.ssd.sync().inspect_err(|e| self.ssd_failed(e))?;
        self.hdd.sync().map_err(|e| self.hdd_failed(e))?;
        if !failed.is_empty() {
            return Ok(failed.len());
        }
        // Unmap every clean slot: writes go through and no dirty slot is
        // left, so the HDD holds everything. The empty map is saved first
        // and only then are requests sent to the HDD alone (the in-memory
        // reverse map keeps writes going to both devices until then).
        let clean: Vec<(u32, u64)> = {
            let st = lock(&self.state);
            st.rev.iter().map(|(&h, &s)| (s, h)).filter(|&(s, _)| !st.dirty[s as usize]).collect()
        };
        let saved = self.save(|m| {
            m.degraded = true;
            clean.iter().for_each(|&(s, _)| m.map[s as usize] = None);
        });
        {
            let mut st = lock(&self.state);
            for &(s, h) in &clean {
                if saved.is_ok() {
                    st.rev.remove(&h);
                    st.poisoned[s as usize] = false;
                } else if st.rev.get(&h) == Some(&s) {
                    // Still cached (a read-only cache's write may have
                    // dropped it meanwhile: that must stay dropped).
                    st.meta.map[s as usize] = Some(h);
                }
            }
        }
        saved?;
        let left = lock(&self.state).dirty.iter().filter(|d| **d).count();
        log::warn!("degraded cache settled: nothing cached, {left} dirty slot(s) left");
        Ok(left)
    }
}
