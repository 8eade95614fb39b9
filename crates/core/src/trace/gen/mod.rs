//! Synthetic workloads: seeded, reproducible request streams named by a spec string.
//!
//! # Spec grammar
//!
//! ```text
//! spec      := NAME | NAME "(" arg ("," arg)* ")"
//! arg       := KEY "=" VALUE        a parameter; a list value may continue after commas
//!                                   (size=4KiB:70%,64KiB:30%)
//!            | spec                 a component (mix only)
//! ```
//!
//! Whitespace is ignored, names and keys are case-insensitive. Values:
//! counts take decimal suffixes (`100k`, `10M`, `1G`); ratios are `70%` or `0.7`;
//! sizes carry units (`4KiB`); durations too (`100us`); `iat` is `0`, a fixed gap
//! `100us` or exponential gaps `exp(100us)`; `size` is fixed `4KiB`, a range
//! `4KiB..64KiB` (uniform over whole 512-byte sectors) or a weighted list
//! `4KiB:70%,64KiB:30%` (or `/`-separated; no weights means equally likely).
//!
//! # Key generators (zipf, uniform, scan, loop)
//!
//! Each request picks a key in `0..keys`, then:
//! - `unit=keys`: the request is page `key` ([`Unit::Pages`], one page per request), as in
//!   libCacheSim key traces;
//! - `unit=bytes`: the request starts at byte `key × align` with a size from `size`
//!   ([`Unit::Bytes`]); it may run past its key into the next ones.
//! - `unit=auto` (default): bytes if `size` is given, else keys.
//!
//! With `devices=D`, key `k` is page (or block) `k / D` of device `k % D`, so the whole
//! key space keeps its popularity and the devices share it evenly.
//!
//! `zipf` draws rank `k` in `1..=keys` with P(k) = k^-alpha / Σ_{j=1..keys} j^-alpha (an
//! alias table up to 4M keys, `rand_distr::Zipf` beyond); rank `k` becomes key `π(k-1)` for a
//! seeded pseudo-random permutation π of `0..keys`, so hot keys are scattered, not adjacent
//! (`permute=false` makes rank `k` key `k-1`, as libCacheSim's generator does).
//!
//! # Others
//!
//! `mix(A,B,…,weights=…)` draws each request's component by weight; components keep their
//! own parameters but not `requests`, `seed` or `iat`, which belong to the whole stream.
//! `iometer-a`, `-b`, `-c` are the write-only workloads of paper 002 Table 2 (see
//! `iometer.rs` for the table and what the paper leaves open).
//! `desktop` is a multi-day desktop-like block trace for paper 000 (a drifting daily working
//! set, busy days, idle nights; see `desktop.rs`); it keeps its own clock and day count, so it
//! takes `days` and `per_day` instead of `requests` and `iat`, and cannot go in a mix.
//!
//! Every stream is a function of its spec alone: the same spec gives the same requests
//! every time (ChaCha8 seeded with `seed`), and on every machine whose libm computes `powf`
//! and `ln` alike (zipf weights and exponential gaps use them).

mod desktop;
mod iometer;
mod mix;
mod scan;
mod spec;
mod zipf;

#[cfg(test)]
mod tests;

use super::{Op, Request, TraceError, TraceReader, Unit};
use rand::{Rng as _, SeedableRng};
use spec::{Params, Parsed};
use thiserror::Error;

/// The random number generator of every workload: portable and stable across platforms.
pub(crate) type Rng = rand_chacha::ChaCha8Rng;

#[derive(Debug, Error, PartialEq)]
pub enum GenError {
    #[error("malformed workload spec {spec:?}: {why}")]
    Syntax { spec: String, why: String },
    #[error("unknown workload {name:?} (known: {known})")]
    Unknown { name: String, known: String },
    #[error("workload {gen} has no parameter {param:?} (its parameters: {known})")]
    UnknownParam { gen: String, param: String, known: String },
    #[error("workload {gen}, parameter {param}={value}: {why}")]
    BadValue { gen: String, param: String, value: String, why: String },
}

/// Parameters every key generator takes, after its own.
macro_rules! keyed_common {
    () => {
        "requests=1M,read=100%,unit=auto,size=4KiB,align=4KiB,devices=1,iat=0,seed=1"
    };
}

