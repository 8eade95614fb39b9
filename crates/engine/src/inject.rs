//! Fault injection: a [`BlockDevice`] wrapper that makes chosen operations
//! fail with EIO or ENOSPC, or come back short, as a [`FaultPlan`] says.
//!
//! Where [`crate::faulty`] models a power cut (everything after it fails,
//! unsynced writes are lost), [`InjectDevice`] models a device that stays up
//! but misbehaves: a bad sector range, a full thin-provisioned volume, a
//! flaky cable. The engine must turn each such error into an error reply or
//! a refusal — never into silent data loss.
//!
//! **Rules.** A plan is a list of [`Rule`]s. A rule matches an operation by
//! kind ([`Op`]: read, write, sync, or any of them) and, optionally, by byte
//! range (an operation overlapping `[start, end)`; a sync has no range, so a
//! ranged rule never matches one). Each rule counts the operations it
//! matches: the first `after` go through untouched, then the next `count`
//! (or all of them, when there is no count) get the rule's [`Fault`]. When
//! several rules match one operation, every one of them counts it, and the
//! first in plan order that fires supplies the fault.
//!
//! **Faults.** [`Fault::Eio`] and [`Fault::Enospc`] fail the operation
//! before it reaches the inner device, with the real OS error (so the NBD
//! server replies EIO / ENOSPC as for a real device). [`Fault::Short`] does
//! part of the work: a read fills only a prefix of the buffer and returns an
//! [`io::ErrorKind::UnexpectedEof`] error ("short read"), a write writes only
//! a prefix to the inner device and returns [`io::ErrorKind::WriteZero`]
//! ("short write"). The prefix is half the request, rounded down to whole
//! 512-byte sectors when that leaves any (so a torn write is torn at a sector
//! boundary, as a drive would tear it). A short fault never applies to a sync:
//! `sync:short` is refused, and `any:short` matches reads and writes only.
//!
//! **Spec** ([`FaultPlan`]'s `FromStr`), for hidden CLI flags: rules separated
//! by `;`, each `OP:FAULT[:OPTION]...`:
//!
//! ```text
//! OP     = read | write | sync | any
//! FAULT  = eio | enospc | short
//! OPTION = after=N           skip the first N matching operations (default 0)
//!        | count=M           inject at most M times (default: forever)
//!        | range=START-END   only operations overlapping bytes [START, END)
//! ```
//!
//! e.g. `read:eio:after=10:count=3:range=1MiB-2MiB;write:enospc;sync:eio:after=5`.
//! Sizes take units (`ssdcache::units::parse_bytes`, plus a bare `0`). An
//! empty spec is an empty plan. Errors name the rule and the part at fault.
//!
//! **Runtime.** [`InjectDevice::set_enabled`] turns every rule on or off at
//! once; while off, operations pass straight through and are not counted
//! towards `after`. Counters ([`InjectStats`]) say what was injected. All
//! state is atomics, so the device is `Sync`; with no rule matching, an
//! operation costs one atomic load and a scan of the rules.

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use crate::device::BlockDevice;

/// Which operations a [`Rule`] matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    Sync,
    /// Reads, writes and syncs (a short fault: reads and writes).
    Any,
}

/// What a [`Rule`] does to an operation it fires on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Fails with `EIO`; nothing reaches the inner device.
    Eio,
    /// Fails with `ENOSPC`; nothing reaches the inner device.
    Enospc,
    /// Does a prefix of a read or write, then fails (see the module doc).
    Short,
}

/// One rule of a [`FaultPlan`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub op: Op,
    pub fault: Fault,
    /// Matching operations let through before the rule fires.
    pub after: u64,
    /// How many times the rule fires at most; `None`: forever.
    pub count: Option<u64>,
    /// Only operations overlapping `[start, end)` match.
    pub range: Option<(u64, u64)>,
}

impl Rule {
    /// A rule firing `fault` on every `op`, from the first one, forever.
    pub fn new(op: Op, fault: Fault) -> Self {
        Rule { op, fault, after: 0, count: None, range: None }
    }

    /// Whether the operation `kind` on `offset..offset+len` (no range: a sync) matches.
    fn matches(&self, kind: Op, span: Option<(u64, usize)>) -> bool {
        let kind_ok = match self.op {
            Op::Any => !(self.fault == Fault::Short && kind == Op::Sync),
            op => op == kind,
        };
        kind_ok
            && match (self.range, span) {
                (None, _) => true,
                (Some(_), None) => false,
                (Some((s, e)), Some((off, len))) => len > 0 && off < e && off.saturating_add(len as u64) > s,
            }
    }
}

/// A list of [`Rule`]s; parsed from a spec with [`str::parse`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    pub rules: Vec<Rule>,
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
        Op::Sync => "sync",
        Op::Any => "any",
    }
}

