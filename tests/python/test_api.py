"""The Python API: simulate, Result, load, sweep, catalogues, errors, the GIL."""

import json
import pickle
import threading
import time

import numpy as np
import pandas as pd
import pytest

import ssdcache

GEN = "zipf(alpha=0.9,keys=2000,requests=20000,read=70%,seed=3)"


def test_simulate_returns_every_counter(fin1):
    r = ssdcache.simulate(fin1, policy="arc", cache="1MiB")
    d = r.to_dict()
    assert d["policy"] == "arc" and d["mode"] == "write-back" and d["trace"] == fin1
    assert r.cache_bytes == 1 << 20 and r.page_bytes == 4096 and r.capacity_pages == 256
    for key, value in d.items():
        assert getattr(r, key) == value
        assert r[key] == value
    assert r.keys() == list(d)
    assert r.requests == 10_000
    assert r.hits + r.misses == r.pages
    assert r.hit_ratio == pytest.approx(r.hits / r.pages)
    assert r.backing_accesses == 2 * r.read_replace_dirty + r.read_overwrite_clean + r.write_replace_dirty
    assert r.series is None
    assert "execution_time_ns" not in r
    with pytest.raises(AttributeError, match="execution_time_ns"):
        r.execution_time_ns
    assert "arc" in repr(r) and "1MiB" in repr(r) and "hit_ratio=" in repr(r)


def test_result_is_read_only_and_pickles(fin1):
    r = ssdcache.simulate(fin1, policy="lru", cache="1MiB")
    with pytest.raises(AttributeError):
        r.hit_ratio = 1.0
    d = r.to_dict()
    d["hits"] = -1  # a copy
    assert r.hits != -1
    assert pickle.loads(pickle.dumps(r)) == r
    assert ssdcache.Result.from_json(json.dumps(r.to_dict())) == r


def test_defaults_are_the_contracts(fin1):
    a = ssdcache.simulate(fin1)
    b = ssdcache.simulate(fin1, policy="lru", cache="64MiB", page="4KiB", mode="write-back")
    assert a == b
    assert a.policy == "lru" and a.cache_bytes == 64 << 20


def test_sizes_as_bytes_or_text(fin1):
    a = ssdcache.simulate(fin1, policy="lru", cache="1MiB", page="8KiB")
    b = ssdcache.simulate(fin1, policy="lru", cache=1 << 20, page=8192)
    c = ssdcache.simulate(fin1, policy="lru", cache=np.int64(1 << 20), page="8KiB")
    assert a == b == c
    assert a.capacity_pages == 128


def test_generator_spec_and_series():
    r = ssdcache.simulate("desktop(days=2,per_day=2k,seed=2)", policy="lru", cache="64MiB", device="hdd",
                          cache_device="ssd", interval="1d")
    assert r.trace.startswith("desktop(") and r.format == "gen"
    s = r.series
    assert isinstance(s, pd.DataFrame) and len(s) == 2
    assert s.index.name == "interval" and list(s.index) == [0, 1]
    assert list(s.columns)[:3] == ["start_ns", "requests", "bytes"]
    assert s["requests"].sum() == r.requests
    assert r.to_dict()["series"][0]["requests"] == s["requests"].iloc[0]


def test_load_shares_one_parse(fin1):
    t = ssdcache.load(fin1)
    assert t.name == fin1 and t.format == "ssdsim" and t.requests == 10_000 and len(t) == 10_000
    assert t.unit == "bytes"
    assert "10,000" in repr(t)
    for p in ("lru", "arc"):
        assert ssdcache.simulate(t, policy=p, cache="1MiB") == ssdcache.simulate(fin1, policy=p, cache="1MiB")
    # a Trace pickles as its source and loads again
    t2 = pickle.loads(pickle.dumps(t))
    assert t2.requests == t.requests
    assert ssdcache.simulate(t2, cache="1MiB") == ssdcache.simulate(t, cache="1MiB")
    assert ssdcache.load(t) is t