/// Parameters of workloads A, B and C of paper 002 Table 2 apart from `random` and `iat`.
macro_rules! iometer_common {
    () => {
        "threads=12,file_min=512KiB,file_max=1GiB,size=4KiB/8KiB/16KiB/32KiB/64KiB/128KiB/256KiB/512KiB,\
         requests=500k,read=0%,devices=1,seed=1"
    };
}

/// Every generator: name, parameters with their defaults, and what it does.
const GENERATORS: &[(&str, &str, &str)] = &[
    (
        "zipf",
        concat!("alpha=1.0,keys=1M,permute=true,", keyed_common!()),
        "Zipf popularity: P(rank k) ∝ 1/k^alpha over `keys` keys, ranks scattered over the keys \
         by a seeded permutation (permute=false: rank k is key k-1)",
    ),
    ("uniform", concat!("keys=1M,", keyed_common!()), "every key in 0..keys equally likely"),
    (
        "scan",
        concat!("start=0,length=1M,", keyed_common!()),
        "sequential over keys start..start+length, starting again at `start` after the end",
    ),
    ("loop", concat!("keys=100k,", keyed_common!()), "cyclic sequential over keys 0..keys (scan from 0)"),
    (
        "mix",
        "weights=equal,requests=1M,iat=0,seed=1",
        "mix(A,B,…,weights=90%/10%): each request comes from one component, drawn by weight; \
         components keep their own read/size/unit parameters, the mix owns requests/seed/iat",
    ),
    (
        "iometer-a",
        concat!("random=100%,iat=exp(158ms),", iometer_common!()),
        "paper 002 Table 2 workload A: 12 threads with equal I/O rates, each on its own file \
         (sizes 512KiB..1GiB geometric), records 4KiB..512KiB, write-only, all random",
    ),
    (
        "iometer-b",
        concat!("random=50%,iat=exp(90ms),", iometer_common!()),
        "paper 002 Table 2 workload B: as A, half random and half sequential",
    ),
    (
        "iometer-c",
        concat!("random=0%,iat=exp(72ms),", iometer_common!()),
        "paper 002 Table 2 workload C: as A, all sequential",
    ),
    (
        "desktop",
        "days=10,per_day=200k,write=30%,disk=100GiB,hot=4GiB,drift=10%,alpha=1.0,cold=10%,seq=30%,run=4MiB,\
         file=16KiB,size=4KiB:60%/8KiB:10%/16KiB:10%/32KiB:8%/64KiB:12%,\
         seq_size=64KiB:40%/128KiB:20%/256KiB:20%/512KiB:10%/1MiB:10%,burst=50%,gap=exp(100us),night=0%,\
         devices=1,seed=1",
        "paper 000-like desktop days: exactly per_day requests a day (busy 9-18h, light evening, \
         idle nights) on a `hot` working set of lognormal extents with Zipf popularity, `drift` of it \
         moving each day, plus `cold` uniform background; random and sequential file I/O in 4KiB blocks",
    ),
];

/// Every generator as (name, parameters with defaults, description), for help output.
pub fn list() -> &'static [(&'static str, &'static str, &'static str)] {
    GENERATORS
}

/// Opens a workload spec as a streaming trace reader.
pub fn open(spec: &str) -> Result<Box<dyn TraceReader>, GenError> {
    Ok(Box::new(Generator::new(spec)?))
}

/// Gaps between arrivals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Iat {
    Zero,
    Fixed(u64),
    /// Exponential with this mean in ns (Poisson arrivals).
    Exp(f64),
}

/// Request sizes in bytes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Sizes {
    Fixed(u32),
    /// Uniform over `lo, lo+step, …` up to `hi`.
    Range {
        lo: u32,
        hi: u32,
        step: u32,
    },
    /// `sizes[i]` with probability `cum[i] - cum[i-1]`.
    List {
        sizes: Vec<u32>,
        cum: Vec<f64>,
    },
}

impl Sizes {
    fn sample(&self, rng: &mut Rng) -> u32 {
        match self {
            Sizes::Fixed(s) => *s,
            Sizes::Range { lo, hi, step } => lo + step * rng.gen_range(0..=(hi - lo) / step),
            Sizes::List { sizes, cum } => sizes[pick(cum, rng)],
        }
    }
    fn max(&self) -> u32 {
        match self {
            Sizes::Fixed(s) => *s,
            Sizes::Range { hi, .. } => *hi,
            Sizes::List { sizes, .. } => *sizes.iter().max().unwrap(),
        }
    }
}

