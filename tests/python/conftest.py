"""Fixtures for the Python package's tests: the CLI binary to compare with, the shared traces."""

import csv
import io
import json
import os
import pathlib
import shutil
import subprocess

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The sample traces: $SSDCACHE_TRACES, else ../shared/traces beside the repository.
TRACES = pathlib.Path(os.environ.get("SSDCACHE_TRACES", ROOT.parent / "shared" / "traces"))
TRACES_MISSING = (f"sample traces not found at {TRACES}: put the shared traces folder beside the repository "
                  "(../shared/traces) or set SSDCACHE_TRACES to it")

FIN1 = "umass-fin1-ssdsim10k/Financial1-first10k.ssdsim.ascii.gz"
MSR = "msr-cuts-heimdall/msr.cut.per_10k.rw_40_60.1370.trace.gz"
CLOUD = "cloudphysics-io-libcachesim/cloudPhysicsIO.csv.gz"


def _find_binary() -> pathlib.Path:
    """The `ssdcache` CLI built from this tree: $SSDCACHE_BIN, else target/release, else
    target/debug (brought up to date with cargo, so it runs the same core as `_core`)."""
    if os.environ.get("SSDCACHE_BIN"):
        path = pathlib.Path(os.environ["SSDCACHE_BIN"])
        if not path.exists():
            pytest.fail(f"SSDCACHE_BIN={path} does not exist")
        return path
    release = ROOT / "target" / "release" / "ssdcache"
    debug = ROOT / "target" / "debug" / "ssdcache"
    path, profile = (release, ["--release"]) if release.exists() else (debug, [])
    cargo = shutil.which("cargo")
    if cargo:
        proc = subprocess.run([cargo, "build", "-q", "-p", "ssdcache-cli", *profile], cwd=ROOT, capture_output=True,
                              text=True)
        if proc.returncode != 0:
            pytest.fail(f"cargo build -p ssdcache-cli failed:\n{proc.stderr}")
    if not path.exists():
        pytest.fail(f"{path} not built: run `cargo build -p ssdcache-cli`")
    return path


class Cli:
    """Runs the `ssdcache` binary."""

    def __init__(self, path: pathlib.Path):
        self.path = path

    def __call__(self, *args, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(self.path), *map(str, args)], capture_output=True, text=True)
        if check and proc.returncode != 0:
            pytest.fail(f"ssdcache {' '.join(map(str, args))} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc

    def json(self, *args) -> list[dict]:
        out = self("sim", "--json", *args).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def csv(self, *args) -> tuple[list[str], list[list[str]]]:
        """Header and rows of `ssdcache sim --csv`, as text."""
        rows = list(csv.reader(io.StringIO(self("sim", "--csv", *args).stdout)))
        return rows[0], rows[1:]


@pytest.fixture(scope="session")
def cli() -> Cli:
    return Cli(_find_binary())


@pytest.fixture(scope="session")
def traces() -> pathlib.Path:
    """The sample traces folder; tests that need it skip without it (fail with SSDCACHE_REQUIRE_TRACES=1,
    as scripts/test.sh sets)."""
    if not (TRACES / "umass-fin1-ssdsim10k").is_dir():
        if os.environ.get("SSDCACHE_REQUIRE_TRACES") == "1":
            pytest.fail(TRACES_MISSING)
        pytest.skip(TRACES_MISSING)
    return TRACES


@pytest.fixture(scope="session")
def fin1(traces) -> str:
    """UMass Financial1, first 10 k requests (ssdsim text: 22 ASUs, 59 % writes)."""
    return str(traces / FIN1)


@pytest.fixture(scope="session")
def msr(traces) -> str:
    """An MSR Cambridge cut, 10 k requests, byte offsets (heimdall text)."""
    return str(traces / MSR)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import sys

    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