def test_load_generator_and_arrays():
    t = ssdcache.load(GEN)
    assert t.requests == 20_000
    assert ssdcache.simulate(t, cache="1MiB") == ssdcache.simulate(GEN, cache="1MiB")
    a = ssdcache.load({"pages": np.arange(10), "ops": np.zeros(10, np.uint8)}, name="ten")
    assert a.requests == 10 and a.unit == "pages" and a.name == "ten"
    assert ssdcache.simulate(a, cache="64KiB").trace == "ten"


def test_core_traces_are_traces_too():
    from ssdcache import _core

    raw = _core.load({"gen": GEN})
    assert ssdcache.simulate(raw, cache="1MiB") == ssdcache.simulate(GEN, cache="1MiB")
    t = ssdcache.load(raw)
    assert t.requests == 20_000 and t.source is None
    assert ssdcache.simulate(pickle.loads(pickle.dumps(t)), cache="1MiB") == ssdcache.simulate(t, cache="1MiB")
    df = ssdcache.sweep([raw, t], "lru", "1MiB", progress=False)
    assert df.iloc[0].to_dict() == df.iloc[1].to_dict()


def test_served_columns_beside_the_hit_ratio():
    """Paper 000's measure: the share served without the backing device, in the
    report, the DataFrame and the series; a read-only cache's invalidating
    writes are not hits, a write-through write hit is a hit but not served."""
    df = ssdcache.sweep(GEN, ["lru(mode=read-only)", "lru(mode=write-through)", "segment-lru(mode=read-only)"],
                        "1MiB", interval="1s", progress=False)
    for col in ("served_pages", "served_ratio", "served_bytes", "served_bytes_ratio", "write_hits_to_backing"):
        assert col in df.columns
    ro, wt, seg = (r for _, r in df.iterrows())
    assert ro["served_ratio"] == pytest.approx(ro["served_pages"] / ro["pages"])
    assert ro["served_bytes_ratio"] == pytest.approx(ro["served_bytes"] / (ro["read_bytes"] + ro["write_bytes"]))
    assert ro["write_hits"] == 0 and ro["hits"] == ro["served_pages"] and ro["invalidations"] > 0
    assert wt["write_hits_to_backing"] == wt["write_hits"] > 0
    assert wt["served_pages"] == wt["read_hits"] < wt["hits"]
    assert seg["write_hits"] == 0 and seg["served_pages"] == seg["read_hits"]
    series = df.attrs["series"][0]
    assert sum(b["served_pages"] for b in series) == ro["served_pages"]
    assert all(b["served_ratio"] == pytest.approx(b["served_pages"] / b["pages"]) for b in series)


def test_catalogues():
    pols = ssdcache.policies()
    names = [p["name"] for p in pols]
    for n in ("lru", "arc", "belady", "cflru", "qlru", "abm", "pwc", "segment-lru"):
        assert n in names
    arc = pols[names.index("2q")]
    assert {"name", "about", "params"} <= set(arc)
    assert any(p["name"] == "kin" for p in arc["params"])
    assert {"ftl", "hdd", "ssd"} <= {d["name"] for d in ssdcache.devices()}
    gens = {g["name"]: g for g in ssdcache.generators()}
    assert {"zipf", "uniform", "desktop", "iometer-a"} <= set(gens)
    assert any(p["name"] == "alpha" and p["default"] == "1.0" for p in gens["zipf"]["params"])
    assert ssdcache.modes() == ["write-back", "write-through", "write-around", "write-only", "read-only"]
    assert isinstance(ssdcache.__version__, str)


def test_help_explains_the_api():
    for f in (ssdcache.simulate, ssdcache.sweep, ssdcache.load, ssdcache.plot.miss_ratio_curve,
              ssdcache.plot.normalised_bars, ssdcache.plot.device_cost_bars, ssdcache.plot.series,
              ssdcache.policies):
        doc = f.__doc__
        assert doc and "Example" in doc, f.__name__
    for word in ("traces", "policies", "caches", "executor", "ray", "DataFrame", "jobs", "progress"):
        assert word in ssdcache.sweep.__doc__


# --- sweep --------------------------------------------------------------------------------

