//! Synthetic workloads: seeded, reproducible request streams named by a spec string.
//!
//! # Spec grammar (parsed by [`crate::spec`], as policies and devices are)
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
//! `fin` is a paper 001-like bank OLTP workload: reads and writes on their own Zipf
//! populations, a share `rw` of reads on written pages and `update` of writes rewriting the page
//! just read (see `fin.rs`).
//! `desktop` is a multi-day desktop-like block trace for paper 000 (a drifting daily working
//! set, busy days, idle nights; see `desktop.rs`); it keeps its own clock and day count, so it
//! takes `days` and `per_day` instead of `requests` and `iat`, and cannot go in a mix.
//!
//! Every stream is a function of its spec alone: the same spec gives the same requests
//! every time (ChaCha8 seeded with `seed`), and on every machine whose libm computes `powf`
//! and `ln` alike (zipf weights and exponential gaps use them).

mod desktop;
mod fin;
mod iometer;
mod mix;
mod scan;
mod values;
mod zipf;

#[cfg(test)]
mod tests;

use super::{Request, TraceError, TraceReader, Unit};
use crate::spec::{concat_params, ParamInfo, Spec, SpecError};
use rand::{Rng as _, SeedableRng};
use values::{op, Iat, Rng, Sizes, Values};

/// A workload generator in the catalogue.
pub struct GenInfo {
    pub name: &'static str,
    pub about: &'static str,
    pub params: &'static [ParamInfo],
}

impl GenInfo {
    /// The parameters with their defaults as spec text: `alpha=1.0,keys=1M,…`.
    pub fn defaults(&self) -> String {
        self.params.iter().map(|p| format!("{}={}", p.name, p.default)).collect::<Vec<_>>().join(",")
    }
}

const fn p(name: &'static str, default: &'static str, about: &'static str) -> ParamInfo {
    ParamInfo::new(name, default, about)
}

/// Parameters every key generator takes, after its own.
const KEYED: [ParamInfo; 8] = [
    p("requests", "1M", "requests in the stream"),
    p("read", "100%", "share of requests that read (the rest write)"),
    p("unit", "auto", "keys (one page per request), bytes (sizes from `size`) or auto (bytes if `size` is given)"),
    p("size", "4KiB", "unit=bytes: request size, fixed 4KiB, range 4KiB..64KiB or weighted 4KiB:70%,64KiB:30%"),
    p("align", "4KiB", "unit=bytes: bytes from one key to the next"),
    p("devices", "1", "devices the keys are spread over: key k is on device k % devices"),
    p("iat", "0", "gap between arrivals: 0, fixed 100us, or exponential exp(100us)"),
    p("seed", "1", "ChaCha8 seed: the same spec gives the same stream"),
];

/// Parameters of workloads A, B and C of paper 002 Table 2 apart from `random` and `iat`.
const IOMETER: [ParamInfo; 8] = [
    p("threads", "12", "threads, each on its own file, equally often"),
    p("file_min", "512KiB", "smallest file (sizes grow geometrically)"),
    p("file_max", "1GiB", "largest file"),
    p("size", "4KiB/8KiB/16KiB/32KiB/64KiB/128KiB/256KiB/512KiB", "record sizes, equally likely"),
    p("requests", "500k", "requests in the stream"),
    p("read", "0%", "share of requests that read (the paper's are write-only)"),
    p("devices", "1", "devices: thread t's file is on device t % devices"),
    p("seed", "1", "ChaCha8 seed: the same spec gives the same stream"),
];

const RANDOM: &str = "share of random requests (aligned to their size); the rest continue their thread's last";
const IAT: &str = "gap between arrivals: 0, fixed 100us, or exponential exp(100us) (the paper's mean)";

const ZIPF: [ParamInfo; 11] = concat_params(
    [
        p("alpha", "1.0", "skew: P(rank k) ∝ 1/k^alpha"),
        p("keys", "1M", "distinct keys"),
        p("permute", "true", "scatter ranks over the keys by a seeded permutation (false: rank k is key k-1)"),
    ],
    KEYED,
);
const FIN: [ParamInfo; 13] = concat_params(
    [
        p("alpha", "1.0", "skew of each population: P(rank k) ∝ 1/k^alpha"),
        p("wkeys", "100k", "keys of the write population (keys 0..wkeys)"),
        p("rkeys", "100k", "keys of the read population (keys wkeys..wkeys+rkeys)"),
        p("rw", "95%", "share of reads drawn from the write population (the rest from their own)"),
        p("update", "0%", "share of writes that rewrite the page of the most recent read (read-modify-write)"),
    ],
    KEYED,
);
const UNIFORM: [ParamInfo; 9] = concat_params([p("keys", "1M", "distinct keys")], KEYED);
const SCAN: [ParamInfo; 10] =
    concat_params([p("start", "0", "first key"), p("length", "1M", "keys in one pass")], KEYED);
