"""Shared fixtures for the Python-driven test suites: the ssdcache binary and the shared traces."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The sample traces: $SSDCACHE_TRACES, else ../shared/traces beside the repository.
TRACES = pathlib.Path(os.environ.get("SSDCACHE_TRACES", ROOT.parent / "shared" / "traces"))
TRACES_MISSING = (f"sample traces not found at {TRACES}: put the shared traces folder beside the repository "
                  "(../shared/traces) or set SSDCACHE_TRACES to it")


def have_traces() -> bool:
    """Whether the sample traces are there; with SSDCACHE_REQUIRE_TRACES=1 (scripts/test.sh) their
    absence is an error rather than a reason to skip."""
    if (TRACES / "umass-fin1-ssdsim10k").is_dir():
        return True
    if os.environ.get("SSDCACHE_REQUIRE_TRACES") == "1":
        raise RuntimeError(TRACES_MISSING)
    return False


def binary() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("SSDCACHE_BIN", ROOT / "target" / "release" / "ssdcache"))
    if not path.exists():
        pytest.fail(f"{path} not built: run `cargo build --release -p ssdcache-cli` (scripts/test.sh does)")
    return path


def ssdcache(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the ssdcache CLI and returns the completed process (text mode)."""
    proc = subprocess.run([str(binary()), *map(str, args)], capture_output=True, text=True)
    if check and proc.returncode != 0:
        pytest.fail(f"ssdcache {' '.join(map(str, args))} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def sim_json(*args: str) -> list[dict]:
    out = ssdcache("sim", "--json", *args).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


# Folders left out of the walks over block traces (as crates/core/tests/common's NOT_SNIFFED):
# a CDN object trace with sizes (sniffed as webcachesim, an object-mode format), and 5 M bare keys-u32be keys (the speed benchmark's trace, read
# with its format given by crates/core/tests/real_traces.rs and scripts/bench/bench.py).
NOT_SNIFFED = ("adaptsize-cdn-sample", "cache2k-orm-busy")


def shared_traces() -> list[pathlib.Path]:
    """The block traces of ../shared/traces that format sniffing reads."""
    if not TRACES.is_dir():
        raise RuntimeError(f"shared traces not found at {TRACES} (set SSDCACHE_TRACES)")
    return sorted(p for p in TRACES.rglob("*") if p.is_file() and p.name != "SOURCE.txt" and p.suffix != ".md"
                  and p.relative_to(TRACES).parts[0] not in NOT_SNIFFED)
