//! The catalogue of policies, and the one builder: every policy, wherever it is
//! built (the simulator, a tier of a tiered cache, ABM's read buffer, the
//! daemon's decider), is built here from its spec. Adding a policy is one file
//! and one entry in [`POLICIES`].

use super::{classic, flash, tiered};
use super::{Policy, PolicyInfo, Replacement, Rules, Spec, SpecError};

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
    // issue 17 part 2
    classic::wtinylfu::INFO,
    classic::clockpro::INFO,
    classic::lecar::INFO,
];

/// What builders get to build the rules nested in their specs.
const RULES: Rules = Rules { build: build_rule_boxed, names: rule_names };

pub fn find(name: &str) -> Option<&'static PolicyInfo> {
    POLICIES.iter().find(|p| p.name == name)
}

fn unknown(spec: &Spec, names: Vec<&str>) -> SpecError {
    SpecError::UnknownName { kind: "policy", name: spec.name.clone(), known: names.join(", ") }
}

/// Parses and builds a policy spec. Returns the policy and its canonical spec text.
pub fn build(text: &str, ctx: &BuildCtx) -> Result<(Box<dyn Policy>, Spec), SpecError> {
    let mut spec = Spec::parse(text)?;
    let info = find(&spec.name).ok_or_else(|| unknown(&spec, POLICIES.iter().map(|p| p.name).collect()))?;
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
    spec.bind(info.params)?;
    let policy = (info.build)(&spec, &ctx, &RULES)?;
    if let Some(i) = mode_given {
        spec.params.insert(i, ("mode".into(), ctx.mode.name().into()));
    }
    Ok((policy, spec))
}

/// The policies that are replacement rules (can be nested: `tier=2q(kin=30%)`).
pub fn rule_names() -> Vec<&'static str> {
    POLICIES.iter().filter(|p| p.rule.is_some()).map(|p| p.name).collect()
}

/// Parses and builds the bare replacement rule a spec names (no write
/// semantics, so no `mode`), for `ctx.capacity` pages.
pub fn build_rule(text: &str, ctx: &BuildCtx) -> Result<(Box<dyn Replacement>, Spec), SpecError> {
    let mut spec = Spec::parse(text)?;
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
        let names = rule_names();
        assert_eq!(names[..9], ["lru", "fifo", "clock", "lfu", "2q", "arc", "lirs", "s3fifo", "belady"]);
        // issue 17 part 2
        assert!(["wtinylfu", "clockpro", "lecar"].iter().all(|n| names.contains(n)));
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