const LOOP: [ParamInfo; 9] = concat_params([p("keys", "100k", "keys in one pass")], KEYED);
const MIX: [ParamInfo; 4] = [
    p("weights", "equal", "component weights: 90%/10%, 9,1 or equal"),
    p("requests", "1M", "requests in the stream"),
    p("iat", "0", "gap between arrivals: 0, fixed 100us, or exponential exp(100us)"),
    p("seed", "1", "ChaCha8 seed: the same spec gives the same stream"),
];
const IOMETER_A: [ParamInfo; 10] = concat_params([p("random", "100%", RANDOM), p("iat", "exp(158ms)", IAT)], IOMETER);
const IOMETER_B: [ParamInfo; 10] = concat_params([p("random", "50%", RANDOM), p("iat", "exp(90ms)", IAT)], IOMETER);
const IOMETER_C: [ParamInfo; 10] = concat_params([p("random", "0%", RANDOM), p("iat", "exp(72ms)", IAT)], IOMETER);
/// (see `desktop.rs` for why each default)
const DESKTOP: [ParamInfo; 18] = [
    p("days", "10", "days in the trace"),
    p("per_day", "200k", "requests in each day, exactly"),
    p("write", "30%", "share of operations that write"),
    p("disk", "100GiB", "size of each device"),
    p("hot", "4GiB", "working set: total length of the hot extents"),
    p("drift", "10%", "share of hot extents moved each day"),
    p("alpha", "1.0", "Zipf exponent of hot-extent popularity"),
    p("cold", "10%", "share of operations on fresh random extents"),
    p("seq", "30%", "share of operations that are sequential runs"),
    p("run", "4MiB", "longest sequential run (one operation)"),
    p("file", "16KiB", "median extent length"),
    p("size", "4KiB:60%/8KiB:10%/16KiB:10%/32KiB:8%/64KiB:12%", "sizes of random requests (whole 4 KiB blocks)"),
    p("seq_size", "64KiB:40%/128KiB:20%/256KiB:20%/512KiB:10%/1MiB:10%", "sizes of the requests of sequential runs"),
    p("burst", "50%", "share of operations that follow the previous one at once"),
    p("gap", "exp(100us)", "gap inside a burst: 0, fixed 100us or exponential exp(100us)"),
    p("night", "0%", "share of each day's requests issued 23:00-7:00"),
    p("devices", "1", "disks; every extent lies on a uniformly chosen one"),
    p("seed", "1", "ChaCha8 seed: the same spec gives the same trace"),
];
/// Every generator, in the order `ssdcache trace gen --list` lists them.
pub static GENERATORS: &[GenInfo] = &[
    GenInfo {
        name: "zipf",
        about: "Zipf popularity: P(rank k) ∝ 1/k^alpha over `keys` keys, ranks scattered over the keys \
                by a seeded permutation (permute=false: rank k is key k-1)",
        params: &ZIPF,
    },
    GenInfo { name: "uniform", about: "every key in 0..keys equally likely", params: &UNIFORM },
    GenInfo {
        name: "scan",
        about: "sequential over keys start..start+length, starting again at `start` after the end",
        params: &SCAN,
    },
    GenInfo { name: "loop", about: "cyclic sequential over keys 0..keys (scan from 0)", params: &LOOP },
    GenInfo {
        name: "fin",
        about: "paper 001-like bank OLTP: writes on Zipf keys 0..wkeys, reads on Zipf keys wkeys..wkeys+rkeys; \
                a share rw of reads goes to the write population, a share `update` of writes rewrites the page \
                just read",
        params: &FIN,
    },
    GenInfo {
        name: "mix",
        about: "mix(A,B,…,weights=90%/10%): each request comes from one component, drawn by weight; \
                components keep their own read/size/unit parameters, the mix owns requests/seed/iat",
        params: &MIX,
    },
    GenInfo {
        name: "iometer-a",
        about: "paper 002 Table 2 workload A: 12 threads with equal I/O rates, each on its own file \
                (sizes 512KiB..1GiB geometric), records 4KiB..512KiB, write-only, all random",
        params: &IOMETER_A,
    },
    GenInfo {
        name: "iometer-b",
        about: "paper 002 Table 2 workload B: as A, half random and half sequential",
        params: &IOMETER_B,
    },
    GenInfo { name: "iometer-c", about: "paper 002 Table 2 workload C: as A, all sequential", params: &IOMETER_C },
    GenInfo {
        name: "desktop",
        about: "paper 000-like desktop days: exactly per_day requests a day (busy 9-18h, light evening, \
                idle nights) on a `hot` working set of lognormal extents with Zipf popularity, `drift` of it \
                moving each day, plus `cold` uniform background; random and sequential file I/O in 4KiB blocks",
        params: &DESKTOP,
    },
];

/// Every generator, for help output (the same as [`GENERATORS`]).
pub fn list() -> &'static [GenInfo] {
    GENERATORS
}

fn is_generator_name(s: &str) -> bool {
    GENERATORS.iter().any(|g| g.name.eq_ignore_ascii_case(s))
}

/// Parses a workload spec: components (`mix(A,B)`) and list values allowed.
pub(crate) fn parse(text: &str) -> Result<Spec, SpecError> {
    Spec::parse_with_components(text, "workload", &is_generator_name)
}

