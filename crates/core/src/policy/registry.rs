//! The catalogue of policies: names, parameters with defaults, and builders.
//! Adding a policy is one file and one entry in [`POLICIES`].

use super::{classic, flash, tiered};
use super::{Mode, Policy, Spec, SpecError};

/// One parameter a policy accepts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamInfo {
    pub name: &'static str,
    pub default: &'static str,
    pub about: &'static str,
}

/// What a builder needs besides the spec.
#[derive(Clone, Copy, Debug)]
pub struct BuildCtx {
    /// Cache capacity in pages (at least 1).
    pub capacity: usize,
    /// Mode from the command line, unless the spec sets `mode=`.
    pub mode: Mode,
    /// Bytes per page (the unit of `capacity` and of page keys); segment-unit
    /// policies (PWC) need it to turn a segment size in bytes into pages.
    pub page_bytes: u64,
}

pub type Builder = fn(&Spec, &BuildCtx) -> Result<Box<dyn Policy>, SpecError>;

/// A policy in the catalogue.
pub struct PolicyInfo {
    pub name: &'static str,
    pub about: &'static str,
    /// Parameters besides `mode`, which every page policy takes.
    pub params: &'static [ParamInfo],
    pub build: Builder,
}

/// `mode=`, accepted by every policy.
pub const MODE_PARAM: ParamInfo = ParamInfo {
    name: "mode",
    default: "(from --mode)",
    about: "write-back, write-through, write-around, write-only or read-only",
};

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
    tiered::nvram::READ_VOLATILE,
    tiered::nvram::READ_GLOBAL,
];

pub fn find(name: &str) -> Option<&'static PolicyInfo> {
    POLICIES.iter().find(|p| p.name == name)
}

/// Parses and builds a policy spec. Returns the policy and its canonical spec text.
pub fn build(text: &str, ctx: &BuildCtx) -> Result<(Box<dyn Policy>, Spec), SpecError> {
    let mut spec = Spec::parse(text)?;
    let info = find(&spec.name).ok_or_else(|| SpecError::UnknownPolicy {
        kind: "policy",
        name: spec.name.clone(),
        known: POLICIES.iter().map(|p| p.name).collect::<Vec<_>>().join(", "),
    })?;
    let mode_given = spec.params.iter().position(|(k, _)| k == "mode");
    let mut ctx = *ctx;
    if let Some(i) = mode_given {
        let (_, v) = spec.params.remove(i);
        ctx.mode = v.parse().map_err(|why| SpecError::BadValue {
            kind: "policy",
            policy: spec.name.clone(),
            param: "mode".into(),
            value: v.clone(),
            why,
        })?;
    }
    spec.bind(info.params)?;
    let policy = (info.build)(&spec, &ctx)?;
    if let Some(i) = mode_given {
        spec.params.insert(i, ("mode".into(), ctx.mode.name().into()));
    }
    Ok((policy, spec))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