fn fault_name(f: Fault) -> &'static str {
    match f {
        Fault::Eio => "eio",
        Fault::Enospc => "enospc",
        Fault::Short => "short",
    }
}

/// The spec form, which `FromStr` parses back to the same plan.
impl fmt::Display for FaultPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.rules.iter().enumerate() {
            write!(f, "{}{}:{}", if i > 0 { ";" } else { "" }, op_name(r.op), fault_name(r.fault))?;
            if r.after > 0 {
                write!(f, ":after={}", r.after)?;
            }
            if let Some(c) = r.count {
                write!(f, ":count={c}")?;
            }
            if let Some((s, e)) = r.range {
                write!(f, ":range={s}-{e}")?;
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for FaultPlan {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, String> {
        let size = |t: &str| -> Result<u64, String> {
            match t.trim() {
                "0" => Ok(0),
                t => ssdcache::units::parse_bytes(t).map_err(|e| e.to_string()),
            }
        };
        let mut rules = Vec::new();
        for text in spec.split(';').map(str::trim).filter(|t| !t.is_empty()) {
            let bad = |why: String| format!("fault rule `{text}`: {why}");
            let mut parts = text.split(':').map(str::trim);
            let op = match parts.next().unwrap_or("") {
                "read" => Op::Read,
                "write" => Op::Write,
                "sync" => Op::Sync,
                "any" => Op::Any,
                o => return Err(bad(format!("unknown operation `{o}` (read, write, sync or any)"))),
            };
            let fault = match parts.next() {
                Some("eio") => Fault::Eio,
                Some("enospc") => Fault::Enospc,
                Some("short") if op == Op::Sync => return Err(bad("a sync cannot be short".into())),
                Some("short") => Fault::Short,
                Some(f) => return Err(bad(format!("unknown fault `{f}` (eio, enospc or short)"))),
                None => return Err(bad("missing the fault after `:` (eio, enospc or short)".into())),
            };
            let mut rule = Rule::new(op, fault);
            for opt in parts {
                let (key, val) = opt.split_once('=').ok_or_else(|| bad(format!("`{opt}`: expected KEY=VALUE")))?;
                let num = || val.trim().parse::<u64>().map_err(|_| bad(format!("`{opt}`: not a whole number")));
                match key.trim() {
                    "after" => rule.after = num()?,
                    "count" => match num()? {
                        0 => return Err(bad("`count=0` never fires (leave count out for forever)".into())),
                        n => rule.count = Some(n),
                    },
                    "range" if op == Op::Sync => return Err(bad("a sync has no byte range".into())),
                    "range" => {
                        let (s, e) = val.split_once('-').ok_or_else(|| bad(format!("`{opt}`: expected START-END")))?;
                        let (s, e) = (size(s).map_err(&bad)?, size(e).map_err(&bad)?);
                        if e <= s {
                            return Err(bad(format!("`{opt}`: empty range (END must be above START)")));
                        }
                        rule.range = Some((s, e));
                    }
                    k => return Err(bad(format!("unknown option `{k}` (after, count or range)"))),
                }
            }
            rules.push(rule);
        }
        Ok(FaultPlan { rules })
    }
}

/// What an [`InjectDevice`] has injected so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InjectStats {
    pub eio: u64,
    pub enospc: u64,
    pub short: u64,
}

impl InjectStats {
    /// Faults injected, of every kind.
    pub fn total(&self) -> u64 {
        self.eio + self.enospc + self.short
    }
}

/// A rule and its counters.
#[derive(Debug)]
struct Armed {
    rule: Rule,
    /// Matching operations seen (while enabled).
    seen: AtomicU64,
    /// Times fired.
    fired: AtomicU64,
}

/// A [`BlockDevice`] over `D` that injects the faults of a [`FaultPlan`].
#[derive(Debug)]
pub struct InjectDevice<D> {
    inner: D,
    rules: Vec<Armed>,
    enabled: AtomicBool,
    eio: AtomicU64,
    enospc: AtomicU64,
    short: AtomicU64,
}

impl<D: BlockDevice> InjectDevice<D> {
    /// Wraps `inner`; the rules are on.
    pub fn new(inner: D, plan: FaultPlan) -> Self {
        let rules =
            plan.rules.into_iter().map(|rule| Armed { rule, seen: AtomicU64::new(0), fired: AtomicU64::new(0) });
        InjectDevice {
            inner,
            rules: rules.collect(),
            enabled: AtomicBool::new(true),
            eio: AtomicU64::new(0),
            enospc: AtomicU64::new(0),
            short: AtomicU64::new(0),
        }
    }