/// An index drawn with the probabilities given by cumulative weights `cum` (last = 1).
fn pick(cum: &[f64], rng: &mut Rng) -> usize {
    let u: f64 = rng.gen();
    cum.iter().position(|&c| u < c).unwrap_or(cum.len() - 1)
}

fn op(read: f64, rng: &mut Rng) -> Op {
    if rng.gen::<f64>() < read {
        Op::Read
    } else {
        Op::Write
    }
}

/// Where a key generator's next key comes from.
enum Pattern {
    Zipf(zipf::ZipfKeys),
    Uniform(u64),
    Scan(scan::Scan),
}

/// A key generator: a [`Pattern`] plus op, size and device.
struct Keyed {
    pattern: Pattern,
    read: f64,
    /// `None` for [`Unit::Pages`].
    sizes: Option<Sizes>,
    align: u64,
    devices: u64,
}

impl Keyed {
    fn build(p: &Params, pattern: Pattern, keys: u64) -> Result<Keyed, GenError> {
        let unit = match p.raw("unit").to_ascii_lowercase().as_str() {
            "auto" if p.is_given("size") => Unit::Bytes,
            "auto" | "keys" | "pages" => Unit::Pages,
            "bytes" => Unit::Bytes,
            _ => return Err(p.bad("unit", "expected keys, bytes or auto")),
        };
        if unit == Unit::Pages && p.is_given("size") {
            return Err(p.bad("size", "sizes apply to unit=bytes; with unit=keys every request is one page"));
        }
        let align = p.bytes("align")?;
        let devices = p.positive("devices")?;
        if devices > crate::sim::MAX_DEVICES {
            return Err(p.bad("devices", format!("at most {} devices", crate::sim::MAX_DEVICES)));
        }
        let sizes = match unit {
            Unit::Bytes => Some(p.sizes("size")?),
            Unit::Pages => None,
        };
        // the last key's byte address plus the largest request must fit in u64
        let last = (keys - 1) / devices;
        let max = sizes.as_ref().map_or(0, |s| s.max() as u64);
        if unit == Unit::Bytes && last.checked_mul(align).and_then(|a| a.checked_add(max)).is_none() {
            return Err(p.bad("align", "keys × align overflows a 64-bit byte address"));
        }
        Ok(Keyed { pattern, read: p.ratio("read")?, sizes, align, devices })
    }

    #[inline]
    fn next(&mut self, rng: &mut Rng) -> Request {
        let op = op(self.read, rng);
        // `span`: keys the request covers, so sequential patterns continue where it ends
        let (len, span) = match &self.sizes {
            None => (1, 1),
            Some(s) => {
                let b = s.sample(rng);
                (b, (b as u64).div_ceil(self.align))
            }
        };
        let key = match &mut self.pattern {
            Pattern::Zipf(z) => z.next(rng),
            Pattern::Uniform(keys) => rng.gen_range(0..*keys),
            Pattern::Scan(s) => s.next(span),
        };
        let (dev, local) = (key % self.devices, key / self.devices);
        let addr = if self.sizes.is_some() { local * self.align } else { local };
        Request { time: 0, addr, len, dev: dev as u32, op }
    }

    fn unit(&self) -> Unit {
        if self.sizes.is_some() {
            Unit::Bytes
        } else {
            Unit::Pages
        }
    }
}

/// One generator of a spec (a mix holds several).
enum Component {
    Keyed(Keyed),
    Iometer(iometer::Iometer),
    Mix(mix::Mix),
    /// (boxed: far larger than the others)
    Desktop(Box<desktop::Desktop>),
}

impl Component {
    #[inline]
    fn next(&mut self, rng: &mut Rng) -> Request {
        match self {
            Component::Keyed(k) => k.next(rng),
            Component::Iometer(w) => w.next(rng),
            Component::Mix(m) => m.next(rng),
            Component::Desktop(d) => d.next(rng),
        }
    }

    fn unit(&self) -> Unit {
        match self {
            Component::Keyed(k) => k.unit(),
            Component::Iometer(_) | Component::Desktop(_) => Unit::Bytes,
            Component::Mix(m) => m.unit(),
        }
    }
}

fn declaration(name: &str) -> Result<&'static str, GenError> {
    GENERATORS.iter().find(|(n, _, _)| *n == name).map(|(_, decl, _)| *decl).ok_or_else(|| {
        let known: Vec<&str> = GENERATORS.iter().map(|(n, _, _)| *n).collect();
        GenError::Unknown { name: name.to_string(), known: known.join(", ") }
    })
}

