//! Fault injection: in-memory [`BlockDevice`]s that lose power.
//!
//! Devices share a [`PowerDomain`] (a power supply): the SSD and the HDD of a
//! cache lose power at the same instant. The domain numbers every write of
//! every one of its devices from 0 (a *write point*). Each device keeps its
//! *durable* image and the list of writes made since its last `sync`;
//! reads see those writes.
//!
//! [`PowerDomain::schedule_power_cut`]`(k)` makes write `k` the one in flight
//! when the power goes: that write returns an error, as does every later
//! read, write or sync, until [`PowerDomain::restore_power`] resolves the cut:
//! - every write not yet synced is dropped ([`CutMode::DropUnsynced`]), or,
//!   with [`CutMode::Reorder`], each of its sectors independently persists or
//!   not (a drive with a volatile write cache may persist any subset of them,
//!   in any order);
//! - the write in flight is torn: each of its [`SECTOR`]-byte sectors
//!   (aligned on the device) independently persists or not;
//!
//! all choices drawn deterministically from the domain's seed and the cut
//! point, so a failing cut point replays exactly. A cut can also be made at
//! once with [`PowerDomain::power_cut`].

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::device::{check_range, BlockDevice};

/// The unit a torn write is torn at: a sector either holds the old bytes or
/// the new ones, never a mix (what drives guarantee for 512-byte sectors).
pub const SECTOR: u64 = 512;

/// What happens to writes that were issued but not synced at a power cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutMode {
    /// They are all lost (only the one in flight is torn).
    DropUnsynced,
    /// Each of their sectors persists with probability 1/2.
    Reorder,
}

#[derive(Debug)]
struct Pending {
    offset: u64,
    data: Vec<u8>,
}

#[derive(Debug)]
struct DevState {
    durable: Vec<u8>,
    current: Vec<u8>,
    pending: Vec<Pending>,
}

#[derive(Debug)]
struct Inner {
    devices: Vec<DevState>,
    writes: u64,
    syncs: u64,
    cut_at: Option<u64>,
    /// Power is off: (device, write) in flight, if any.
    off: Option<Option<(usize, Pending)>>,
    seed: u64,
    mode: CutMode,
    cuts: u64,
}

/// A power supply shared by the [`FaultyDevice`]s attached to it.
#[derive(Debug)]
pub struct PowerDomain {
    inner: Mutex<Inner>,
}

/// A device of a [`PowerDomain`]; cheap to clone (a handle).
#[derive(Clone, Debug)]
pub struct FaultyDevice {
    domain: Arc<PowerDomain>,
    idx: usize,
    len: u64,
}

/// splitmix64: small, deterministic, no dependency.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn power_off() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "power cut (fault injection)")
}

/// Applies the sectors of `w` that `rng` keeps to `image`.
fn apply_torn(image: &mut [u8], w: &Pending, rng: &mut u64) {
    let end = w.offset + w.data.len() as u64;
    let mut s = w.offset;
    while s < end {
        let e = ((s / SECTOR + 1) * SECTOR).min(end);
        *rng = mix(*rng);
        if *rng & 1 == 1 {
            let src = &w.data[(s - w.offset) as usize..(e - w.offset) as usize];
            image[s as usize..e as usize].copy_from_slice(src);
        }
        s = e;
    }
}

