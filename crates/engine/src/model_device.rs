//! A slow backing device for benchmarks: a real [`BlockDevice`] that takes
//! as long as the simulator's hard-disk model says each request would.
//!
//! [`ModelDevice`] wraps an inner device (the backing file) and, for every
//! read or write, asks the simulator's HDD model
//! (`ssdcache::device::Hdd`, paper 001 Table 2 presets) for the request's
//! service time — a seek from where the previous request ended, half a
//! revolution, the transfer; nothing but the transfer when the request starts
//! exactly where the previous one ended — multiplies it by `scale` and does
//! not return before that much time has passed. The data itself goes to the
//! inner device unchanged, so the image stays a plain file.
//!
//! **One actuator.** The disk serves one request at a time, in the order they
//! take the model's mutex, which is held until the request is done: concurrent
//! requests queue behind it. Time is kept as a queue in virtual time: a
//! request that arrives (is called) at `a` starts at `max(a, previous done)`
//! and is done at `start + service`; it returns once the clock passes that.
//! Because waiting requests start at the previous request's exact finish time,
//! sleep overshoot does not accumulate down a queue.
//!
//! **Sync** costs nothing extra: it is passed to the inner device (whose own
//! `fdatasync` takes what it takes) without touching the model. Disks with a
//! volatile cache answer a flush quickly when their writes were already
//! serviced, which is what the model's per-request charge assumes.
//!
//! Zero-length requests cost nothing and do not move the head; requests past
//! the end are refused before they are charged.
//!
//! **Spec** ([`ModelDevice::from_spec`]): `hdd(model=rpm7200,scale=0.2)` —
//! any `hdd(...)` device spec of the simulator (`ssdcache devices`: `model`,
//! `rpm`, `seek`, `min_seek`, `transfer`, `size`; `size` defaults to the
//! inner device's length, over which the seek curve spans), plus `scale`
//! (default 1: real time; 0.2 = five times faster than the model; 0 = no
//! delay at all). Unknown keys and other device kinds are errors.
//!
//! Only in builds with the `engine` feature (it needs the core crate).

use std::io;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ssdcache::device::catalog::{self, BoxedDevice, DeviceCtx};
use ssdcache::device::{Hdd, HddParams};
use ssdcache::policy::{Spec, SpecError};

use crate::device::{check_range, BlockDevice};

/// Where a [`ModelDevice`] gets the time and how it waits (injectable so
/// tests can account for the delays without sleeping).
pub trait Clock: Send + Sync {
    /// Nanoseconds since a fixed origin; never decreases.
    fn now_ns(&self) -> u64;
    /// Returns once `now_ns() >= deadline` (at once if it already is).
    fn sleep_until_ns(&self, deadline: u64);
}

/// Wall-clock time ([`Instant`]) and [`std::thread::sleep`].
#[derive(Debug)]
pub struct RealClock {
    origin: Instant,
}

impl Default for RealClock {
    fn default() -> Self {
        RealClock { origin: Instant::now() }
    }
}

impl Clock for RealClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn sleep_until_ns(&self, deadline: u64) {
        loop {
            let now = self.now_ns();
            if now >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_nanos(deadline - now));
        }
    }
}

/// What the model has charged so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelStats {
    /// Reads charged (non-empty, in range).
    pub reads: u64,
    /// Writes charged.
    pub writes: u64,
    /// Syncs passed through (free).
    pub syncs: u64,
    /// Total scaled service time charged, ns: how long the actuator was busy.
    pub busy_ns: u64,
    /// Total time requests spent queued behind others before their service
    /// started, ns (virtual time).
    pub queued_ns: u64,
}

/// The actuator: the disk model (head position) and when it is next free.
struct Actuator {
    disk: BoxedDevice,
    /// Clock time at which the last request charged is done.
    free_at: u64,
    stats: ModelStats,
}