    /// Turns every rule on or off (off: operations pass through uncounted).
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Relaxed);
    }

    /// Whether the rules are on.
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Relaxed)
    }

    /// Faults injected so far.
    pub fn stats(&self) -> InjectStats {
        InjectStats { eio: self.eio.load(Relaxed), enospc: self.enospc.load(Relaxed), short: self.short.load(Relaxed) }
    }

    /// How many times rule `i` (plan order) has fired.
    pub fn fired(&self, i: usize) -> u64 {
        self.rules.get(i).map_or(0, |a| a.fired.load(Relaxed))
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// The fault to inject into this operation, if any; counts it.
    fn decide(&self, kind: Op, span: Option<(u64, usize)>) -> Option<Fault> {
        if self.rules.is_empty() || !self.enabled.load(Relaxed) {
            return None;
        }
        let mut chosen = None;
        for a in self.rules.iter().filter(|a| a.rule.matches(kind, span)) {
            let n = a.seen.fetch_add(1, Relaxed);
            if chosen.is_some() || n < a.rule.after {
                continue;
            }
            // Reserve one firing atomically, so racing threads never exceed `count`.
            let limit = a.rule.count.unwrap_or(u64::MAX);
            if a.fired.fetch_update(Relaxed, Relaxed, |f| (f < limit).then_some(f + 1)).is_ok() {
                chosen = Some(a.rule.fault);
            }
        }
        let counter = match chosen? {
            Fault::Eio => &self.eio,
            Fault::Enospc => &self.enospc,
            Fault::Short => &self.short,
        };
        counter.fetch_add(1, Relaxed);
        chosen
    }
}

/// The OS error of an EIO / ENOSPC fault.
fn os_error(f: Fault) -> io::Error {
    io::Error::from_raw_os_error(if f == Fault::Eio { libc::EIO } else { libc::ENOSPC })
}

/// The length of a short transfer of `len` bytes: half, in whole sectors if any.
fn short_len(len: usize) -> usize {
    let half = len / 2;
    if half >= 512 {
        half & !511
    } else {
        half
    }
}

impl<D: BlockDevice> BlockDevice for InjectDevice<D> {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self.decide(Op::Read, Some((offset, buf.len()))) {
            None => self.inner.read_at(buf, offset),
            Some(Fault::Short) => {
                let n = short_len(buf.len());
                self.inner.read_at(&mut buf[..n], offset)?;
                let msg = format!("short read (fault injection): {n} of {} bytes at {offset}", buf.len());
                Err(io::Error::new(io::ErrorKind::UnexpectedEof, msg))
            }
            Some(f) => Err(os_error(f)),
        }
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        match self.decide(Op::Write, Some((offset, data.len()))) {
            None => self.inner.write_at(data, offset),
            Some(Fault::Short) => {
                let n = short_len(data.len());
                self.inner.write_at(&data[..n], offset)?;
                let msg = format!("short write (fault injection): {n} of {} bytes at {offset}", data.len());
                Err(io::Error::new(io::ErrorKind::WriteZero, msg))
            }
            Some(f) => Err(os_error(f)),
        }
    }

    fn sync(&self) -> io::Result<()> {
        match self.decide(Op::Sync, None) {
            None => self.inner.sync(),
            Some(f) => Err(os_error(f)),
        }
    }

    // Allocation is metadata, not device I/O: never faulted.
    fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<ssdcache_block::Extent>> {
        self.inner.extents(offset, len, max)
    }
}