def test_sweep_rows_equal_single_runs(fin1):
    df = ssdcache.sweep(fin1, ["lru", "arc", "2q(kin=25%,kout=50%)"], ["1MiB", "4MiB"], progress=False)
    assert len(df) == 6
    assert list(df["policy"]) == ["lru", "lru", "arc", "arc", "2q(kin=25%,kout=50%)", "2q(kin=25%,kout=50%)"]
    assert list(df["cache_bytes"]) == [1 << 20, 4 << 20] * 3
    one = ssdcache.simulate(fin1, policy="arc", cache="4MiB").to_dict()
    assert list(df.columns) == list(one)
    assert df.iloc[3].to_dict() == one
    assert df["hits"].dtype.kind == "i" and df["hit_ratio"].dtype.kind == "f"


def test_sweep_string_lists_split_like_the_cli(fin1):
    a = ssdcache.sweep(fin1, "lru,2q(kin=25%,kout=50%)", "1MiB,4MiB", progress=False)
    b = ssdcache.sweep([fin1], ["lru", "2q(kin=25%,kout=50%)"], ["1MiB", 4 << 20], jobs=1, progress=False)
    pd.testing.assert_frame_equal(a, b)


def test_sweep_order_is_traces_policies_caches_pages_modes_devices(fin1, msr):
    df = ssdcache.sweep([fin1, msr], ["lru", "fifo"], ["1MiB"], pages=["4KiB", "8KiB"],
                        modes=["write-back", "write-through"], devices=[None, "ssd"], progress=False)
    assert len(df) == 2 * 2 * 2 * 2 * 2
    keys = list(zip(df["trace"], df["policy"], df["page_bytes"], df["mode"], df["device"].fillna("-")))
    expected = [(t, p, pg, m, d) for t in (fin1, msr) for p in ("lru", "fifo") for pg in (4096, 8192)
                for m in ("write-back", "write-through") for d in ("-", "ssd")]
    assert keys == expected
    # runs without a device have no device columns: NaN there
    assert df.loc[df["device"].isna(), "execution_time_ns"].isna().all()
    assert df.loc[df["device"].notna(), "execution_time_ns"].gt(0).all()


def test_sweep_with_interval_keeps_series(fin1):
    df = ssdcache.sweep(fin1, ["lru", "arc"], "1MiB", interval="10min", progress=False)
    assert "series" not in df.columns
    assert len(df.attrs["series"]) == 2
    assert df.attrs["series"][1] == ssdcache.simulate(fin1, policy="arc", cache="1MiB", interval="10min").to_dict()["series"]


def test_sweep_progress_bar(fin1, capsys):
    ssdcache.sweep(fin1, ["lru", "arc"], "1MiB", progress=True)
    err = capsys.readouterr().err
    assert "ssdcache sweep" in err and "/2" in err
    ssdcache.sweep(fin1, ["lru", "arc"], "1MiB", progress=False)
    assert capsys.readouterr().err == ""


def test_sweep_mixes_trace_kinds(fin1):
    pages = np.arange(5000, dtype=np.uint64) % 700
    arrays = {"pages": pages, "ops": np.where(pages % 3 == 0, 1, 0), "name": "mod700"}
    df = ssdcache.sweep([fin1, GEN, arrays, ssdcache.load(fin1)], ["lru"], ["1MiB"], progress=False)
    assert list(df["trace"]) == [fin1, GEN, "mod700", fin1]
    assert df.iloc[0].to_dict() == df.iloc[3].to_dict()