/// A [`BlockDevice`] over `D` that delays every read and write by the HDD
/// model's service time × `scale`, one request at a time (see the module doc).
pub struct ModelDevice<D, C = RealClock> {
    inner: D,
    actuator: Mutex<Actuator>,
    scale: f64,
    clock: C,
    spec: String,
}

impl<D, C> std::fmt::Debug for ModelDevice<D, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelDevice").field("spec", &self.spec).field("scale", &self.scale).finish_non_exhaustive()
    }
}

/// Checks a scale factor: finite and not negative.
fn check_scale(scale: f64) -> Result<f64, String> {
    if scale.is_finite() && scale >= 0.0 {
        Ok(scale)
    } else {
        Err("must be a finite number >= 0".to_string())
    }
}

impl<D: BlockDevice> ModelDevice<D> {
    /// Wraps `inner` in the disk `params` (its capacity as given: use
    /// [`HddParams::with_capacity`] for the seek curve to span `inner`),
    /// delays scaled by `scale` (finite, >= 0).
    pub fn new(inner: D, params: HddParams, scale: f64) -> io::Result<Self> {
        let scale =
            check_scale(scale).map_err(|why| io::Error::new(io::ErrorKind::InvalidInput, format!("scale: {why}")))?;
        let spec = format!("{params:?}, scale {scale}");
        Ok(Self::build(inner, Box::new(Hdd::new(params)), scale, spec))
    }

    /// Wraps `inner` in the disk a spec such as `hdd(model=rpm7200,scale=0.2)`
    /// names (see the module doc); `size` defaults to `inner.len()`.
    pub fn from_spec(spec: &str, inner: D) -> Result<Self, SpecError> {
        let mut parsed = Spec::parse_kind(spec, "device")?;
        if parsed.name != "hdd" {
            return Err(SpecError::UnknownName {
                kind: "backing model",
                name: parsed.name.clone(),
                known: "hdd".to_string(),
            });
        }
        let mut scale = 1.0;
        if let Some(i) = parsed.params.iter().position(|(k, _)| k == "scale") {
            let (_, v) = parsed.params.remove(i);
            scale =
                v.parse::<f64>().map_err(|_| "expected a number".to_string()).and_then(check_scale).map_err(|why| {
                    SpecError::BadValue {
                        kind: "device",
                        name: "hdd".to_string(),
                        param: "scale".to_string(),
                        value: v.clone(),
                        why,
                    }
                })?;
        }
        // The catalogue rejects unknown keys and sizes `size=auto` to the footprint.
        let ctx = DeviceCtx { footprint_bytes: inner.len().max(1) };
        let (disk, canonical) = catalog::build(&parsed.canonical(), &ctx)?;
        let spec = format!("{}, scale {scale}", canonical.canonical());
        Ok(Self::build(inner, disk, scale, spec))
    }

    fn build(inner: D, disk: BoxedDevice, scale: f64, spec: String) -> Self {
        ModelDevice {
            inner,
            actuator: Mutex::new(Actuator { disk, free_at: 0, stats: ModelStats::default() }),
            scale,
            clock: RealClock::default(),
            spec,
        }
    }
}

impl<D: BlockDevice, C: Clock> ModelDevice<D, C> {
    /// The same device on another clock (tests); the actuator is free at once.
    pub fn with_clock<C2: Clock>(self, clock: C2) -> ModelDevice<D, C2> {
        let mut a = self.actuator.into_inner().unwrap_or_else(|e| e.into_inner());
        a.free_at = 0;
        ModelDevice { inner: self.inner, actuator: Mutex::new(a), scale: self.scale, clock, spec: self.spec }
    }

    /// The model, for logs: the canonical device spec and the scale.
    pub fn describe(&self) -> &str {
        &self.spec
    }

