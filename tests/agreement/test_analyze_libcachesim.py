"""`ssdcache trace analyze` against libCacheSim's trace analyzer (PyPI `libcachesim`,
TraceAnalyzer) on a real trace, where the definitions match (docs/analyze.md).

The trace goes to libCacheSim as the page stream `sim` sees (`trace convert --to
oracle-general`: one record per 4 KiB page access), so libCacheSim's "requests"
are our page accesses and its "objects" our pages. Equal, not close: page
accesses and footprint; the frequency table; the reuse-time histogram in
accesses (libCacheSim's "virtual time", log base 1.5, with `--log-base 1.5`);
the request rate per 60 s window. Zipf α and R² agree to the 4 decimals
libCacheSim prints.
"""

import json
import math
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import TRACES, TRACES_MISSING, have_traces, ssdcache

CLOUD = TRACES / "cloudphysics-io-libcachesim" / "cloudPhysicsIO.csv.gz"

# Runs libCacheSim's analyzer in a child; it writes its summary (with α) to ./stat.
RUN_PEER = """
import sys, libcachesim as lcs
reader = lcs.TraceReader(sys.argv[1], lcs.TraceType.ORACLE_GENERAL_TRACE)
lcs.TraceAnalyzer(reader, sys.argv[2], lcs.AnalysisParam(time_window=60), lcs.AnalysisOption()).run()
"""


def sections(path: pathlib.Path) -> dict[str, dict[int, int]]:
    """`# heading` then `key:count` lines, by heading."""
    out: dict[str, dict[int, int]] = {}
    current = None
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            current = out.setdefault(line, {})
        elif ":" in line and current is not None:
            k, v = line.split(":")
            current[int(k)] = current.get(int(k), 0) + int(v)
    return {k: v for k, v in out.items() if v}


@pytest.mark.skipif(not have_traces(), reason=TRACES_MISSING)
def test_cloudphysics_agrees_with_libcachesim_trace_analyzer(tmp_path: pathlib.Path):
    oracle = tmp_path / "cloud.oracleGeneral.bin"
    ssdcache("trace", "convert", CLOUD, oracle, "--to", "oracle-general", "--page", "4KiB")
    base = tmp_path / "peer"
    subprocess.run([sys.executable, "-c", RUN_PEER, str(oracle), str(base)], capture_output=True, text=True,
                   check=True, cwd=tmp_path)
    summary = (tmp_path / "stat").read_text()
    ours = json.loads(ssdcache("trace", "analyze", CLOUD, "--json", "--log-base", "1.5", "--interval", "60s").stdout)

    stat = re.search(r"number of requests: (\d+), number of objects: (\d+)", summary)
    assert stat, summary
    assert ours["read_pages"] + ours["write_pages"] == int(stat.group(1))
    assert ours["footprint_pages"] == int(stat.group(2))

    fit = re.search(r"Zipf alpha=([\d.]+), R2=([\d.]+)", summary)
    assert fit, summary
    assert ours["popularity"]["zipf_alpha"] == pytest.approx(float(fit.group(1)), abs=5e-5)
    assert ours["popularity"]["zipf_r2"] == pytest.approx(float(fit.group(2)), abs=5e-5)

    (table,) = sections(base.with_name("peer.popularity")).values()
    assert {f["frequency"]: f["pages"] for f in ours["popularity"]["frequencies"]} == table

    reuse = sections(base.with_name("peer.reuse"))
    (vtime,) = [v for k, v in reuse.items() if "virtual time" in k]
    assert vtime.pop(-1) == ours["footprint_pages"]  # first uses
    mine = {round(math.log(b["lo"]) / math.log(1.5)): b["count"] for b in ours["reuse_accesses"]["bins"] if b["count"]}
    assert mine == vtime

    # request rate: libCacheSim prints whole requests per second per full 60 s window
    rate_lines = base.with_name("peer.reqRate_w60").read_text().splitlines()
    theirs = [int(x) for x in rate_lines[2].strip(",").split(",")]
    intervals = ours["timeline"]["intervals"]
    assert ours["timeline"]["interval"] == 60 * 10**9
    assert len(theirs) >= 100
    assert [iv["page_accesses"] // 60 for iv in intervals[: len(theirs)]] == theirs
