use super::*;
use crate::mrc::sample::shards_lru;
use crate::policy::registry::POLICIES;
use crate::sim::run::{run, RunSpec};

fn gen(spec: &str) -> TraceSource {
    TraceSource::Gen(spec.into()).load().unwrap()
}

/// At 100 % every mini is the `sim` run itself: every policy that builds,
/// in every write mode it takes, at several sizes, on multi-page, misaligned
/// reads, writes and trims.
#[test]
fn at_full_rate_miniature_equals_sim() {
    let source = gen("uniform(keys=700,read=60%,size=1KiB..20KiB,align=1KiB,requests=3000,seed=9)");
    let modes = ["write-back", "write-through", "write-around", "read-only", "write-only"];
    let mut specs = Vec::new();
    for p in POLICIES.iter().filter(|p| p.name != "belady") {
        for m in modes {
            let spec = format!("{}(mode={m})", p.name);
            let ctx = BuildCtx { capacity: 64, mode: Mode::WriteBack, page_bytes: 4096 };
            if build(&spec, &ctx).is_ok() {
                specs.push(spec);
            }
        }
    }
    assert!(specs.len() > 40, "{} policy × mode pairs build", specs.len());
    let sizes = vec![3, 40, 130, 700];
    let curves = miniature(&source, 4096, &specs, &Sizes::Pages(sizes.clone()), &SampleSpec::rate(1.0, 0)).unwrap();
    for (spec, curve) in specs.iter().zip(&curves) {
        assert_eq!(curve.sample_rate, 1.0);
        for (&pages, p) in sizes.iter().zip(&curve.points) {
            let r = run(&source, &RunSpec::new(spec.clone(), pages * 4096)).unwrap();
            let c = &r.counters;
            let sim = (c.hits, c.read_hits, c.write_hits, c.request_hits, c.dirty_writebacks, c.drain_writes);
            let ours = (p.hits, p.read_hits, p.write_hits, p.request_hits, p.dirty_writebacks, p.dirty_at_end);
            assert_eq!(ours, sim, "{spec} at {pages} pages: (hits, read, write, request hits, write-backs, drained)");
        }
    }
}

/// A seeded 1 % sample of a 1.5 M-request trace: miniature ARC, 2Q, S3-FIFO
/// and CLC against full runs at a few sizes, and LRU by miniature against SHARDS.
#[test]
fn a_one_percent_sample_is_close_to_full_runs() {
    let source = gen("zipf(alpha=0.8,keys=150000,requests=1500000,read=70%,seed=11)");
    let policies: Vec<String> = ["arc", "2q", "s3fifo", "cflru"].map(String::from).into();
    let sizes = vec![15_000, 45_000, 90_000];
    let curves =
        miniature(&source, 4096, &policies, &Sizes::Pages(sizes.clone()), &SampleSpec::rate(0.01, 42)).unwrap();
    for (policy, curve) in policies.iter().zip(&curves) {
        let mut err = 0.0;
        for (&pages, p) in sizes.iter().zip(&curve.points) {
            let full = run(&source, &RunSpec::new(policy.clone(), pages * 4096)).unwrap();
            let c = &full.counters;
            err += (p.miss_ratio - (c.pages - c.hits) as f64 / c.pages as f64).abs() / sizes.len() as f64;
        }
        assert!(err < 0.02, "{policy}: MAE {err}");
    }
    let mini =
        miniature(&source, 4096, &["lru".into()], &Sizes::Pages(sizes.clone()), &SampleSpec::rate(0.01, 42)).unwrap();
    let shards = shards_lru(&source, 4096, &SampleSpec::rate(0.01, 42)).unwrap();
    for (&pages, p) in sizes.iter().zip(&mini[0].points) {
        // the same sample, the same LRU: equal up to the mini's size rounding
        assert!((p.miss_ratio - shards.at(pages).miss_ratio).abs() < 1e-9, "{pages}");
    }
}

#[test]
fn what_cannot_be_sampled_is_refused_clearly() {
    let source = gen("zipf(keys=100,requests=1000,seed=1)");
    let one = |p: &str, spec: SampleSpec| {
        miniature(&source, 4096, &[p.into()], &Sizes::Even(4), &spec).err().unwrap().to_string()
    };
    let e = one("belady", SampleSpec::rate(0.5, 0));
    assert!(e.contains("belady") && e.contains("future"), "{e}");
    let e = one("arc", SampleSpec { rate: 1.0, max_keys: Some(10), seed: 0 });
    assert!(e.contains("--sample-keys"), "{e}");
    let e = one("nosuch", SampleSpec::rate(0.5, 0));
    assert!(e.contains("unknown policy"), "{e}");
    let e = one("fab(mode=wt)", SampleSpec::rate(0.5, 0));
    assert!(!e.is_empty());
}

#[test]
fn even_sizes_reach_the_estimated_footprint() {
    let source = gen("zipf(keys=5000,requests=50000,seed=2)");
    let curves = miniature(&source, 4096, &["arc".into()], &Sizes::Even(5), &SampleSpec::rate(0.1, 1)).unwrap();
    let c = &curves[0];
    assert_eq!(c.points.len(), 5);
    assert_eq!(c.points.last().unwrap().cache_pages, c.counts.footprint_pages);
    assert_eq!(c.counts.requests, 50_000, "every request is counted, sampled or not");
    let f = c.counts.footprint_pages as f64;
    assert!((3500.0..6500.0).contains(&f), "{f}");
}