// The tests parse specs, which needs the `engine` feature (units).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemDevice;

    fn dev(spec: &str) -> InjectDevice<MemDevice> {
        InjectDevice::new(MemDevice::new(4 << 20), spec.parse().unwrap())
    }

    fn errno(r: io::Result<()>) -> Option<i32> {
        r.err().and_then(|e| e.raw_os_error())
    }

    #[test]
    fn parses_the_example_and_round_trips() {
        let p: FaultPlan = "read:eio:after=10:count=3:range=1MiB-2MiB; write:enospc;sync:eio:after=5;".parse().unwrap();
        assert_eq!(p.rules.len(), 3);
        assert_eq!(
            p.rules[0],
            Rule { op: Op::Read, fault: Fault::Eio, after: 10, count: Some(3), range: Some((1 << 20, 2 << 20)) }
        );
        assert_eq!(p.rules[1], Rule::new(Op::Write, Fault::Enospc));
        assert_eq!(p.rules[2], Rule { after: 5, ..Rule::new(Op::Sync, Fault::Eio) });
        assert_eq!(p.to_string().parse::<FaultPlan>().unwrap(), p);
        assert_eq!("".parse::<FaultPlan>().unwrap(), FaultPlan::default());
        assert_eq!("any:short:range=0-4KiB".parse::<FaultPlan>().unwrap().rules[0].range, Some((0, 4096)));
    }

    #[test]
    fn parse_errors_name_the_bad_part() {
        for (spec, part) in [
            ("write:eio;red:eio", "`red`"),
            ("read:eoi", "`eoi`"),
            ("read", "missing the fault"),
            ("sync:short", "cannot be short"),
            ("sync:eio:range=0-1MiB", "no byte range"),
            ("read:eio:after=x", "`after=x`"),
            ("read:eio:count=0", "count=0"),
            ("read:eio:range=2MiB-1MiB", "empty range"),
            ("read:eio:range=1MiB", "START-END"),
            ("read:eio:range=1Mob-2MiB", "1Mob"),
            ("read:eio:after", "KEY=VALUE"),
            ("read:eio:when=3", "`when`"),
        ] {
            let e = spec.parse::<FaultPlan>().unwrap_err();
            assert!(e.contains(part), "{spec}: {e}");
        }
    }

    #[test]
    fn after_and_count_select_which_operations_fail() {
        let d = dev("write:eio:after=2:count=2");
        let r: Vec<_> = (0..6).map(|i| errno(d.write_at(&[1; 512], i * 512))).collect();
        assert_eq!(r, [None, None, Some(libc::EIO), Some(libc::EIO), None, None]);
        assert_eq!(d.stats(), InjectStats { eio: 2, ..Default::default() });
        assert_eq!(d.fired(0), 2);
        // Failed writes did not reach the device; the others did.
        let c = d.inner().contents();
        assert_eq!((c[0], c[1024], c[1536], c[2048]), (1, 0, 0, 1));
        // Reads and syncs are not writes.
        assert!(d.read_at(&mut [0; 16], 0).is_ok() && d.sync().is_ok());
    }

    #[test]
    fn forever_any_and_sync() {
        let d = dev("sync:enospc:after=1;any:eio:after=3");
        assert!(d.sync().is_ok()); // any: 1, sync: 1
        assert_eq!(errno(d.sync()), Some(libc::ENOSPC)); // the first rule wins; any counts it (2)
        assert!(d.read_at(&mut [0; 8], 0).is_ok()); // any: the 3rd, let through
        for _ in 0..5 {
            assert_eq!(errno(d.read_at(&mut [0; 8], 0)), Some(libc::EIO));
        }
        assert_eq!(d.stats().total(), 6);
    }

    #[test]
    fn range_matches_overlapping_operations_only() {
        let d = dev("read:eio:range=8KiB-12KiB");
        let mut b = [0u8; 4096];
        assert!(d.read_at(&mut b, 4096).is_ok()); // ends at 8 KiB: no overlap
        assert!(d.read_at(&mut b, 12288).is_ok()); // starts at the end
        assert!(d.read_at(&mut b, 6144).is_err()); // overlaps the start
        assert!(d.read_at(&mut b[..1], 12287).is_err()); // the last byte
        assert!(d.read_at(&mut [], 9000).is_ok()); // empty: overlaps nothing
        assert!(d.write_at(&b, 8192).is_ok());
    }

    #[test]
    fn short_read_and_write_do_a_sector_aligned_prefix() {
        let d = dev("write:short:count=1;read:short:count=1");
        let e = d.write_at(&[7; 3000], 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WriteZero);
        let c = d.inner().contents();
        assert!(c[..1024].iter().all(|&x| x == 7) && c[1024..3000].iter().all(|&x| x == 0));
        d.write_at(&[7; 3000], 0).unwrap();
        let mut b = [0u8; 3000];
        let e = d.read_at(&mut b, 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert!(e.to_string().contains("short read"));
        assert!(b[..1024].iter().all(|&x| x == 7) && b[1024..].iter().all(|&x| x == 0));
        assert_eq!(short_len(100), 50);
        // `any:short` leaves syncs alone.
        assert!(dev("any:short").sync().is_ok());
    }

    #[test]
    fn disabled_rules_neither_fire_nor_count() {
        let d = dev("read:eio:after=1:count=1");
        d.set_enabled(false);
        for _ in 0..3 {
            assert!(d.read_at(&mut [0; 4], 0).is_ok());
        }
        d.set_enabled(true);
        assert!(d.is_enabled());
        assert!(d.read_at(&mut [0; 4], 0).is_ok()); // the one skipped
        assert!(d.read_at(&mut [0; 4], 0).is_err());
        assert!(d.read_at(&mut [0; 4], 0).is_ok());
    }

    #[test]
    fn count_holds_across_threads() {
        let d = std::sync::Arc::new(dev("write:eio:after=100:count=50"));
        let failed: u64 = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..200).filter(|i| d.write_at(&[1; 8], i * 8).is_err()).count() as u64))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!((failed, d.stats().eio, d.fired(0)), (50, 50, 50));
    }
}