    /// The scale factor applied to the model's times.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// What has been charged so far.
    pub fn stats(&self) -> ModelStats {
        self.lock().stats
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    fn lock(&self) -> MutexGuard<'_, Actuator> {
        self.actuator.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Charges one request and runs `io` as part of it, returning when both
    /// `io` is done and the request's modelled completion time has passed.
    fn charged<T>(&self, offset: u64, len: usize, write: bool, io: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        check_range(self.inner.len(), offset, len)?;
        if len == 0 {
            return io();
        }
        let arrival = self.clock.now_ns();
        // Held until the request is done: one request at a time.
        let mut a = self.lock();
        let model_ns = if write { a.disk.write(offset, len as u64) } else { a.disk.read(offset, len as u64) };
        let service = (model_ns as f64 * self.scale).round() as u64;
        let start = arrival.max(a.free_at);
        let done = start.saturating_add(service);
        a.free_at = done;
        let s = &mut a.stats;
        if write {
            s.writes += 1;
        } else {
            s.reads += 1;
        }
        s.busy_ns = s.busy_ns.saturating_add(service);
        s.queued_ns = s.queued_ns.saturating_add(start - arrival);
        let r = io();
        self.clock.sleep_until_ns(done);
        drop(a);
        r
    }
}

impl<D: BlockDevice, C: Clock> BlockDevice for ModelDevice<D, C> {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let len = buf.len();
        self.charged(offset, len, false, || self.inner.read_at(buf, offset))
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.charged(offset, data.len(), true, || self.inner.write_at(data, offset))
    }

    fn sync(&self) -> io::Result<()> {
        self.lock().stats.syncs += 1;
        self.inner.sync()
    }

