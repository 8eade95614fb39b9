//! The catalogue of policies, and the one builder: every policy, wherever it is
//! built (the simulator, a tier of a tiered cache, ABM's read buffer, the
//! daemon's decider), is built here from its spec. Adding a policy is one file
//! and one entry in [`POLICIES`].
//!
//! Besides the catalogue, rules may be registered at run time by name
//! ([`register_external`]): the extension point through which the Python
//! extension adds rules written in Python without this crate knowing Python.

use super::admission::{self, AdmitterInfo};
use super::mode::with_mode;
use super::sized::{SizedInfo, SizedPolicy};
use super::{classic, flash, sized, tiered};
use super::{Policy, PolicyInfo, Replacement, Rules, Spec, SpecError};
use std::sync::RwLock;

// The catalogue's types live in the interface; re-exported for the callers that
// have always found them here.
pub use super::{BuildCtx, ParamInfo, MODE_PARAM};

/// Every policy, in the order `ssdcache policies` lists them.
pub static POLICIES: &[PolicyInfo] = &[
    classic::lru::INFO,
    classic::fifo::INFO,
    classic::clock::INFO,
    classic::lfu::INFO,
    classic::twoq::INFO,
    classic::arc::INFO,
    classic::lirs::INFO,
    classic::s3fifo::INFO,
    classic::sieve::INFO,
    classic::slru::INFO,
    classic::lfuda::INFO,
    classic::lru_k::INFO,
    classic::mq::INFO,
    classic::car::INFO,
    classic::wtinylfu::INFO,
    classic::clockpro::INFO,
    classic::lecar::INFO,
    classic::belady::INFO,
    classic::none::INFO,
    flash::cflru::INFO,
    flash::lru_wsr::INFO,
    flash::ccf_lru::INFO,
    flash::ad_lru::INFO,
    flash::dpw_lru::INFO,
    flash::qlru::INFO,
    flash::fab::INFO,
    flash::bplru::INFO,
    flash::clc::INFO,
    flash::abm::INFO,
    tiered::pwc::INFO,
    tiered::segment_lru::INFO,
    tiered::nvram::READ_VOLATILE,
    tiered::nvram::READ_GLOBAL,
    ADMIT,
];

/// Every admitter `admit(by=…)` takes, in the order `ssdcache policies` lists them.
pub static ADMITTERS: &[AdmitterInfo] = &[
    admission::bloom::INFO,
    admission::nhit::INFO,
    admission::prob::INFO,
    admission::size::INFO,
    admission::seqcut::INFO,
    admission::tinylfu::INFO,
];

/// The policies that run in object mode (`--unit object`: sizes in bytes), in
/// the order `ssdcache policies` lists them.
pub static SIZED_POLICIES: &[SizedInfo] = &[
    sized::lru::INFO,
    sized::fifo::INFO,
    sized::clock::INFO,
    sized::s3fifo::INFO,
    sized::sieve::INFO,
    sized::gdsf::INFO,
    ADAPTSIZE,
];

/// `adaptsize(rule=RULE)`: AdaptSize admission in front of a size-aware rule.
/// Built here, as only the registry knows the rules.
const ADAPTSIZE: SizedInfo = SizedInfo {
    name: "adaptsize",
    about: "AdaptSize: admit with probability e^(-size/c), c tuned by a cache model (Berger et al.), before a rule",
    params: sized::adaptsize::PARAMS,
    build: build_adaptsize,
};

fn build_adaptsize(spec: &Spec, capacity: u64) -> Result<Box<dyn SizedPolicy>, SpecError> {
    let (rule, _) = build_sized(spec.raw("rule"), capacity).map_err(|e| spec.invalid("rule", e.to_string()))?;
    let c = spec.uint("c")?;
    if c == 0 {
        return Err(spec.invalid("c", "must be at least 1 byte"));
    }
    let interval = spec.uint("interval")?;
    if interval == 0 {
        return Err(spec.invalid("interval", "must be at least 1 request"));
    }
    let seed = spec.uint("seed")?;
    Ok(Box::new(sized::adaptsize::AdaptSize::new(rule, capacity, interval, c as f64, seed)))
}

