use super::*;
use crate::mrc::exact_lru;

fn gen(spec: &str) -> TraceSource {
    TraceSource::Gen(spec.into()).load().unwrap()
}

#[test]
fn rates_parse_and_bad_ones_name_the_flag() {
    assert_eq!(parse_sample_rate("1%").unwrap(), 0.01);
    assert_eq!(parse_sample_rate(" 0.5 % ").unwrap(), 0.005);
    assert_eq!(parse_sample_rate("0.1").unwrap(), 0.1);
    assert_eq!(parse_sample_rate("100%").unwrap(), 1.0);
    for bad in ["0", "0%", "101%", "1.5", "-1%", "lots", "", "nan", "inf%", "1%%"] {
        let e = parse_sample_rate(bad).unwrap_err().to_string();
        assert!(e.starts_with(&format!("--sample {bad}: ")), "{bad}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    assert!(check_sample_keys(0).is_err() && check_sample_keys(1).is_ok());
}

#[test]
fn the_hash_keeps_the_share_asked_for_and_blocks_whole() {
    let s = Sampler::new(0.01, 7);
    let kept = (0..1_000_000u64).filter(|&k| s.keep(k)).count();
    assert!((9_000..11_000).contains(&kept), "{kept} of 1M kept at 1%");
    assert_eq!(Sampler::new(1.0, 7).rate(), 1.0);
    assert!(((0..1000u64).all(|k| Sampler::new(1.0, 3).keep(k))));
    // another seed, another sample
    let other = (0..1_000_000u64).filter(|&k| s.keep(k) && Sampler::new(0.01, 8).keep(k)).count();
    assert!(other < 300, "{other}");
    let b = s.by_block(64);
    for block in 0..5000u64 {
        let keep = b.keep(block * 64);
        assert!((0..64).all(|i| b.keep(block * 64 + i) == keep));
    }
}

/// At 100 % a SHARDS curve is the exact one, fixed-rate or fixed-size with
/// room for every key.
#[test]
fn at_full_rate_shards_is_exact() {
    let source = gen("uniform(keys=3000,requests=30000,read=60%,size=1KiB..20KiB,align=1KiB,seed=5)");
    let exact = exact_lru(&source, 4096).unwrap();
    let sizes: Vec<u64> = (1..=exact.counts.footprint_pages + 2).step_by(7).collect();
    let fixed_rate = shards_lru(&source, 4096, &SampleSpec::rate(1.0, 1)).unwrap();
    let fixed_size = shards_lru(&source, 4096, &SampleSpec { rate: 1.0, max_keys: Some(1 << 20), seed: 1 }).unwrap();
    assert_eq!(fixed_rate.counts, exact.counts);
    assert_eq!(fixed_size.counts, exact.counts);
    for &c in &sizes {
        let e = exact.at(c);
        assert_eq!(fixed_rate.at(c), e, "fixed rate at {c} pages");
        let s = fixed_size.at(c);
        let got = (s.hits, s.read_hits, s.write_hits, s.request_hits);
        assert_eq!(got, (e.hits, e.read_hits, e.write_hits, e.request_hits), "fixed size at {c} pages");
    }
}

fn mae(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>() / a.len() as f64
}

/// A seeded 1 % sample of a 1.5 M-request trace estimates the exact curve
/// closely; the fixed-size sample keeps to its key budget.
#[test]
fn a_one_percent_sample_is_close() {
    let source = gen("zipf(alpha=0.8,keys=200000,requests=1500000,read=70%,seed=11)");
    let exact = exact_lru(&source, 4096).unwrap();
    let sizes = exact.even_sizes(20);
    let truth: Vec<f64> = sizes.iter().map(|&c| exact.at(c).miss_ratio).collect();
    let rate = shards_lru(&source, 4096, &SampleSpec::rate(0.01, 42)).unwrap();
    let est: Vec<f64> = sizes.iter().map(|&c| rate.at(c).miss_ratio).collect();
    let err = mae(&truth, &est);
    assert!(err < 0.01, "fixed rate: MAE {err}");
    let f = (rate.counts.footprint_pages as f64 - exact.counts.footprint_pages as f64).abs();
    assert!(f < 0.1 * exact.counts.footprint_pages as f64, "footprint estimate off by {f}");
    let size = shards_lru(&source, 4096, &SampleSpec { rate: 1.0, max_keys: Some(2000), seed: 42 }).unwrap();
    assert!(size.rate < 0.02 && size.rate > 0.005, "rate {} after shrinking to 2000 keys", size.rate);
    let est: Vec<f64> = sizes.iter().map(|&c| size.at(c).miss_ratio).collect();
    let err = mae(&truth, &est);
    assert!(err < 0.02, "fixed size: MAE {err}");
}

#[test]
fn the_fixed_size_sample_never_holds_more_keys_than_allowed() {
    let spec = SampleSpec { rate: 1.0, max_keys: Some(50), seed: 3 };
    let mut w = Weighted::new(&spec, 50);
    for k in 0..10_000u64 {
        w.request(Op::Read, std::iter::once(k % 3000));
        assert!(w.stack.len() <= 50);
    }
    assert!(w.rate() < 50.0 / 3000.0 * 1.5, "{}", w.rate());
}
