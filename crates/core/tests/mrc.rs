//! `ssdcache mrc`'s exact LRU curve equals separate `sim` runs, on every real
//! trace in `../shared/traces` (see `common`), at sizes across the whole curve.

mod common;

use common::{not_sniffed, traces_dir};
use ssdcache::mrc::exact_lru;
use ssdcache::sim::run::{run, RunSpec};
use ssdcache::sim::TraceSource;
use ssdcache::trace::Format;

fn lru(cache_pages: u64) -> RunSpec {
    RunSpec::new("lru", cache_pages * 4096)
}

#[test]
fn exact_lru_curve_equals_sim_on_every_real_trace() {
    let Some(dir) = traces_dir() else { return };
    let mut files: Vec<_> = walk(&dir);
    files.sort();
    assert!(files.len() >= 10, "expected the sample traces in {}", dir.display());
    for path in files {
        let name = path.strip_prefix(&dir).unwrap().display().to_string();
        let source = TraceSource::file(&path, Format::Auto, false, None).unwrap().load().unwrap();
        let profile = exact_lru(&source, 4096).unwrap_or_else(|e| panic!("{name}: {e}"));
        let f = profile.counts.footprint_pages;
        // With trims LRU is not a stack algorithm: exact from the footprint up (see LruProfile::trims).
        let sizes: Vec<u64> = if profile.counts.trims > 0 {
            vec![f, f + 1]
        } else {
            vec![1, 2, 3, 8, f / 100, f / 20, f / 10, f / 4, f / 2, f - 1, f, f + 1]
        };
        for pages in sizes.into_iter().filter(|&p| p > 0) {
            let c = run(&source, &lru(pages)).unwrap().counters;
            let p = profile.at(pages);
            assert_eq!(
                (p.hits, p.read_hits, p.write_hits, p.request_hits, p.dirty_writebacks, p.dirty_at_end),
                (c.hits, c.read_hits, c.write_hits, c.request_hits, c.dirty_writebacks, c.drain_writes),
                "{name} at {pages} pages: (hits, read, write, request hits, write-backs, drained at the end), mrc vs sim"
            );
        }
    }
}

/// The trace files under `dir` (all but the SOURCE.txt notes).
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.file_name().is_some_and(|n| n != "SOURCE.txt" && n != "README.md") && !not_sniffed(&p) {
            out.push(p);
        }
    }
    out
}