/// Builds an object-mode policy for `capacity` bytes from its spec; a policy
/// without sizes is refused in one line naming those with sizes.
pub fn build_sized(text: &str, capacity: u64) -> Result<(Box<dyn SizedPolicy>, Spec), SpecError> {
    let mut spec = Spec::parse(text)?;
    let Some(info) = SIZED_POLICIES.iter().find(|p| p.name == spec.name) else {
        let names: Vec<&str> = SIZED_POLICIES.iter().map(|p| p.name).collect();
        // ("unknown object-mode policy arc (known: lru, …)": it may well be a page policy)
        return Err(SpecError::UnknownName { kind: "object-mode policy", name: spec.name, known: names.join(", ") });
    };
    spec.bind(info.params)?;
    Ok(((info.build)(&spec, capacity)?, spec))
}

/// `admit(by=ADMITTER,rule=RULE)`: admission in front of any rule. Built here,
/// as only the registry knows both the rules and the admitters.
const ADMIT: PolicyInfo = PolicyInfo {
    name: "admit",
    about: "an admission layer (by=) in front of a replacement rule (rule=); nests",
    params: admission::PARAMS,
    build: build_admit,
    rule: Some(admit_rule),
};

fn admit_rule(spec: &Spec, ctx: &super::BuildCtx) -> Result<Box<dyn Replacement>, SpecError> {
    Ok(Box::new(admission::build(spec, ctx, build_rule_boxed, ADMITTERS)?))
}

fn build_admit(spec: &Spec, ctx: &super::BuildCtx, _: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    Ok(with_mode(admission::build(spec, ctx, build_rule_boxed, ADMITTERS)?, ctx))
}

/// What builders get to build the rules nested in their specs.
const RULES: Rules = Rules { build: build_rule_boxed, names: rule_names };

pub fn find(name: &str) -> Option<&'static PolicyInfo> {
    POLICIES.iter().find(|p| p.name == name)
}

fn unknown(spec: &Spec, names: Vec<&str>) -> SpecError {
    SpecError::UnknownName { kind: "policy", name: spec.name.clone(), known: names.join(", ") }
}

// ---- rules registered at run time ----

/// Builds a rule registered at run time, for `ctx.capacity` pages, from its
/// spec as given: its parameters are the builder's to check (they are not in
/// any [`ParamInfo`] table), `mode` excepted (taken out before).
pub type ExternalBuilder = fn(&Spec, &BuildCtx) -> Result<Box<dyn Replacement>, SpecError>;

/// The rules registered at run time, by name. A name is leaked when first
/// registered (registrations are few and live as long as the process), so
/// that [`rule_names`] can list it beside the catalogue's.
static EXTERNAL: RwLock<Vec<(&'static str, ExternalBuilder)>> = RwLock::new(Vec::new());

/// Registers (or registers again) a replacement rule under `name`, usable
/// wherever a catalogue rule is: as a policy under every write mode, nested
/// (`admit(rule=NAME)`, `tier=NAME`). A name of the catalogue is refused.
pub fn register_external(name: &str, build: ExternalBuilder) -> Result<(), String> {
    let valid =
        !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_".contains(c));
    if !valid {
        return Err(format!("{name:?} is not a policy name: lowercase letters, digits, '-' and '_'"));
    }
    if find(name).is_some() {
        return Err(format!("{name:?} is a built-in policy"));
    }
    let mut table = EXTERNAL.write().unwrap_or_else(|e| e.into_inner());
    match table.iter_mut().find(|(n, _)| *n == name) {
        Some(entry) => entry.1 = build,
        None => table.push((Box::leak(name.to_string().into_boxed_str()), build)),
    }
    Ok(())
}

/// Forgets the rule registered under `name`; whether there was one.
pub fn unregister_external(name: &str) -> bool {
    let mut table = EXTERNAL.write().unwrap_or_else(|e| e.into_inner());
    let before = table.len();
    table.retain(|(n, _)| *n != name);
    table.len() != before
}

/// The names registered at run time, in registration order.
pub fn external_names() -> Vec<&'static str> {
    EXTERNAL.read().unwrap_or_else(|e| e.into_inner()).iter().map(|(n, _)| *n).collect()
}