/// Opens a workload spec as a streaming trace reader.
pub fn open(spec: &str) -> Result<Box<dyn TraceReader>, SpecError> {
    Ok(Box::new(Generator::new(spec)?))
}

/// Where a key generator's next key comes from.
enum Pattern {
    Zipf(zipf::ZipfKeys),
    /// Its key depends on the op. (boxed: two Zipf samplers)
    Fin(Box<fin::Fin>),
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
    fn build(p: &Spec, pattern: Pattern, keys: u64) -> Result<Keyed, SpecError> {
        let unit = match p.raw("unit").to_ascii_lowercase().as_str() {
            "auto" if p.is_given("size") => Unit::Bytes,
            "auto" | "keys" | "pages" => Unit::Pages,
            "bytes" => Unit::Bytes,
            _ => return Err(p.invalid("unit", "expected keys, bytes or auto")),
        };
        if unit == Unit::Pages && p.is_given("size") {
            return Err(p.invalid("size", "sizes apply to unit=bytes; with unit=keys every request is one page"));
        }
        let align = p.bytes("align")?;
        let devices = p.positive("devices")?;
        if devices > crate::key::MAX_DEVICES {
            return Err(p.invalid("devices", format!("at most {} devices", crate::key::MAX_DEVICES)));
        }
        let sizes = match unit {
            Unit::Bytes => Some(p.sizes("size")?),
            Unit::Pages => None,
        };
        // the last key's byte address plus the largest request must fit in u64
        let last = (keys - 1) / devices;
        let max = sizes.as_ref().map_or(0, |s| s.max() as u64);
        if unit == Unit::Bytes && last.checked_mul(align).and_then(|a| a.checked_add(max)).is_none() {
            return Err(p.invalid("align", "keys × align overflows a 64-bit byte address"));
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
            Pattern::Fin(f) => f.next(op, rng),
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

/// Checks a parsed spec against its generator's parameters.
fn bind(spec: &mut Spec) -> Result<(), SpecError> {
    let info = GENERATORS.iter().find(|g| g.name == spec.name).ok_or_else(|| SpecError::UnknownName {
        kind: "workload",
        name: spec.name.clone(),
        known: GENERATORS.iter().map(|g| g.name).collect::<Vec<_>>().join(", "),
    })?;
    spec.bind(info.params)
}

/// Generators that set their own arrival times and length (no `requests`, no `iat`).
fn own_clock(name: &str) -> bool {
    name == "desktop"
}

/// Builds one (possibly nested) generator. Inside a mix, the stream-wide parameters
/// (`requests`, `seed`, `iat`) belong to the mix.
fn build(parsed: &Spec, rng: &mut Rng, in_mix: bool) -> Result<Component, SpecError> {
    let mut p = parsed.clone();
    bind(&mut p)?;
    let p = &p;
    if in_mix {
        for key in ["requests", "seed", "iat"] {
            if p.is_given(key) {
                return Err(p.invalid(key, "has no effect inside mix(…): give it to the mix"));
            }
        }
    }
    if in_mix && own_clock(&parsed.name) {
        return Err(SpecError::Syntax {
            kind: "workload",
            spec: parsed.name.clone(),
            why: format!("{} keeps its own clock and days, so it cannot be a component of mix", parsed.name),
        });
    }
    if parsed.name != "mix" && !parsed.components.is_empty() {
        return Err(SpecError::Syntax {
            kind: "workload",
            spec: parsed.name.clone(),
            why: format!("{} takes only key=value parameters (components go in mix)", parsed.name),
        });
    }
    Ok(match parsed.name.as_str() {
        "zipf" => {
            let keys = p.positive("keys")?;
            let z = zipf::ZipfKeys::build(p, keys, rng)?;
            Component::Keyed(Keyed::build(p, Pattern::Zipf(z), keys)?)
        }
        "fin" => {
            let f = Box::new(fin::Fin::build(p, rng)?);
            let keys = f.keys();
            Component::Keyed(Keyed::build(p, Pattern::Fin(f), keys)?)
        }
        "uniform" => {
            let keys = p.positive("keys")?;
            Component::Keyed(Keyed::build(p, Pattern::Uniform(keys), keys)?)
        }
        "scan" | "loop" => {
            let s = scan::Scan::build(p, parsed.name == "loop")?;
            let end = s.end();
            Component::Keyed(Keyed::build(p, Pattern::Scan(s), end)?)
        }
        "mix" => {
            let mut parts = Vec::new();
            for c in &parsed.components {
                parts.push(build(c, rng, true)?);
            }
            Component::Mix(mix::Mix::build(p, parts)?)
        }
        name if name.starts_with("iometer-") => Component::Iometer(iometer::Iometer::build(p)?),
        "desktop" => Component::Desktop(Box::new(desktop::Desktop::build(p, rng)?)),
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
    pub fn new(spec: &str) -> Result<Generator, SpecError> {
        let parsed = parse(spec)?;
        let mut p = parsed.clone();
        bind(&mut p)?;
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