/// Generators that set their own arrival times and length (no `requests`, no `iat`).
fn own_clock(name: &str) -> bool {
    name == "desktop"
}

/// Builds one (possibly nested) generator. Inside a mix, the stream-wide parameters
/// (`requests`, `seed`, `iat`) belong to the mix.
fn build(parsed: &Parsed, rng: &mut Rng, in_mix: bool) -> Result<Component, GenError> {
    let p = Params::new(parsed, declaration(&parsed.name)?)?;
    if in_mix {
        for key in ["requests", "seed", "iat"] {
            if p.is_given(key) {
                return Err(p.bad(key, "has no effect inside mix(…): give it to the mix"));
            }
        }
    }
    if in_mix && own_clock(&parsed.name) {
        return Err(GenError::Syntax {
            spec: parsed.name.clone(),
            why: format!("{} keeps its own clock and days, so it cannot be a component of mix", parsed.name),
        });
    }
    if parsed.name != "mix" && !parsed.components.is_empty() {
        return Err(GenError::Syntax {
            spec: parsed.name.clone(),
            why: format!("{} takes only key=value parameters (components go in mix)", parsed.name),
        });
    }
    Ok(match parsed.name.as_str() {
        "zipf" => {
            let keys = p.positive("keys")?;
            let z = zipf::ZipfKeys::build(&p, keys, rng)?;
            Component::Keyed(Keyed::build(&p, Pattern::Zipf(z), keys)?)
        }
        "uniform" => {
            let keys = p.positive("keys")?;
            Component::Keyed(Keyed::build(&p, Pattern::Uniform(keys), keys)?)
        }
        "scan" | "loop" => {
            let s = scan::Scan::build(&p, parsed.name == "loop")?;
            let end = s.end();
            Component::Keyed(Keyed::build(&p, Pattern::Scan(s), end)?)
        }
        "mix" => {
            let mut parts = Vec::new();
            for c in &parsed.components {
                parts.push(build(c, rng, true)?);
            }
            Component::Mix(mix::Mix::build(&p, parts)?)
        }
        name if name.starts_with("iometer-") => Component::Iometer(iometer::Iometer::build(&p)?),
        "desktop" => Component::Desktop(Box::new(desktop::Desktop::build(&p, rng)?)),
        _ => unreachable!("declaration() knows every generator"),
    })
}

/// A synthetic workload as a [`TraceReader`]: generates batches on demand.
pub struct Generator {
    comp: Component,
    rng: Rng,
    left: u64,
    iat: Iat,
    /// The component sets arrival times itself (`iat` unused).
    own_clock: bool,
    /// Arrival time of the next request, in ns (f64 so exponential gaps don't lose their fractions).
    clock: f64,
    unit: Unit,
}

impl Generator {
    pub fn new(spec: &str) -> Result<Generator, GenError> {
        let parsed = spec::parse(spec)?;
        let p = Params::new(&parsed, declaration(&parsed.name)?)?;
        let own_clock = own_clock(&parsed.name);
        let (requests, iat) = if own_clock { (0, Iat::Zero) } else { (p.count("requests")?, p.iat("iat")?) };
        let mut rng = Rng::seed_from_u64(p.count("seed")?);
        let comp = build(&parsed, &mut rng, false)?;
        let requests = match &comp {
            Component::Desktop(d) => d.total(),
            _ => requests,
        };
        let unit = comp.unit();
        Ok(Generator { comp, rng, left: requests, iat, own_clock, clock: 0.0, unit })
    }

    /// Requests still to come.
    pub fn remaining(&self) -> u64 {
        self.left
    }
}

impl TraceReader for Generator {
    fn read_batch(&mut self, out: &mut Vec<Request>, max: usize) -> Result<usize, TraceError> {
        out.clear();
        let n = (max as u64).min(self.left) as usize;
        out.reserve(n);
        for _ in 0..n {
            let mut r = self.comp.next(&mut self.rng);
            if self.own_clock {
                out.push(r);
                continue;
            }
            r.time = self.clock as u64;
            self.clock += match self.iat {
                Iat::Zero => 0.0,
                Iat::Fixed(ns) => ns as f64,
                Iat::Exp(mean) => mean * self.rng.sample::<f64, _>(rand_distr::Exp1),
            };
            out.push(r);
        }
        self.left -= n as u64;
        Ok(n)
    }

    fn unit(&self) -> Unit {
        self.unit
    }
}