fn external(name: &str) -> Option<ExternalBuilder> {
    EXTERNAL.read().unwrap_or_else(|e| e.into_inner()).iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

/// Every policy name a spec may give: the catalogue's, then those registered at run time.
fn every_name() -> Vec<&'static str> {
    POLICIES.iter().map(|p| p.name).chain(external_names()).collect()
}

/// Parses and builds a policy spec. Returns the policy and its canonical spec text.
pub fn build(text: &str, ctx: &BuildCtx) -> Result<(Box<dyn Policy>, Spec), SpecError> {
    let mut spec = Spec::parse(text)?;
    let info = find(&spec.name);
    let ext = if info.is_none() { external(&spec.name) } else { None };
    if info.is_none() && ext.is_none() {
        return Err(unknown(&spec, every_name()));
    }
    let mode_given = spec.params.iter().position(|(k, _)| k == "mode");
    let mut ctx = *ctx;
    if let Some(i) = mode_given {
        let (_, v) = spec.params.remove(i);
        ctx.mode = v.parse().map_err(|why| SpecError::BadValue {
            kind: "policy",
            name: spec.name.clone(),
            param: "mode".into(),
            value: v.clone(),
            why,
        })?;
    }
    let policy = match (info, ext) {
        (Some(info), _) => {
            spec.bind(info.params)?;
            (info.build)(&spec, &ctx, &RULES)?
        }
        // (a rule from outside gets the write modes as every catalogue rule does)
        (None, Some(build)) => with_mode(build(&spec, &ctx)?, &ctx),
        (None, None) => unreachable!("checked above"),
    };
    if let Some(i) = mode_given {
        spec.params.insert(i, ("mode".into(), ctx.mode.name().into()));
    }
    Ok((policy, spec))
}

/// The policies that are replacement rules (can be nested: `tier=2q(kin=30%)`).
pub fn rule_names() -> Vec<&'static str> {
    POLICIES.iter().filter(|p| p.rule.is_some()).map(|p| p.name).chain(external_names()).collect()
}

/// Parses and builds the bare replacement rule a spec names (no write
/// semantics, so no `mode`), for `ctx.capacity` pages.
pub fn build_rule(text: &str, ctx: &BuildCtx) -> Result<(Box<dyn Replacement>, Spec), SpecError> {
    let mut spec = Spec::parse(text)?;
    if let Some(build) = external(&spec.name).filter(|_| find(&spec.name).is_none()) {
        // (as for a catalogue rule: a nested rule has no write mode of its own)
        if spec.is_given("mode") {
            let known = "those of its class".into();
            return Err(SpecError::UnknownParam { kind: "policy", name: spec.name, param: "mode".into(), known });
        }
        let rule = build(&spec, ctx)?;
        return Ok((rule, spec));
    }
    let build = find(&spec.name).and_then(|p| p.rule.map(|b| (p, b)));
    let Some((info, build)) = build else { return Err(unknown(&spec, rule_names())) };
    spec.bind(info.params)?;
    let rule = build(&spec, ctx)?;
    Ok((rule, spec))
}

