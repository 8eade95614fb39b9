//! Miss-ratio curves in object mode (`--unit object`): sizes in bytes.
//!
//! [`exact_lru_bytes`] is exact for a size-aware LRU at every capacity in one
//! pass, from stack distances over bytes: for an access to object `x` of
//! `s` bytes, `D` is the bytes of the distinct objects accessed since `x`'s
//! previous access. A size-aware LRU's cache is always a prefix of the
//! recency stack (a hit moves to the front, a miss inserts at the front and
//! evicts from the back), so `x` is still cached at capacity `C` exactly when
//! `D + s <= C` — where `D` counts only objects of at most `C` bytes, since
//! larger ones are never cached and so never push anything out. A Fenwick
//! tree over access times holds each object's size at its last access; the
//! capacities share one tree until an object size falls between two of them,
//! which splits their group (its tree copied, the new object left out of the
//! lower half's): as many trees as the object sizes separate capacities,
//! usually one. All share one map of last accesses; times are renumbered when
//! the trees fill, so memory follows the footprint, not the trace. The property test holds this
//! against the simulator's LRU.
//!
//! Two cases are not a stack algorithm, and are said so: deletes (the object
//! leaves every cache; objects behind it could have stayed) and a key whose
//! size changes (libCacheSim's LRU, and ours, keep the size an object was
//! cached with; the stack takes the newest).
//!
//! [`sampled_objects`] estimates any size-aware policy by miniature
//! simulation: keys sampled by hash at rate `R`, caches of `R·C` bytes.

use super::sample::Sampler;
use crate::metrics::ObjectReport;
use crate::sim::objects::{object_totals as totals, run_objects, ObjectSource, ObjectTotals as TraceTotals};
use crate::sim::SimError;
use crate::trace::objects::ObjectRequest;
use crate::trace::BATCH;
use serde::Serialize;

/// One capacity's result.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ObjectPoint {
    pub cache_bytes: u64,
    pub misses: u64,
    pub miss_bytes: u64,
    pub miss_ratio: f64,
    pub byte_miss_ratio: f64,
    /// Misses on objects larger than the cache.
    pub too_large: u64,
}

/// A curve over capacities in bytes.
#[derive(Clone, Debug, Serialize)]
pub struct ObjectCurve {
    pub trace: String,
    pub policy: String,
    pub unit: &'static str,
    /// `exact` or `miniature`.
    pub method: &'static str,
    pub sample_rate: f64,
    /// Requests, bytes, the footprint (each object at its first size) and
    /// deletes (the exact curve is not exact with them); scaled up from the
    /// sample for `miniature`.
    #[serde(flatten)]
    pub totals: TraceTotals,
    pub points: Vec<ObjectPoint>,
}

/// The capacities of a curve: given in bytes, given as shares of the
/// footprint in bytes, or `n` evenly spaced up to it.
#[derive(Clone, Debug)]
pub enum ObjectSizes {
    Bytes(Vec<u64>),
    Shares(Vec<crate::sim::flags::Share>),
    Even(u64),
}

impl ObjectSizes {
    /// The capacities `--cache` gives (all in bytes or all shares), or `points` evenly spaced.
    pub fn of(cache: Option<&[crate::sim::flags::CacheSize]>, points: u64) -> Result<ObjectSizes, SimError> {
        use crate::sim::flags::CacheSize;
        let Some(list) = cache else { return Ok(ObjectSizes::Even(points)) };
        let bytes: Vec<u64> =
            list.iter().filter_map(|c| if let CacheSize::Bytes(b) = c { Some(*b) } else { None }).collect();
        let shares: Vec<_> =
            list.iter().filter_map(|c| if let CacheSize::Share(f) = c { Some(*f) } else { None }).collect();
        match (bytes.is_empty(), shares.is_empty()) {
            (false, true) => Ok(ObjectSizes::Bytes(bytes)),
            (true, false) => Ok(ObjectSizes::Shares(shares)),
            _ => Err(SimError::Config("cache: give every size in bytes or every one as a share (object mode)".into())),
        }
    }

    fn resolve(&self, footprint_bytes: u64) -> Vec<u64> {
        match self {
            ObjectSizes::Bytes(b) => b.clone(),
            ObjectSizes::Shares(s) => s.iter().map(|f| f.of_ceil(footprint_bytes).max(1)).collect(),
            ObjectSizes::Even(n) => (1..=*n).map(|i| (footprint_bytes * i).div_ceil(*n).max(1)).collect(),
        }
    }
    fn needs_footprint(&self) -> bool {
        !matches!(self, ObjectSizes::Bytes(_))
    }
}