    // Allocation is metadata (no seek modelled): the inner device's, at once.
    fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<ssdcache_block::Extent>> {
        self.inner.extents(offset, len, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemDevice;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Barrier};

    /// A clock that never moves by itself; `sleep_until_ns` records the
    /// deadlines and (if `advance`) jumps the time to them.
    #[derive(Default)]
    struct FakeClock {
        now: AtomicU64,
        advance: bool,
        deadlines: Mutex<Vec<u64>>,
    }

    impl Clock for Arc<FakeClock> {
        fn now_ns(&self) -> u64 {
            self.now.load(Ordering::SeqCst)
        }
        fn sleep_until_ns(&self, deadline: u64) {
            self.deadlines.lock().unwrap().push(deadline);
            if self.advance {
                self.now.fetch_max(deadline, Ordering::SeqCst);
            }
        }
    }

    const MIB: u64 = 1 << 20;

    fn params() -> HddParams {
        HddParams::preset("rpm7200").unwrap().with_capacity(256 * MIB)
    }

    fn dev(scale: f64, advance: bool) -> (ModelDevice<MemDevice, Arc<FakeClock>>, Arc<FakeClock>) {
        let clock = Arc::new(FakeClock { advance, ..Default::default() });
        let d =
            ModelDevice::new(MemDevice::new((256 * MIB) as usize), params(), scale).unwrap().with_clock(clock.clone());
        (d, clock)
    }

    #[test]
    fn each_request_waits_for_its_modelled_service_time() {
        let p = params();
        let (d, clock) = dev(1.0, true);
        let mut buf = vec![0u8; 4096];
        // First request at 0: no seek (head at 0) but half a revolution + transfer.
        d.read_at(&mut buf, 0).unwrap();
        let t1 = p.rotational_ns() + p.transfer_ns(4096);
        // Sequential: transfer only.
        d.read_at(&mut buf, 4096).unwrap();
        let t2 = t1 + p.transfer_ns(4096);
        // A write 100 MiB away: seek + rotation + transfer.
        d.write_at(&[7u8; 8192], 100 * MIB).unwrap();
        let t3 = t2 + p.seek_ns(100 * MIB - 8192) + p.rotational_ns() + p.transfer_ns(8192);
        assert_eq!(*clock.deadlines.lock().unwrap(), vec![t1, t2, t3]);
        assert_eq!(clock.now_ns(), t3);
        let s = d.stats();
        assert_eq!((s.reads, s.writes, s.busy_ns, s.queued_ns), (2, 1, t3, 0));
        // The data went through.
        d.read_at(&mut buf, 100 * MIB).unwrap();
        assert_eq!(buf, vec![7u8; 4096]);
        // Idle time is not charged: a request arriving later starts when it arrives.
        clock.now.store(t3 + 5_000_000_000, Ordering::SeqCst);
        d.read_at(&mut buf, 100 * MIB + 4096).unwrap();
        assert_eq!(*clock.deadlines.lock().unwrap().last().unwrap(), t3 + 5_000_000_000 + p.transfer_ns(4096));
    }

    #[test]
    fn sequential_is_much_cheaper_than_random() {
        let (seq, _) = dev(1.0, true);
        let (rnd, _) = dev(1.0, true);
        let mut buf = vec![0u8; 4096];
        for i in 0..256u64 {
            seq.read_at(&mut buf, i * 4096).unwrap();
            // Whole MiB apart in a scrambled order: never where the previous request ended.
            rnd.read_at(&mut buf, (i * 37 % 256) * MIB).unwrap();
        }
        let (s, r) = (seq.stats().busy_ns, rnd.stats().busy_ns);
        let p = params();
        assert_eq!(s, p.rotational_ns() + 256 * p.transfer_ns(4096));
        // Every random read pays at least the minimum seek and half a revolution.
        assert!(r >= 255 * (p.min_seek_ns + p.rotational_ns()), "{r}");
        assert!(r > 5 * s, "random {r} ns vs sequential {s} ns");
    }

    #[test]
    fn scale_multiplies_and_zero_means_no_delay() {
        let p = params();
        let (half, clock) = dev(0.5, true);
        half.write_at(&[1u8; 4096], 0).unwrap();
        let full = p.rotational_ns() + p.transfer_ns(4096);
        assert_eq!(clock.now_ns(), (full as f64 * 0.5).round() as u64);
        let (zero, clock) = dev(0.0, true);
        zero.write_at(&[1u8; 4096], 50 * MIB).unwrap();
        zero.sync().unwrap();
        assert_eq!(clock.now_ns(), 0);
        assert_eq!(zero.stats().syncs, 1);
        assert!(ModelDevice::new(MemDevice::new(16), params(), -1.0).is_err());
        assert!(ModelDevice::new(MemDevice::new(16), params(), f64::NAN).is_err());
    }

    #[test]
    fn empty_out_of_range_and_sync_cost_nothing() {
        let (d, clock) = dev(1.0, true);
        d.read_at(&mut [], 5 * MIB).unwrap();
        d.write_at(&[], 7 * MIB).unwrap();
        assert!(d.read_at(&mut [0u8; 4096], 256 * MIB - 2048).is_err());
        assert!(d.write_at(&[0u8; 1], u64::MAX).is_err());
        d.sync().unwrap();
        assert!(clock.deadlines.lock().unwrap().is_empty());
        assert_eq!(d.stats(), ModelStats { syncs: 1, ..Default::default() });
        // The head did not move: a read at 0 is the same first-request cost.
        d.read_at(&mut [0u8; 512], 0).unwrap();
        assert_eq!(clock.now_ns(), params().rotational_ns() + params().transfer_ns(512));
    }

    #[test]
    fn concurrent_requests_queue_behind_one_actuator() {
        // The clock never advances: every request arrives at 0, so each one's
        // completion is the sum of the services before it and its own.
        let (d, clock) = dev(1.0, false);
        let d = Arc::new(d);
        let n = 8;
        let barrier = Arc::new(Barrier::new(n));
        let threads: Vec<_> = (0..n as u64)
            .map(|i| {
                let (d, barrier) = (d.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    d.read_at(&mut [0u8; 4096], (i * 31 % 256) * MIB).unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let deadlines = clock.deadlines.lock().unwrap().clone();
        let s = d.stats();
        assert_eq!(s.reads, n as u64);
        // Strictly increasing completions (no two requests served at once),
        // the last one at the total busy time.
        assert!(deadlines.windows(2).all(|w| w[0] < w[1]), "{deadlines:?}");
        assert_eq!(*deadlines.last().unwrap(), s.busy_ns);
        // Queueing: request k waited for the k before it.
        assert_eq!(s.queued_ns, deadlines[..n - 1].iter().sum::<u64>());
    }

    #[test]
    fn real_clock_serialises_concurrent_requests() {
        // 4 threads, each one random read of ~6.3 ms at scale 0.5 (rpm7200:
        // ≥ 1 ms seek + 4.17 ms rotation + ~1 ms transfer, halved): together at
        // least 4× one of them, not ~1× as parallel service would take.
        let d = Arc::new(ModelDevice::new(MemDevice::new((256 * MIB) as usize), params(), 0.5).unwrap());
        let barrier = Arc::new(Barrier::new(4));
        let t0 = Instant::now();
        let threads: Vec<_> = (1..=4u64)
            .map(|i| {
                let (d, barrier) = (d.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    d.read_at(&mut [0u8; 4096], i * 50 * MIB).unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let elapsed = t0.elapsed().as_nanos() as u64;
        let s = d.stats();
        assert_eq!(s.reads, 4);
        assert!(elapsed >= s.busy_ns, "elapsed {elapsed} ns < busy {} ns", s.busy_ns);
        let one = (params().rotational_ns() + params().min_seek_ns) / 2;
        assert!(s.busy_ns >= 4 * one, "{s:?}");
    }

    #[test]
    fn spec_strings() {
        let mem = || MemDevice::new((64 * MIB) as usize);
        let d = ModelDevice::from_spec("hdd(model=rpm15000,scale=0.2)", mem()).unwrap();
        assert_eq!(d.scale(), 0.2);
        assert!(d.describe().starts_with("hdd(model=rpm15000)"), "{}", d.describe());
        assert_eq!(ModelDevice::from_spec("hdd", mem()).unwrap().scale(), 1.0);
        // Overrides reach the model: a faster transfer makes a sequential read cheaper.
        let clock = Arc::new(FakeClock { advance: true, ..Default::default() });
        let fast = ModelDevice::from_spec("hdd(model=rpm7200,transfer=100MB,scale=1)", mem()).unwrap();
        let fast = fast.with_clock(clock.clone());
        fast.read_at(&mut vec![0u8; 1 << 20], 0).unwrap();
        let p = HddParams::preset("rpm7200").unwrap();
        assert_eq!(clock.now_ns(), p.rotational_ns() + 10_485_760);
        // The seek curve spans the inner device unless size is given.
        let clock = Arc::new(FakeClock { advance: true, ..Default::default() });
        let d = ModelDevice::from_spec("hdd(model=rpm7200)", mem()).unwrap().with_clock(clock.clone());
        d.read_at(&mut [0u8; 512], 64 * MIB - 512).unwrap();
        let full = p.with_capacity(64 * MIB);
        assert_eq!(clock.now_ns(), full.seek_ns(64 * MIB - 512) + full.rotational_ns() + full.transfer_ns(512));

        let err = |s: &str| ModelDevice::from_spec(s, mem()).unwrap_err().to_string();
        assert!(err("hdd(model=rpm7200,bogus=1)").contains("no parameter \"bogus\""), "{}", err("hdd(bogus=1)"));
        assert!(err("hdd(model=rpm3600)").contains("rpm3600"), "{}", err("hdd(model=rpm3600)"));
        assert!(err("hdd(scale=fast)").contains("scale"), "{}", err("hdd(scale=fast)"));
        assert!(err("hdd(scale=-1)").contains("scale"), "{}", err("hdd(scale=-1)"));
        assert!(err("ssd(scale=1)").contains("backing model"), "{}", err("ssd(scale=1)"));
        assert!(err("hdd(model=rpm7200").contains("malformed"), "{}", err("hdd(model=rpm7200"));
    }
}
