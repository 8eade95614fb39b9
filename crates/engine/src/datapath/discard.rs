//! Trims and zeroes that reach the backing device (`serve --trim pass`),
//! and what they do to the cached segments they cover.
//!
//! A range is split into whole segments and at most two partial pieces:
//! - **Whole segments**, in batches, holding their locks: the backing
//!   device's range is discarded or zeroed first (a hole, a zeroed range,
//!   zeroes written, as [`Discard`] says), then every cached segment of the
//!   batch is dropped from the map, clean or dirty — a dirty one is never
//!   written back: its data was discarded. If a dropped slot is named by the
//!   durable map, BACKING is synced and the map saved before the request
//!   returns. What a crash may find: before that save, the durable map
//!   still names the slots, and an unclean start copies them back over the
//!   range (its contents as before the request, whole segments: allowed for
//!   a request not acknowledged); after it, nothing names them and BACKING
//!   holds the zeroes durably. A failed save puts the slots back and
//!   poisons them (reads from BACKING, writes fail) until a later save
//!   unmaps them, as after a failed cache-device write. A trim the backing
//!   device cannot do (no hole punching) changes nothing: the cached copies
//!   stay, so no read ever finds data older than the last write.
//! - **A partial piece** of a cached segment is written as zeroes through
//!   the map (as a write: to the cached copy, dirty in write-back), so the
//!   slot stays consistent with the rest of its segment; of an uncached
//!   segment, the backing device's range is discarded or zeroed under the
//!   segment's lock (no fill copies it meanwhile).
//!
//! So after a trim on a device that punches holes, and after any zeroes,
//! the range reads as zeroes; a trim elsewhere leaves it as it was.

use std::io;
use std::sync::atomic::Ordering::Relaxed;

use super::*;
use crate::device::check_len;

/// What a discard does to the backing device's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discard {
    /// A trim: the backing device discards the range ([`BlockDevice::discard`]);
    /// where it cannot, nothing changes (a trim is a hint).
    Trim,
    /// Zeroes: a hole if `punch` and the device can, else a zeroed range,
    /// else zeroes written.
    Zero { punch: bool },
    /// Zeroes only if fast (a hole if `punch`, or a zeroed range), else an
    /// `EOPNOTSUPP` error (`NBD_CMD_FLAG_FAST_ZERO`).
    FastZero { punch: bool },
}

/// Whole segments handled under one set of locks (and at most one save).
const BATCH: u64 = 4096;

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> CacheMap<S, H, M> {
    /// Discards or zeroes `offset..offset+len` on the backing device and
    /// drops the cached segments it covers wholly (see the module doc). The
    /// tally counts cached segments (dropped or zeroed) as hits, the rest as
    /// misses.
    pub fn discard(&self, offset: u64, len: u64, how: Discard) -> io::Result<Tally> {
        check_len(self.len(), offset, len)?;
        let (seg, end) = (self.seg, offset + len);
        let (first, last) = (offset.div_ceil(seg), end / seg);
        if first >= last {
            return self.discard_partial(offset, end, how);
        }
        let mut tally = self.discard_partial(offset, first * seg, how)?;
        let mut h = first;
        while h < last {
            let n = (last - h).min(BATCH);
            tally = tally + self.discard_segments(h, h + n, how)?;
            h += n;
        }
        Ok(tally + self.discard_partial(last * seg, end, how)?)
    }

    /// Pieces of segments (`from..to` covers no segment wholly).
    fn discard_partial(&self, from: u64, to: u64, how: Discard) -> io::Result<Tally> {
        let mut tally = Tally::default();
        let mut at = from;
        while at < to {
            let h = at / self.seg;
            let stop = ((h + 1) * self.seg).min(to);
            let held = self.locks.lock([h]);
            let cached = self.cached_now(h)?;
            if cached {
                drop(held); // the write takes it again
                let zeroes = vec![0u8; (stop - at) as usize];
                tally = tally + self.write_filled(&zeroes, at, &[], &[])?;
            } else {
                self.zero_backing(at, stop - at, how)?;
                tally.misses += 1;
            }
            at = stop;
        }
        Ok(tally)
    }

    /// Whole segments `first..last`.
    fn discard_segments(&self, first: u64, last: u64, how: Discard) -> io::Result<Tally> {
        let seg = self.seg;
        let _held = self.locks.lock(first..last);
        if lock(&self.state).closed {
            return Err(closed());
        }
        if !self.zero_backing(first * seg, (last - first) * seg, how)? {
            return Ok(Tally { hits: 0, misses: (last - first) as u32 });
        }
        let dropped: Vec<(u32, u64)> = {
            let mut st = lock(&self.state);
            let found: Vec<(u32, u64)> = (first..last).filter_map(|h| st.rev.get(&h).map(|&s| (s, h))).collect();
            for &(s, h) in &found {
                st.rev.remove(&h);
                st.meta.map[s as usize] = None;
                st.set_clean(s); // discarded, never written back
                st.poisoned[s as usize] = false;
            }
            found
        };
        self.counters.trim_dropped_segments.fetch_add(dropped.len() as u64, Relaxed);
        let tally = Tally { hits: dropped.len() as u32, misses: (last - first) as u32 - dropped.len() as u32 };
        if dropped.iter().any(|&(s, _)| self.durably_mapped(s)) {
            // BACKING's zeroes durable first: once the save forgets the
            // slots, no unclean start copies them back, so nothing else
            // would bring the old bytes back either.
            let saved = self.hdd.sync().map_err(|e| self.hdd_failed(e)).and_then(|()| self.save(|_| {}));
            if let Err(e) = saved {
                let mut st = lock(&self.state);
                for &(s, h) in &dropped {
                    // Still durably mapped, and stale: BACKING is right.
                    st.meta.map[s as usize] = Some(h);
                    st.rev.insert(h, s);
                    st.poisoned[s as usize] = true;
                }
                return Err(io::Error::new(e.kind(), format!("the map could not be saved after a discard: {e}")));
            }
        }
        Ok(tally)
    }

    /// Discards or zeroes `at..at+n` of the backing device; `Ok(false)` for
    /// a trim it cannot do (nothing changed).
    fn zero_backing(&self, at: u64, n: u64, how: Discard) -> io::Result<bool> {
        let hdd = &self.hdd;
        let failed = |e| self.hdd_failed(e);
        let done = match how {
            Discard::Trim => {
                let done = hdd.discard(at, n).map_err(failed)?;
                if done {
                    self.counters.trimmed_bytes.fetch_add(n, Relaxed);
                }
                return Ok(done);
            }
            Discard::Zero { punch } | Discard::FastZero { punch } => {
                (punch && hdd.punch_hole(at, n).map_err(failed)?) || hdd.zero_range(at, n).map_err(failed)?
            }
        };
        if !done {
            if let Discard::FastZero { .. } = how {
                return Err(ssdcache_block::not_fast());
            }
            self.write_zero_buffers(at, n)?;
        } else {
            self.counters.zeroed_bytes.fetch_add(n, Relaxed);
        }
        Ok(true)
    }

    /// Zeroes written to the backing device, 1 MiB at a time.
    fn write_zero_buffers(&self, at: u64, n: u64) -> io::Result<()> {
        let zeroes = vec![0u8; n.min(1 << 20) as usize];
        let mut done = 0;
        while done < n {
            let k = (n - done).min(zeroes.len() as u64);
            self.hdd.write_at(&zeroes[..k as usize], at + done).map_err(|e| self.hdd_failed(e))?;
            done += k;
        }
        self.counters.hdd_written.fetch_add(n, Relaxed);
        Ok(())
    }
}