impl PowerDomain {
    /// A domain with no devices; `seed` drives every tearing choice.
    pub fn new(seed: u64, mode: CutMode) -> Arc<Self> {
        Arc::new(PowerDomain {
            inner: Mutex::new(Inner {
                devices: Vec::new(),
                writes: 0,
                syncs: 0,
                cut_at: None,
                off: None,
                seed,
                mode,
                cuts: 0,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Attaches a device whose durable contents are `image`.
    pub fn attach(self: &Arc<Self>, image: Vec<u8>) -> FaultyDevice {
        let mut g = self.lock();
        let len = image.len() as u64;
        g.devices.push(DevState { current: image.clone(), durable: image, pending: Vec::new() });
        FaultyDevice { domain: Arc::clone(self), idx: g.devices.len() - 1, len }
    }

    /// Writes issued so far (the next write's index).
    pub fn writes(&self) -> u64 {
        self.lock().writes
    }

    /// Syncs issued so far.
    pub fn syncs(&self) -> u64 {
        self.lock().syncs
    }

    /// Whether the power is off (a scheduled cut has happened).
    pub fn is_off(&self) -> bool {
        self.lock().off.is_some()
    }

    /// Cuts the power when write number `at_write_index` is issued (that
    /// write is torn); `None` cancels.
    pub fn schedule_power_cut(&self, at_write_index: Option<u64>) {
        self.lock().cut_at = at_write_index;
    }

    /// Cuts the power now, with no write in flight, and restores it.
    pub fn power_cut(&self) {
        let mut g = self.lock();
        if g.off.is_none() {
            g.off = Some(None);
        }
        drop(g);
        self.restore_power();
    }

    /// Resolves a cut (see the module doc) and turns the power back on: each
    /// device's contents become what survived. Does nothing if the power is on.
    pub fn restore_power(&self) {
        let mut g = self.lock();
        let Some(in_flight) = g.off.take() else { return };
        g.cuts += 1;
        let mut rng = mix(g.seed ^ mix(g.writes) ^ mix(g.cuts.wrapping_mul(31)));
        let mode = g.mode;
        for d in &mut g.devices {
            let pending = std::mem::take(&mut d.pending);
            if mode == CutMode::Reorder {
                for w in &pending {
                    apply_torn(&mut d.durable, w, &mut rng);
                }
            }
        }
        if let Some((idx, w)) = in_flight {
            apply_torn(&mut g.devices[idx].durable, &w, &mut rng);
        }
        for d in &mut g.devices {
            d.current.clone_from(&d.durable);
        }
        g.cut_at = None;
    }

    /// The durable contents of device `idx` (what would survive a cut now if
    /// unsynced writes were dropped).
    pub fn durable_image(&self, dev: &FaultyDevice) -> Vec<u8> {
        self.lock().devices[dev.idx].durable.clone()
    }
}

impl FaultyDevice {
    /// The domain this device belongs to.
    pub fn domain(&self) -> &Arc<PowerDomain> {
        &self.domain
    }

    /// The current (volatile) contents.
    pub fn contents(&self) -> Vec<u8> {
        self.domain.lock().devices[self.idx].current.clone()
    }
}

impl BlockDevice for FaultyDevice {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let g = self.domain.lock();
        if g.off.is_some() {
            return Err(power_off());
        }
        check_range(self.len, offset, buf.len())?;
        let cur = &g.devices[self.idx].current;
        buf.copy_from_slice(&cur[offset as usize..offset as usize + buf.len()]);
        Ok(())
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        let mut g = self.domain.lock();
        if g.off.is_some() {
            return Err(power_off());
        }
        check_range(self.len, offset, data.len())?;
        let index = g.writes;
        g.writes += 1;
        let w = Pending { offset, data: data.to_vec() };
        if g.cut_at == Some(index) {
            g.off = Some(Some((self.idx, w)));
            return Err(power_off());
        }
        let d = &mut g.devices[self.idx];
        d.current[offset as usize..offset as usize + data.len()].copy_from_slice(data);
        d.pending.push(w);
        Ok(())
    }

    /// A write of zeroes as far as power cuts go: a write point, lost or
    /// torn at a cut unless synced.
    fn punch_hole(&self, offset: u64, len: u64) -> io::Result<bool> {
        crate::device::check_len(self.len, offset, len)?;
        self.write_at(&vec![0u8; len as usize], offset)?;
        Ok(true)
    }

    fn zero_range(&self, offset: u64, len: u64) -> io::Result<bool> {
        self.punch_hole(offset, len)
    }

    fn sync(&self) -> io::Result<()> {
        let mut g = self.domain.lock();
        if g.off.is_some() {
            return Err(power_off());
        }
        g.syncs += 1;
        let d = &mut g.devices[self.idx];
        for w in std::mem::take(&mut d.pending) {
            d.durable[w.offset as usize..w.offset as usize + w.data.len()].copy_from_slice(&w.data);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sectors(img: &[u8]) -> Vec<u8> {
        img.chunks(SECTOR as usize).map(|c| c[0]).collect()
    }

    #[test]
    fn synced_writes_survive_unsynced_are_dropped() {
        let dom = PowerDomain::new(1, CutMode::DropUnsynced);
        let a = dom.attach(vec![0; 4096]);
        let b = dom.attach(vec![0; 4096]);
        a.write_at(&[1; 512], 0).unwrap();
        a.sync().unwrap();
        a.write_at(&[2; 512], 512).unwrap();
        b.write_at(&[3; 512], 0).unwrap();
        let mut buf = [0u8; 512];
        a.read_at(&mut buf, 512).unwrap();
        assert_eq!(buf, [2; 512], "reads see unsynced writes");
        dom.power_cut();
        assert_eq!(sectors(&a.contents())[..2], [1, 0]);
        assert_eq!(sectors(&b.contents())[0], 0);
        assert_eq!(dom.writes(), 3);
    }

    #[test]
    fn scheduled_cut_tears_in_flight_write_per_sector_deterministically() {
        let run = |seed| {
            let dom = PowerDomain::new(seed, CutMode::DropUnsynced);
            let a = dom.attach(vec![0; 64 * 512]);
            a.write_at(&[9; 512], 0).unwrap();
            dom.schedule_power_cut(Some(1));
            assert!(a.write_at(&[7; 64 * 512], 0).is_err());
            assert!(dom.is_off());
            assert!(a.sync().is_err());
            let mut b = [0u8; 1];
            assert!(a.read_at(&mut b, 0).is_err());
            dom.restore_power();
            sectors(&a.contents())
        };
        let s = run(5);
        assert_eq!(s, run(5), "same seed, same tear");
        assert!(s.iter().all(|&x| x == 0 || x == 7));
        assert!(s.contains(&0) && s.contains(&7), "64 sectors: some persist, some not: {s:?}");
        assert_ne!(s, run(6));
    }

    #[test]
    fn reorder_mode_persists_some_unsynced_sectors() {
        let dom = PowerDomain::new(3, CutMode::Reorder);
        let a = dom.attach(vec![0; 64 * 512]);
        a.write_at(&[4; 64 * 512], 0).unwrap();
        dom.power_cut();
        let s = sectors(&a.contents());
        assert!(s.contains(&0) && s.contains(&4));
        // After the cut the device works again.
        a.write_at(&[5; 512], 0).unwrap();
        a.sync().unwrap();
    }

    #[test]
    fn unaligned_write_tears_on_device_sector_boundaries() {
        let dom = PowerDomain::new(11, CutMode::DropUnsynced);
        let a = dom.attach(vec![0; 4 * 512]);
        dom.schedule_power_cut(Some(0));
        assert!(a.write_at(&[1; 1024], 256).is_err());
        dom.restore_power();
        let img = a.contents();
        // Pieces [256,512), [512,1024), [1024,1280) are each all-or-nothing.
        for (lo, hi) in [(256, 512), (512, 1024), (1024, 1280)] {
            let p = &img[lo..hi];
            assert!(p.iter().all(|&x| x == p[0]), "piece {lo}..{hi} mixed");
        }
        assert!(img[..256].iter().chain(&img[1280..]).all(|&x| x == 0));
    }
}
