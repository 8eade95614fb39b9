//! Admission: a layer in front of any replacement rule that decides whether a
//! page that missed is cached at all (`admit(by=nhit(n=2),rule=arc)`).
//!
//! An [`Admitter`] sees every access that reaches the rule and is asked about
//! each miss; [`Admitted`] is the rule plus its admitter, and is itself a rule,
//! so layers nest (`admit(by=seqcut,rule=admit(by=bloom,rule=lru))`) and run
//! under every write mode: a declined miss is what [`Replacement::insert`]
//! returning false means to [`super::mode::ModeCache`] — a read served from
//! backing alone, a write sent on to backing, nothing cached, nothing dirty.
//!
//! One admitter per file; the registry holds their catalogue (`ADMITTERS`),
//! as it does the policies'.

pub mod bloom;
pub mod nhit;
pub mod prob;
pub mod seqcut;
pub mod size;
pub mod tinylfu;

use super::{Access, BuildCtx, ParamInfo, Replacement, RuleFromText, Spec, SpecError};
use crate::trace::Op;

/// Decides which misses are cached.
pub trait Admitter: Send {
    /// Every access that reaches the rule, hit or miss, before the rule sees
    /// it: history for admitters that follow streams. Most ignore it.
    fn seen(&mut self, _a: &Access) {}
    /// A miss on `a.key`: whether to cache it, given the rule's occupancy and,
    /// for an admitter that [`needs_victim`](Admitter::needs_victim), the page
    /// the rule would evict to make room (`None`: it has room).
    fn admit(&mut self, a: &Access, victim: Option<u64>, resident: usize, capacity: usize) -> bool;
    /// History entries kept for keys (reported with the rule's ghosts).
    fn history(&self) -> usize {
        0
    }
    /// Whether `admit` weighs the miss against the rule's victim (TinyLFU):
    /// only then is the rule asked for it, and it must be able to tell.
    fn needs_victim(&self) -> bool {
        false
    }
}

/// Builds an admitter from its bound spec.
pub type AdmitterBuilder = fn(&Spec, &BuildCtx) -> Result<Box<dyn Admitter>, SpecError>;

/// An admitter's catalogue entry: name, parameters and builder.
pub struct AdmitterInfo {
    pub name: &'static str,
    pub about: &'static str,
    pub params: &'static [ParamInfo],
    pub build: AdmitterBuilder,
}

/// A replacement rule behind an admitter.
pub struct Admitted {
    rule: Box<dyn Replacement>,
    by: Box<dyn Admitter>,
    needs_victim: bool,
}

impl Admitted {
    pub fn new(rule: Box<dyn Replacement>, by: Box<dyn Admitter>) -> Self {
        let needs_victim = by.needs_victim();
        Admitted { rule, by, needs_victim }
    }
}

impl Replacement for Admitted {
    #[inline]
    fn touch(&mut self, a: &Access, dirty: bool, evicted: &mut Vec<u64>) -> bool {
        self.by.seen(a);
        self.rule.touch(a, dirty, evicted)
    }
    fn insert(&mut self, a: &Access, dirty: bool, evicted: &mut Vec<u64>) -> bool {
        let victim = if self.needs_victim { self.rule.victim() } else { None };
        self.by.admit(a, victim, self.rule.len(), self.rule.capacity()) && self.rule.insert(a, dirty, evicted)
    }
    fn remove(&mut self, key: u64, evicted: &mut Vec<u64>) -> bool {
        self.rule.remove(key, evicted)
    }
    fn contains(&self, key: u64) -> bool {
        self.rule.contains(key)
    }
    fn cleaned(&mut self, key: u64) {
        self.rule.cleaned(key)
    }
    fn queued(&mut self, a: &Access) {
        self.rule.queued(a)
    }
    fn len(&self) -> usize {
        self.rule.len()
    }
    fn capacity(&self) -> usize {
        self.rule.capacity()
    }
    fn set_capacity(&mut self, capacity: usize, evicted: &mut Vec<u64>) -> bool {
        self.rule.set_capacity(capacity, evicted)
    }
    fn ghosts(&self) -> usize {
        self.rule.ghosts() + self.by.history()
    }
    fn needs_future(&self) -> bool {
        self.rule.needs_future()
    }
    fn victim(&self) -> Option<u64> {
        self.rule.victim()
    }
    fn prefetch(&self, key: u64) {
        self.rule.prefetch(key)
    }
}

/// `admit`'s parameters.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "by",
        default: "bloom",
        about: "the admitter, a spec: bloom, nhit(n=3), prob(p=50%), size(max=64KiB), seqcut(cutoff=4MiB), tinylfu",
    },
    ParamInfo {
        name: "rule", default: "lru", about: "the replacement rule behind it, a spec (may be admit(…) again)"
    },
];

/// Builds `admit(by=…,rule=…)`: the rule from `rule=` (through the registry's
/// `build_rule`), the admitter from `by=` out of `admitters`.
pub fn build(
    spec: &Spec,
    ctx: &BuildCtx,
    build_rule: RuleFromText,
    admitters: &[AdmitterInfo],
) -> Result<Admitted, SpecError> {
    let rule = build_rule(spec.raw("rule"), ctx).map_err(|e| spec.invalid("rule", e.to_string()))?;
    let mut by = Spec::parse_kind(spec.raw("by"), "admitter").map_err(|e| spec.invalid("by", e.to_string()))?;
    let Some(info) = admitters.iter().find(|a| a.name == by.name) else {
        let known: Vec<&str> = admitters.iter().map(|a| a.name).collect();
        return Err(spec.invalid("by", format!("unknown admitter {:?} (known: {})", by.name, known.join(", "))));
    };
    by.bind(info.params).map_err(|e| spec.invalid("by", e.to_string()))?;
    let admitter = (info.build)(&by, ctx).map_err(|e| spec.invalid("by", e.to_string()))?;
    if admitter.needs_victim() && !names_its_victim(spec.raw("rule"), ctx, build_rule) {
        return Err(spec.invalid(
            "rule",
            format!("{} weighs a miss against the rule's victim, and this rule cannot name it (lru, lfu can)", by.name),
        ));
    }
    Ok(Admitted::new(rule, admitter))
}

/// Whether the rule `text` names its victim: built with one page and holding
/// one key, it must name that key.
fn names_its_victim(text: &str, ctx: &BuildCtx, build_rule: RuleFromText) -> bool {
    let Ok(mut probe) = build_rule(text, &BuildCtx { capacity: 1, ..*ctx }) else { return false };
    let a = Access { time: 0, key: 1, op: Op::Read, partial: false, seq: 0, next_use: super::NEVER, request_pages: 1 };
    let mut evicted = Vec::new();
    !probe.touch(&a, false, &mut evicted) && probe.insert(&a, false, &mut evicted) && probe.victim() == Some(1)
}

#[cfg(test)]
pub(crate) mod testing {
    use super::Admitter;
    use crate::policy::testing::read;

    /// Feeds `keys` as reads, each a miss, and returns which were admitted.
    pub fn admitted(by: &mut dyn Admitter, keys: &[u64]) -> Vec<bool> {
        keys.iter()
            .enumerate()
            .map(|(i, &k)| {
                let a = read(k, i as u64);
                by.seen(&a);
                by.admit(&a, None, 0, 100)
            })
            .collect()
    }
}