/// A Fenwick tree over access times holding bytes.
struct Fenwick(Vec<u64>);

impl Fenwick {
    fn add(&mut self, at: usize, delta: u64, negative: bool) {
        let mut i = at + 1;
        while i < self.0.len() {
            if negative {
                self.0[i] -= delta;
            } else {
                self.0[i] += delta;
            }
            i += i & i.wrapping_neg();
        }
    }
    /// Sum over times `0..at`.
    fn prefix(&self, at: usize) -> u64 {
        let (mut i, mut sum) = (at, 0);
        while i > 0 {
            sum += self.0[i];
            i -= i & i.wrapping_neg();
        }
        sum
    }
}

/// Capacities that no object size seen so far separates: for every object,
/// "at most C bytes" is true for all of them or for none, so they share one tree.
struct Group {
    tree: Fenwick,
    /// Indices into [`ByteStacks::sorted`], ascending: `caps.start` is the smallest.
    caps: std::ops::Range<usize>,
}

/// Byte stack distances for several capacities at once (see the module's notes).
pub struct ByteStacks {
    /// The capacities ascending, each with its index in the caller's order.
    sorted: Vec<(u64, usize)>,
    /// Contiguous groups of `sorted`, in order. One group (one tree) while
    /// every object fits every capacity; a new size splits the group it falls in.
    groups: Vec<Group>,
    /// Key → (time of its last access, its size then).
    last: hashbrown::HashMap<u64, (usize, u64)>,
    now: usize,
    /// Times the trees hold before they are renumbered.
    room: usize,
}

impl ByteStacks {
    pub fn new(capacities: &[u64]) -> Self {
        let room = 1 << 12;
        let mut sorted: Vec<(u64, usize)> = capacities.iter().copied().zip(0..).collect();
        sorted.sort_unstable();
        let groups = if sorted.is_empty() {
            Vec::new()
        } else {
            vec![Group { tree: Fenwick(vec![0; room + 1]), caps: 0..sorted.len() }]
        };
        ByteStacks { sorted, groups, last: hashbrown::HashMap::new(), now: 0, room }
    }

    /// The smallest capacity of group `g`: an object is in its tree iff it is at most this.
    fn smallest(&self, g: &Group) -> u64 {
        self.sorted[g.caps.start].0
    }

    /// Renumbers the live keys' times 0.. in order, with room for as many again.
    fn compact(&mut self) {
        let mut live: Vec<(usize, u64)> = self.last.iter().map(|(&k, &(t, _))| (t, k)).collect();
        live.sort_unstable();
        self.room = (2 * live.len()).max(1 << 12);
        let smallest: Vec<u64> = self.groups.iter().map(|g| self.smallest(g)).collect();
        for g in &mut self.groups {
            g.tree = Fenwick(vec![0; self.room + 1]);
        }
        for (new_time, &(_, key)) in live.iter().enumerate() {
            let entry = self.last.get_mut(&key).expect("live key");
            entry.0 = new_time;
            let size = entry.1;
            for (g, &c) in self.groups.iter_mut().zip(&smallest) {
                if size <= c {
                    g.tree.add(new_time, size, false);
                }
            }
        }
        self.now = live.len();
    }

    /// Splits the group whose capacities `size` separates (some below it, some not).
    fn split_at(&mut self, size: u64) {
        let Some(g) = self
            .groups
            .iter()
            .position(|g| self.sorted[g.caps.start].0 < size && size <= self.sorted[g.caps.end - 1].0)
        else {
            return;
        };
        let caps = self.groups[g].caps.clone();
        let at = caps.start + self.sorted[caps.clone()].partition_point(|&(c, _)| c < size);
        // (every object so far is in both halves' trees or in neither: the same tree)
        let upper = Group { tree: Fenwick(self.groups[g].tree.0.clone()), caps: at..caps.end };
        self.groups[g].caps = caps.start..at;
        self.groups.insert(g + 1, upper);
    }

    /// An access to `key` of `size` bytes: for each capacity (in the order
    /// given), whether a size-aware LRU of that many bytes hits, into `hits`.
    pub fn access(&mut self, key: u64, size: u64, hits: &mut [bool]) {
        if self.now == self.room {
            self.compact();
        }
        self.split_at(size);
        let now = self.now;
        let prev = self.last.insert(key, (now, size));
        for g in &mut self.groups {
            let smallest = self.sorted[g.caps.start].0;
            let mut between = None;
            if let Some((t, old_size)) = prev {
                if old_size <= smallest {
                    between = Some(g.tree.prefix(now) - g.tree.prefix(t + 1));
                    g.tree.add(t, old_size, true);
                }
            }
            for &(c, i) in &self.sorted[g.caps.clone()] {
                hits[i] = between.is_some_and(|d| size <= c && d + size <= c);
            }
            if size <= smallest {
                g.tree.add(now, size, false);
            }
        }
        self.now += 1;
    }

