//! What the integration tests share: where the sample traces are.

use std::io::Write;
use std::path::PathBuf;

/// The shared traces folder (`$SSDCACHE_TRACES`, else `../shared/traces` beside
/// the repository), or None, said once on stderr, where it is absent — unless
/// `SSDCACHE_REQUIRE_TRACES=1` (scripts/test.sh), which makes that a failure.
pub fn traces_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("SSDCACHE_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces"));
    if dir.join("umass-fin1-ssdsim10k").is_dir() {
        return Some(dir);
    }
    let msg = format!(
        "sample traces not found at {}: skipped; put the shared traces folder beside the repository (../shared/traces) or set SSDCACHE_TRACES to it",
        dir.display()
    );
    assert!(std::env::var_os("SSDCACHE_REQUIRE_TRACES").is_none_or(|v| v != "1"), "{msg}");
    // once, and straight to stderr: the test harness captures eprintln!
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        let _ = writeln!(std::io::stderr(), "{msg}");
    });
    None
}

/// Trace folders the whole-folder walks of block traces (mrc.rs,
/// streaming.rs) leave out: a CDN object trace with sizes (auto-detection
/// reads it as `webcachesim`, an object-mode format; real_traces.rs reads it
/// so, and as a block trace through a column mapping) and 5 M bare
/// keys-u32be keys (no signature to sniff; the speed benchmark's trace, read
/// with its format given).
#[allow(dead_code)] // not every test binary walks the folder
pub const NOT_SNIFFED: &[&str] = &["adaptsize-cdn-sample", "cache2k-orm-busy"];

/// Whether `path` lies in one of the [`NOT_SNIFFED`] folders.
#[allow(dead_code)]
pub fn not_sniffed(path: &std::path::Path) -> bool {
    path.components().any(|c| NOT_SNIFFED.iter().any(|n| c.as_os_str() == *n))
}
