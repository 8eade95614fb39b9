use ssdcache::trace::{self, Format, ReadOptions, Request, BATCH};
#[test]
fn bench() {
    let n = 10_000_000u64;
    let path = std::path::Path::new("/tmp/ob/t.oracleGeneral.bin");
    if !path.exists() {
        let keys: Vec<u64> = (0..n).map(|i| (i * 2654435761) % 1_000_003).collect();
        let times: Vec<u64> = (0..n).map(|i| i * 1000).collect();
        let t = std::time::Instant::now();
        let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
        trace::formats::oracle::write_oracle(f, 4096, &times, &keys).unwrap();
        eprintln!("write: {:?}", t.elapsed());
    }
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let (mut r, f) = trace::open(path, Format::Auto, &ReadOptions::default()).unwrap();
        assert_eq!(f, Format::OracleGeneral);
        let mut out: Vec<Request> = Vec::with_capacity(BATCH);
        let mut total = 0u64; let mut sum = 0u64;
        while r.read_batch(&mut out, BATCH).unwrap() > 0 { total += out.len() as u64; sum = sum.wrapping_add(out[out.len()-1].addr); }
        let el = t.elapsed();
        assert_eq!(total, n);
        eprintln!("read {} in {:?}: {:.1} M rec/s ({sum})", total, el, total as f64 / el.as_secs_f64() / 1e6);
    }
}