    /// A delete: the object leaves every cache.
    pub fn delete(&mut self, key: u64) {
        if let Some((t, size)) = self.last.remove(&key) {
            for g in &mut self.groups {
                if size <= self.sorted[g.caps.start].0 {
                    g.tree.add(t, size, true);
                }
            }
        }
    }
}

/// The exact byte-LRU curve of `source` at `sizes` (one pass; two when the
/// sizes depend on the footprint).
pub fn exact_lru_bytes(source: &ObjectSource, sizes: &ObjectSizes) -> Result<ObjectCurve, SimError> {
    let footprint = if sizes.needs_footprint() { Some(totals(source)?) } else { None };
    let capacities = sizes.resolve(footprint.as_ref().map_or(0, |t| t.footprint_bytes));
    let mut stacks = ByteStacks::new(&capacities);
    let (mut reader, _) = source.open()?;
    let (mut misses, mut miss_bytes, mut too_large) =
        (vec![0u64; capacities.len()], vec![0u64; capacities.len()], vec![0u64; capacities.len()]);
    let mut hits = vec![false; capacities.len()];
    let mut t = TraceTotals::default();
    let mut batch: Vec<ObjectRequest> = Vec::with_capacity(BATCH);
    while reader.read_objects(&mut batch, BATCH)? > 0 {
        for r in &batch {
            if t.count(r) {
                stacks.delete(r.key);
                continue;
            }
            stacks.access(r.key, r.size, &mut hits);
            for (i, &hit) in hits.iter().enumerate() {
                if !hit {
                    misses[i] += 1;
                    miss_bytes[i] += r.size;
                    too_large[i] += (r.size > capacities[i]) as u64;
                }
            }
        }
    }
    if t.requests == 0 {
        return Err(SimError::no_requests("to profile", reader.skipped()));
    }
    t.skipped = reader.skipped();
    let points = capacities
        .iter()
        .enumerate()
        .map(|(i, &c)| ObjectPoint {
            cache_bytes: c,
            misses: misses[i],
            miss_bytes: miss_bytes[i],
            miss_ratio: misses[i] as f64 / t.requests as f64,
            byte_miss_ratio: miss_bytes[i] as f64 / t.bytes.max(1) as f64,
            too_large: too_large[i],
        })
        .collect();
    Ok(ObjectCurve {
        trace: source.name(),
        policy: "lru".into(),
        unit: "object",
        method: "exact",
        sample_rate: 1.0,
        totals: t,
        points,
    })
}

