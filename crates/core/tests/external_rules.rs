//! Rules registered at run time (`registry::register_external`, the Python
//! extension's way in) are built as the catalogue's are: under every write
//! mode, nested in admission and tiers, listed among the known names. A test
//! binary of its own: a registration is process-wide, and the registry's unit
//! tests compare the exact list of rules.

use ssdcache::policy::registry::{self, build, build_rule, register_external, unregister_external, BuildCtx};
use ssdcache::policy::{Access, Effects, Mode, Replacement, Spec, SpecError, MODES, NEVER};
use ssdcache::trace::Op;

/// A rule from outside: the catalogue's LRU, built by name.
fn outside_lru(_: &Spec, ctx: &BuildCtx) -> Result<Box<dyn Replacement>, SpecError> {
    Ok(build_rule("lru", ctx)?.0)
}

fn ctx(mode: Mode) -> BuildCtx {
    BuildCtx { capacity: 6, mode, page_bytes: 4096 }
}

/// The effects of a mixed stream (reads, writes, trims over 20 pages) through `text`.
fn effects(text: &str, mode: Mode) -> Vec<String> {
    let (mut p, _) = build(text, &ctx(mode)).unwrap_or_else(|e| panic!("{text}: {e}"));
    let mut fx = Effects::new();
    let mut x: u64 = 11;
    (0..3000u64)
        .map(|seq| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let op = [Op::Read, Op::Read, Op::Write, Op::Trim][((x >> 60) % 4) as usize];
            let a =
                Access { time: seq, key: (x >> 33) % 20, op, partial: false, seq, next_use: NEVER, request_pages: 1 };
            fx.clear();
            p.access(&a, &mut fx);
            format!("{} {:?}", fx.hit, fx.io)
        })
        .collect()
}

#[test]
fn a_rule_from_outside_is_built_as_the_catalogues_are() {
    register_external("outside-lru", outside_lru).unwrap();
    for &(_, mode, _) in MODES {
        assert_eq!(effects("outside-lru", mode), effects("lru", mode), "{mode}");
        let (_, spec) = build("outside-lru(mode=wt)", &ctx(mode)).unwrap();
        assert_eq!(spec.canonical(), "outside-lru(mode=write-through)");
    }
    assert_eq!(
        effects("admit(by=nhit(n=2),rule=outside-lru)", Mode::WriteBack),
        effects("admit(by=nhit(n=2),rule=lru)", Mode::WriteBack)
    );
    assert_eq!(
        effects("read-volatile(tier=outside-lru)", Mode::WriteBack),
        effects("read-volatile(tier=lru)", Mode::WriteBack)
    );
    assert!(registry::rule_names().contains(&"outside-lru"));
    let e = build("nosuch", &ctx(Mode::WriteBack)).err().unwrap().to_string();
    assert!(e.contains("known: lru,") && e.ends_with("outside-lru)"), "{e}");
    let e = build_rule("outside-lru(mode=wt)", &ctx(Mode::WriteBack)).err().unwrap().to_string();
    assert!(e.contains("outside-lru has no parameter \"mode\""), "{e}");

    assert!(unregister_external("outside-lru"));
    assert!(build("outside-lru", &ctx(Mode::WriteBack)).is_err());
    assert!(!unregister_external("outside-lru"));
}

#[test]
fn a_catalogue_name_or_a_malformed_one_is_refused() {
    let e = register_external("lru", outside_lru).unwrap_err();
    assert_eq!(e, "\"lru\" is a built-in policy");
    for bad in ["", "My-LRU", "a(b)", "a b"] {
        assert!(register_external(bad, outside_lru).unwrap_err().contains("is not a policy name"), "{bad}");
    }
}