fn build_rule_boxed(text: &str, ctx: &BuildCtx) -> Result<Box<dyn Replacement>, SpecError> {
    build_rule(text, ctx).map(|(r, _)| r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::read;
    use crate::policy::{Effects, Mode, NEVER};

    fn ctx() -> BuildCtx {
        BuildCtx { capacity: 8, mode: Mode::WriteBack, page_bytes: 4096 }
    }

    #[test]
    fn every_policy_builds_with_defaults() {
        for p in POLICIES {
            let (pol, spec) = build(p.name, &ctx()).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert_eq!(spec.canonical(), p.name);
            // (`none` is the no-cache baseline: it holds nothing)
            let expected = if p.name == "none" { 0 } else { 8 };
            assert_eq!(pol.stats().capacity, expected, "{}", p.name);
        }
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let e = build("nosuch", &ctx()).err().unwrap().to_string();
        assert!(e.contains("unknown policy \"nosuch\"") && e.contains("lru"), "{e}");
        let e = build("lru(bogus=1)", &ctx()).err().unwrap().to_string();
        assert!(e.contains("no parameter \"bogus\""), "{e}");
        let e = build("lru(mode=sideways)", &ctx()).err().unwrap().to_string();
        assert!(e.contains("unknown mode"), "{e}");
        let (_, spec) = build("lru(mode=wt)", &ctx()).unwrap();
        assert_eq!(spec.canonical(), "lru(mode=write-through)");
    }

    /// Each rule built here behaves as the catalogue's policy of the same name
    /// with its defaults (read-only traffic, where the mode plays no part).
    /// (Was `tiered::rule`'s test, when tiers had a registry of their own.)
    #[test]
    fn rules_equal_their_catalogue_policies() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let keys: Vec<u64> = (0..3000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 11) % 60
            })
            .collect();
        // next_use for belady
        let mut next = vec![NEVER; keys.len()];
        let mut seen = hashbrown::HashMap::new();
        for (i, &k) in keys.iter().enumerate().rev() {
            if let Some(j) = seen.insert(k, i as u64) {
                next[i] = j;
            }
        }
        let rule = |name: &str, capacity| {
            build_rule(name, &BuildCtx { capacity, mode: Mode::WriteBack, page_bytes: 4096 }).ok().map(|(r, _)| r)
        };
        for name in rule_names() {
            for capacity in [1, 7, 25] {
                let (mut policy, _) =
                    build(name, &BuildCtx { capacity, mode: Mode::WriteBack, page_bytes: 4096 }).unwrap();
                let mut r = rule(name, capacity).unwrap();
                let mut fx = Effects::new();
                let mut evicted = Vec::new();
                for (i, &k) in keys.iter().enumerate() {
                    let a = crate::policy::Access { next_use: next[i], ..read(k, i as u64) };
                    fx.clear();
                    policy.access(&a, &mut fx);
                    let hit = r.touch(&a, false, &mut evicted) || {
                        r.insert(&a, false, &mut evicted);
                        false
                    };
                    assert_eq!(hit, fx.hit, "{name} at {capacity} pages, access {i}");
                }
            }
        }
        assert!(rule("mru", 4).is_none());
    }

    #[test]
    fn the_rules_are_the_classic_policies() {
        assert_eq!(
            rule_names(),
            [
                "lru", "fifo", "clock", "lfu", "2q", "arc", "lirs", "s3fifo", "sieve", "slru", "lfuda", "lru-k", "mq",
                "car", "wtinylfu", "clockpro", "lecar", "belady", "admit"
            ]
        );
    }

    #[test]
    fn admission_nests_and_its_errors_name_the_layer() {
        let ctx = BuildCtx { capacity: 64, mode: Mode::WriteBack, page_bytes: 4096 };
        for text in [
            "admit(by=nhit(n=2),rule=arc)",
            "admit(by=seqcut(cutoff=4MiB),rule=admit(by=bloom,rule=lirs(hir=5%)))",
            "read-volatile(tier=admit(by=size(max=64KiB),rule=2q))",
        ] {
            let (p, spec) = build(text, &ctx).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(spec.canonical(), text);
            assert_eq!(p.stats().capacity, 64, "{text}");
        }
        for (text, want) in [
            ("admit(by=nosuch)", "unknown admitter \"nosuch\" (known: bloom, nhit, prob, size, seqcut, tinylfu)"),
            ("admit(by=tinylfu,rule=arc)", "cannot name it"),
            ("admit(by=nhit(n=0))", "1 to 1000000 misses"),
            ("admit(by=nhit(bogus=1))", "nhit has no parameter \"bogus\""),
            ("admit(by=prob(p=150%))", "p=150%"),
            ("admit(by=size(max=1KiB))", "smaller than a page"),
            ("admit(by=seqcut(cutoff=0))", "cutoff=0"),
            ("admit(by=seqcut(cutoff=1KiB))", "smaller than a page"),
            ("admit(rule=cflru)", "rule"),
            ("admit(rule=lru(mode=wt))", "no parameter \"mode\""),
        ] {
            let e = build(text, &ctx).err().unwrap_or_else(|| panic!("{text} built")).to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    /// A declined miss is served from backing in every mode: a read by its
    /// fetch alone, a write (write-back too) sent on to backing, nothing dirty.
    #[test]
    fn a_declined_miss_caches_nothing_in_any_mode() {
        use crate::policy::testing::write;
        use crate::policy::Io;
        for mode in [Mode::WriteBack, Mode::WriteOnly, Mode::WriteThrough, Mode::WriteAround, Mode::ReadOnly] {
            let ctx = BuildCtx { capacity: 8, mode, page_bytes: 4096 };
            let (mut p, _) = build("admit(by=nhit(n=2,trigger=0),rule=lru)", &ctx).unwrap();
            let mut fx = Effects::new();
            p.access(&read(1, 0), &mut fx);
            assert_eq!(fx.io, [Io::Fetch { key: 1, pages: 1 }], "{mode}");
            fx.clear();
            p.access(&write(2, 1), &mut fx);
            assert_eq!(fx.io, [Io::WriteThrough { key: 2 }], "{mode}");
            assert_eq!(p.stats().resident, 0, "{mode}");
            assert_eq!(p.stats().dirty, 0, "{mode}");
            // The second miss of page 1 is cached (where the mode caches read misses).
            fx.clear();
            p.access(&read(1, 2), &mut fx);
            let cached = fx.io.contains(&Io::CacheWrite { key: 1 });
            assert_eq!(cached, mode != Mode::WriteOnly, "{mode}: {:?}", fx.io);
        }
    }

    #[test]
    fn nested_specs_build_through_the_registry() {
        let ctx = BuildCtx { capacity: 64, mode: Mode::WriteBack, page_bytes: 4096 };
        for text in [
            "read-volatile(tier=2q(kin=30%))",
            "read-global(nvram=50%,tier=lirs(hir=5%,stack=0))",
            "abm(read=lirs(hir=5%),write=clc)",
            "abm(read=arc(variant=libcachesim),write=fab)",
        ] {
            let (p, spec) = build(text, &ctx).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(spec.canonical(), text);
            assert_eq!(p.stats().capacity, 64, "{text}");
        }
        let e = build("read-volatile(tier=2q(bogus=1))", &ctx).err().unwrap().to_string();
        assert!(e.contains("2q has no parameter \"bogus\""), "{e}");
        let e = build("read-volatile(tier=mru(x=1))", &ctx).err().unwrap().to_string();
        assert!(e.contains("tier") && e.contains("expected one of lru, fifo"), "{e}");
        let e = build("abm(read=lirs(hir=200%))", &ctx).err().unwrap().to_string();
        assert!(e.contains("hir=200%"), "{e}");
        let e = build("abm(read=2q)", &ctx).err().unwrap().to_string();
        assert!(e.contains("lru, arc, lirs"), "{e}");
        let e = build("read-volatile(tier=lru(mode=wt))", &ctx).err().unwrap().to_string();
        assert!(e.contains("no parameter \"mode\""), "{e}");
    }

    /// A nested default is the same rule as the plain name: `tier=lirs` and
    /// `tier=lirs(hir=1%)` (the default) run alike.
    #[test]
    fn a_nested_default_changes_nothing() {
        let ctx = BuildCtx { capacity: 30, mode: Mode::WriteBack, page_bytes: 4096 };
        let run = |text: &str| {
            let (mut p, _) = build(text, &ctx).unwrap();
            let mut fx = Effects::new();
            let mut hits = Vec::new();
            let mut x: u64 = 7;
            for i in 0..2000u64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let mut a = read((x >> 33) % 80, i);
                if i % 3 == 0 {
                    a.op = crate::trace::Op::Write;
                }
                fx.clear();
                p.access(&a, &mut fx);
                hits.push(fx.hit);
            }
            hits
        };
        assert_eq!(run("read-volatile(tier=lirs)"), run("read-volatile(tier=lirs(hir=1%))"));
        assert_eq!(run("abm(read=lirs)"), run("abm(read=lirs(hir=1%,stack=2))"));
    }
}
