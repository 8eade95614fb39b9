"""`ssdcache.analyze`: the same report as `ssdcache trace analyze --json`, DataFrames that
add up, reuse distances that give `simulate`'s LRU hits, charts, and bad input as ValueErrors."""

import json
import math
import subprocess
import sys

import pytest

import ssdcache

GEN = "zipf(alpha=0.8,keys=3000,requests=20000,read=70%,seed=3)"


def test_equals_the_cli_report(cli, fin1):
    a = ssdcache.analyze(fin1, interval="60s")
    cli_report = json.loads(cli("trace", "analyze", fin1, "--json", "--interval", "60s").stdout)
    assert a.report == cli_report


def test_frames_add_up(fin1):
    a = ssdcache.analyze(fin1)
    s = a.summary
    accesses = s["read_pages"] + s["write_pages"]
    assert a.timeline["requests"].sum() == s["requests"] == a.devices["requests"].sum()
    assert a.timeline["page_accesses"].sum() == accesses == int(a.heatmap.to_numpy().sum())
    assert a.timeline["footprint_pages"].iloc[-1] == s["footprint_pages"] == a.devices["footprint_pages"].sum()
    assert (a.timeline["distinct_pages"] <= a.timeline["page_accesses"]).all()
    assert (a.popularity["pages"] * a.popularity["frequency"]).sum() == accesses
    assert a.popularity["pages"].sum() == s["footprint_pages"]
    assert a.reuse_distance["count"].sum() == accesses - s["footprint_pages"]
    by_unit = a.reuse_time.groupby("unit")["count"].sum()
    assert by_unit["accesses"] == by_unit["ns"] == accesses - s["footprint_pages"]
    assert math.isclose(a.reuse_distance["cumulative"].iloc[-1], 1.0)
    assert len(a.devices) == 22  # Financial1's ASUs in its first 10 k requests
    assert a.heatmap.shape[1] == len(a.timeline) and a.timeline.attrs["axis"] == "time"


def test_reuse_distances_give_simulated_lru_hits():
    # LRU with C pages hits exactly the reuses at stack distance <= C; base-2 bin k
    # holds [2^k, 2^(k+1)), so at C = 2^(k+1) - 1 the hits are bins 0..k.
    a = ssdcache.analyze(GEN)
    rd = a.reuse_distance
    for k in range(2, 11):
        pages = 2 ** (k + 1) - 1
        hits = int(rd[rd["hi"] <= pages + 1]["count"].sum())
        r = ssdcache.simulate(GEN, "lru", cache=pages * 4096)
        assert r.to_dict()["hits"] == hits, pages


def test_untimed_trace_counts_requests_and_options_pass_through(tmp_path):
    keys = tmp_path / "t.keys"
    keys.write_text("\n".join(str(k % 7) for k in range(100)) + "\n")
    a = ssdcache.analyze(str(keys), format="keys", interval="10req")
    assert a.timeline.attrs["axis"] == "requests" and len(a.timeline) == 10
    assert a.summary["footprint_pages"] == 7 and list(a.timeline["distinct_pages"]) == [7] * 10
    assert a.zipf_alpha == pytest.approx(0.0, abs=0.2)


@pytest.mark.parametrize("kwargs, message", [
    ({"interval": "0s"}, "interval"),
    ({"interval": 0}, "interval"),
    ({"interval": "soon"}, "interval"),
    ({"interval": 1.5}, "interval"),
    ({"log_base": 1}, "log-base"),
    ({"page": 0}, "page"),
    ({"warmup": "10%"}, "unknown trace option"),
])
def test_bad_arguments_are_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ssdcache.analyze(GEN, **kwargs)


def test_an_empty_trace_is_a_value_error(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="no requests"):
        ssdcache.analyze(str(empty), format="ssdsim")


def test_charts(tmp_path, fin1):
    a = ssdcache.analyze(fin1)
    figs = ssdcache.plot.analysis(a)
    assert set(figs) == {"reuse_distance", "reuse_time", "popularity", "working_set", "rate", "sequentiality",
                         "devices", "heatmap"}
    path = tmp_path / "a.json"
    path.write_text(json.dumps(a.report))
    out = tmp_path / "charts"
    proc = subprocess.run([sys.executable, "-m", "ssdcache.plot", "analysis", str(path), "-o", str(out),
                           "--plot-format", "svg"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{n}.svg" for n in figs)
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    proc = subprocess.run([sys.executable, "-m", "ssdcache.plot", "analysis", str(bad), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "not the JSON" in proc.stderr


@pytest.mark.parametrize("spec, kwargs, message", [
    # 44 million bins a histogram (a MemoryError on 25 k requests): refused, naming the least base.
    ("loop(keys=2,requests=10)", {"log_base": 1.000001}, r"--log-base 1\.000001: .*65536.*1\.000678"),
    ("loop(keys=2,requests=10)", {"log_base": 10 ** 400}, "log_base"),
    # An interval past 2**63 was an OverflowError from pandas' int64 columns.
    # (2**64 is no number of nanoseconds at all: the duration parser says so first)
    ("loop(keys=2,requests=10)", {"interval": 2 ** 64}, "interval.*too long: a duration is at most 2\\^64 - 1 ns"),
    ("loop(keys=2,requests=10)", {"interval": 2 ** 63}, "interval .*below 2\\^63"),
    ("loop(keys=2,requests=10)", {"interval": "1e19req"}, "interval .*below 2\\^63"),
    # At most 65,536 fixed intervals (the cap was 2^20: 1.9 GB at interval="1req" on 1 M requests).
    ("loop(keys=2,requests=65537)", {"interval": "1req"}, "more than 65536 intervals"),
])
def test_bounds_are_value_errors(spec, kwargs, message):
    with pytest.raises(ValueError, match=message) as e:
        ssdcache.analyze(spec, **kwargs)
    assert "\n" not in str(e.value)