# --- errors -------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    (dict(policy="nosuchpolicy"), "nosuchpolicy"),
    (dict(policy="2q(kin=200%)"), "kin"),
    (dict(policy="lru(bogus=1)"), "bogus"),
    (dict(cache="64XB"), "64XB"),
    (dict(cache="lots"), "lots"),
    (dict(cache=0), "cache"),
    (dict(cache="1KiB"), "smaller than one page"),
    (dict(page="4KB7"), "4KB7"),
    (dict(mode="write-sometimes"), "write-sometimes"),
    (dict(device="floppy"), "floppy"),
    (dict(device="ftl(nand=qlc9)"), "qlc9"),
    (dict(interval="soon"), "soon"),
    (dict(queue_depth=0, device="ssd"), "1..=512"),
    (dict(queue_depth=32), "device"),
    (dict(repeat=0), "repeat"),
    (dict(policy=None), "policy"),
    (dict(cache=[1, 2]), "cache"),
])
def test_bad_arguments_raise_value_error(fin1, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ssdcache.simulate(fin1, **kwargs)


def test_missing_file_and_unknown_generator(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        ssdcache.simulate(str(tmp_path / "nope.csv"))
    with pytest.raises(ValueError, match="not found"):
        ssdcache.simulate(tmp_path / "nope.csv")
    with pytest.raises(ValueError, match="zipff"):
        ssdcache.simulate("zipff(alpha=0.9)")
    with pytest.raises(ValueError, match="alpah"):
        ssdcache.simulate("zipf(alpah=0.9)")
    with pytest.raises(ValueError, match="directory"):
        ssdcache.simulate(tmp_path)
    with pytest.raises(ValueError, match="not found"):
        ssdcache.load(str(tmp_path / "nope.csv"))
    with pytest.raises(ValueError, match="cannot use"):
        ssdcache.simulate(3.5)


def test_malformed_trace_line(tmp_path):
    p = tmp_path / "bad.ssdsim"
    p.write_text("0 0 100 8 1\n1000 0 zz 8 1\n2000 0 300 8 0\n")
    with pytest.raises(ValueError, match="bad.ssdsim"):
        ssdcache.simulate(ssdcache.load(p, format="ssdsim"))
    with pytest.raises(ValueError, match="bad.ssdsim"):
        ssdcache.load(p, format="ssdsim")
    t = ssdcache.load(p, format="ssdsim", skip_bad=True)
    r = ssdcache.simulate(t, cache="1MiB")
    assert r.requests == 2 and r.skipped == 1 and t.skipped == 1
    with pytest.raises(ValueError, match="format"):
        ssdcache.load(p, format="nosuchformat")
    with pytest.raises(ValueError, match="csv_columns"):
        ssdcache.load(p, format="csv")


def test_sweep_checks_every_spec_before_running(fin1):
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="nosuchpolicy"):
        ssdcache.sweep(fin1, ["lru", "arc", "nosuchpolicy"], ["1MiB", "2MiB"], progress=False)
    with pytest.raises(ValueError, match="9QiB"):
        ssdcache.sweep(fin1, ["lru"], ["1MiB", "9QiB"], progress=False)
    with pytest.raises(ValueError, match="floppy"):
        ssdcache.sweep(fin1, ["lru"], ["1MiB"], devices=[None, "floppy"], progress=False)
    with pytest.raises(ValueError, match="not found"):
        ssdcache.sweep([fin1, fin1 + ".missing"], ["lru"], ["1MiB"], progress=False)
    assert time.perf_counter() - t0 < 30
    with pytest.raises(ValueError, match="intervall"):
        ssdcache.sweep(fin1, ["lru"], ["1MiB"], intervall="1d")
    with pytest.raises(ValueError, match="executor"):
        ssdcache.sweep(fin1, ["lru"], ["1MiB"], executor="spark")
    with pytest.raises(ValueError, match="jobs"):
        ssdcache.sweep(fin1, ["lru"], ["1MiB"], jobs=0)
    with pytest.raises(ValueError, match="policies"):
        ssdcache.sweep(fin1, [], ["1MiB"])


# --- the GIL ------------------------------------------------------------------------------

def test_simulation_runs_without_the_gil():
    """While one thread simulates, another keeps running Python code."""
    trace = ssdcache.load("zipf(alpha=0.8,keys=200k,requests=2M,seed=5)")

    def spin(seconds):
        n, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            n += 1
        return n / seconds

    alone = spin(0.2)
    done = threading.Event()
    elapsed = []

    def work():
        t0 = time.perf_counter()
        for _ in range(50):
            ssdcache.simulate(trace, policy="arc", cache="64MiB")
            if time.perf_counter() - t0 > 0.5:
                break
        elapsed.append(time.perf_counter() - t0)
        done.set()

    th = threading.Thread(target=work)
    count, t0 = 0, time.perf_counter()
    th.start()
    while not done.is_set():
        count += 1
    th.join()
    during = count / (time.perf_counter() - t0)
    assert elapsed[0] > 0.2
    # With the GIL held for a whole run, this thread would barely run at all.
    assert during > 0.1 * alone, (during, alone)
