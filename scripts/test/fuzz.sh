#!/usr/bin/env bash
# Fuzz every trace reader for a bounded time.
#
#   scripts/test/fuzz.sh [SECONDS_PER_TARGET] [TARGET ...]     (default 20 s, every target)
#
# Targets live in fuzz/ (its own cargo package and workspace, excluded from the
# main one): one per reader (spc, msr, blkparse, vscsi, tencent, systor, csv,
# oracle, ascii, keys, keys_u32be, binary) plus `auto` (the sniffer and whatever
# reader it picks). Each feeds arbitrary bytes through `trace::from_bytes`, the
# same readers `trace::open` builds, and asserts no panic, termination (each
# request consumes input) and the reader contract; libFuzzer's -rss_limit_mb /
# -malloc_limit_mb bound memory, so an allocation sized by a length field fails.
# nbd_handshake and nbd_request do the same for the NBD server's protocol code
# (crates/nbd and crates/engine; see the targets' doc comments: the option negotiation with
# structured replies and metadata contexts, and requests answered with simple
# replies or structured chunks, block status included), and cache_meta for the
# cache's superblock and metadata parsers.
# nbd_tls_handshake: the negotiation with TLS required, nothing answered before STARTTLS.
#
# Why cargo-fuzz on the stable toolchain: only stable Rust exists on these
# machines and no nightly can be fetched. cargo-fuzz itself builds on stable; it
# needs nightly only because it passes rustc `-Z` flags (-Zsanitizer=address and
# the sancov options libFuzzer's coverage needs). RUSTC_BOOTSTRAP=1 makes the
# stable compiler accept them, and libfuzzer-sys builds libFuzzer from source
# with the system C++ compiler. Seen working here with rustc 1.95 / cargo-fuzz
# 0.13.2: `cargo install cargo-fuzz --locked` took 30 s (2 cores), the first
# build of all targets about 5 minutes (about 1 minute after a source change),
# and the targets ran at 1.4k (auto: sniffs, then reads) to 23k execs/s with
# other builds sharing the 2 cores. The standard library is not instrumented (no -Zbuild-std), which costs
# only coverage inside std.
#
# Corpora grow in fuzz/corpus/<target> (kept between runs, git-ignored), seeded
# from fuzz/seeds/<target> and, when ../shared/traces is there, from the first
# 4 KiB of each real trace. A crash stops the script with a non-zero exit; the
# input is in fuzz/artifacts/<target>/. Reproduce with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run <target> fuzz/artifacts/<target>/crash-…   (from fuzz/)
# and turn it into a regression test in the reader's unit tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SECONDS_PER_TARGET=${1:-20}
shift || true
# Every target fuzz/Cargo.toml declares (a new one is fuzzed without an edit here).
mapfile -t ALL < <(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^ssdcache-fuzz$')
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")

export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz"
  start=$(date +%s)
  cargo install cargo-fuzz --locked --quiet
  echo "cargo-fuzz installed in $(( $(date +%s) - start )) s"
fi

cd fuzz
# The default build: release optimisations with debug assertions and overflow
# checks on (so an overflow in the readers' arithmetic is a crash), and ASan.
echo "building fuzz targets"
cargo fuzz build

# Seeds from the real traces: the first 4 KiB, decompressed, of each file, into
# the corpus of the target for its format (and of `auto`).
seed_from_shared() {
  local shared=$ROOT/../shared/traces
  [ -d "$shared" ] || return 0
  local target file name
  while read -r target file; do
    [ -f "$shared/$file" ] || continue
    name=shared-$(basename "$file" .gz)
    for t in "$target" auto; do
      mkdir -p "corpus/$t"
      [ -f "corpus/$t/$name" ] || { gzip -dc "$shared/$file" | head -c 4096 > "corpus/$t/$name" || true; }
    done
  done <<'EOF'
ascii umass-fin1-ssdsim10k/Financial1-first10k.ssdsim.ascii.gz
ascii tpcc-mqsim/tpcc-small.trace.gz
ascii msr-cuts-heimdall/msr.cut.per_10k.rw_20_80.105.trace.gz
vscsi cloudphysics-io-libcachesim/cloudPhysicsIO.csv.gz
msr msr-hm0-1k-caffeine/msr-cambridge1-sample.csv.gz
systor systor17-1k-samples/systor17-traces-sample.csv.gz
blkparse sqlite-wal-wiscsee/sqlitewal-update.blkevents.txt.gz
keys lirs-buffercache/cs.trace.gz
EOF
}
seed_from_shared

status=0
for t in "${TARGETS[@]}"; do
  mkdir -p "corpus/$t"
  echo "== fuzz $t for ${SECONDS_PER_TARGET}s"
  log=$(mktemp)
  if cargo fuzz run "$t" "corpus/$t" "seeds/$t" -- \
      -max_total_time="$SECONDS_PER_TARGET" -max_len=16384 -timeout=10 \
      -rss_limit_mb=1024 -malloc_limit_mb=512 -print_final_stats=1 >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    speed=$(grep -o 'exec/s: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo '?')
    echo "   ok: $runs runs, $speed exec/s"
  else
    status=1
    grep -m3 -A4 -E "panicked at|ERROR: AddressSanitizer|ERROR: libFuzzer" "$log" || true
    echo "   …"
    tail -25 "$log"
    echo "!! fuzz target $t failed; the input is in fuzz/artifacts/$t/"
  fi
  rm -f "$log"
done
exit $status