/// Miniature simulations of `policies` (size-aware specs) on the keys sampled
/// at `rate` (hash seeded by `seed`), each capacity scaled by the rate.
pub fn sampled_objects(
    source: &ObjectSource,
    policies: &[String],
    sizes: &ObjectSizes,
    rate: f64,
    seed: u64,
) -> Result<Vec<ObjectCurve>, SimError> {
    let sampler = Sampler::new(rate, seed);
    let keep = |r: &ObjectRequest| sampler.keep(r.key);
    let sample = source.filtered(&keep)?;
    let totals = totals(&sample)?;
    if totals.requests == 0 {
        return Err(SimError::Config(format!(
            "no request of {} is in the {}% sample: sample at a higher rate",
            source.name(),
            rate * 100.0
        )));
    }
    // (the sample's totals, footprint included, scaled back up)
    let scaled = totals.scaled_up(rate);
    let capacities = sizes.resolve(scaled.footprint_bytes);
    let mut curves = Vec::new();
    for policy in policies {
        let mut points = Vec::new();
        let mut name = policy.clone();
        for &c in &capacities {
            let scaled = ((c as f64 * rate).round() as u64).max(1);
            let r: ObjectReport = run_objects(&sample, policy, scaled)?;
            name = r.policy.clone();
            points.push(ObjectPoint {
                cache_bytes: c,
                misses: (r.misses as f64 / rate).round() as u64,
                miss_bytes: (r.miss_bytes as f64 / rate).round() as u64,
                miss_ratio: r.miss_ratio,
                byte_miss_ratio: r.byte_miss_ratio,
                too_large: (r.counters.too_large as f64 / rate).round() as u64,
            });
        }
        curves.push(ObjectCurve {
            trace: source.name(),
            policy: name,
            unit: "object",
            method: "miniature",
            sample_rate: rate,
            totals: scaled.clone(),
            points,
        });
    }
    Ok(curves)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::sized::{lru::SizedLru, SizedPolicy};
    use crate::sim::objects::ObjectSimulator;
    use crate::trace::Op;
    use proptest::prelude::*;

    fn memory(reqs: Vec<ObjectRequest>) -> ObjectSource {
        ObjectSource::Memory { name: "t".into(), format: "test".into(), requests: reqs.into(), skipped: 0 }
    }

    /// Each key's one size (a stack needs sizes that stay), some larger than small caches.
    fn trace(keys: &[u8], sizes: &[u16]) -> Vec<ObjectRequest> {
        keys.iter()
            .map(|&k| {
                let size = sizes[k as usize % sizes.len()] as u64 + 1;
                ObjectRequest { time: 0, key: k as u64, size, op: Op::Read }
            })
            .collect()
    }

    proptest! {
        // The exact rule: hit at capacity C iff (bytes of the distinct objects
        // of at most C bytes accessed since) + own size <= C, request for
        // request against the simulator's size-aware LRU, and the curve's
        // counts equal `sim`'s.
        #[test]
        fn byte_stack_distances_are_lru_exactly(
            keys in proptest::collection::vec(0u8..40, 1..400),
            sizes in proptest::collection::vec(0u16..600, 1..40),
            caps in proptest::collection::vec(1u64..4000, 1..6),
        ) {
            let reqs = trace(&keys, &sizes);
            let mut stacks = ByteStacks::new(&caps);
            let mut lrus: Vec<SizedLru> = caps.iter().map(|&c| SizedLru::new(c, true)).collect();
            let mut hits = vec![false; caps.len()];
            for r in &reqs {
                stacks.access(r.key, r.size, &mut hits);
                for (i, lru) in lrus.iter_mut().enumerate() {
                    let mut sim = ObjectSimulator::new(lru as &mut dyn SizedPolicy, caps[i]);
                    prop_assert_eq!(sim.request(r), hits[i], "capacity {}", caps[i]);
                }
            }
            let curve = exact_lru_bytes(&memory(reqs.clone()), &ObjectSizes::Bytes(caps.clone())).unwrap();
            for p in &curve.points {
                let r = crate::sim::objects::run_objects(&memory(reqs.clone()), "lru", p.cache_bytes).unwrap();
                prop_assert_eq!((p.misses, p.miss_bytes, p.too_large), (r.misses, r.miss_bytes, r.counters.too_large));
            }
        }
    }

    #[test]
    fn renumbering_keeps_distances() {
        // more accesses than the trees' first room, over few keys
        let reqs: Vec<ObjectRequest> = (0..20_000u64)
            .map(|i| ObjectRequest { time: 0, key: i % 97, size: 1 + (i % 97) * 3, op: Op::Read })
            .collect();
        let caps = [500, 5_000, 20_000];
        let curve = exact_lru_bytes(&memory(reqs.clone()), &ObjectSizes::Bytes(caps.to_vec())).unwrap();
        for p in &curve.points {
            let r = crate::sim::objects::run_objects(&memory(reqs.clone()), "lru", p.cache_bytes).unwrap();
            assert_eq!(p.misses, r.misses, "{}", p.cache_bytes);
        }
        let even = exact_lru_bytes(&memory(reqs), &ObjectSizes::Even(4)).unwrap();
        assert_eq!(even.points.last().unwrap().cache_bytes, even.totals.footprint_bytes);
        assert_eq!(even.points.last().unwrap().misses, 97);
    }

    #[test]
    fn miniature_at_full_rate_is_the_simulation() {
        let reqs = trace(&(0..200).map(|i| (i * 7 % 31) as u8).collect::<Vec<_>>(), &[10, 300, 40, 2000]);
        let src = memory(reqs);
        let curves =
            sampled_objects(&src, &["gdsf".into(), "sieve".into()], &ObjectSizes::Bytes(vec![1000, 3000]), 1.0, 0)
                .unwrap();
        for c in &curves {
            for p in &c.points {
                let r = crate::sim::objects::run_objects(&src, &c.policy, p.cache_bytes).unwrap();
                assert_eq!((p.misses, p.miss_bytes), (r.misses, r.miss_bytes));
            }
        }
    }
}
