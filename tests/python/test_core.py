"""The extension `ssdcache._core` on its own: `run` returns exactly the JSON text
`ssdcache sim --json` prints for the same inputs, arrays and loaded traces replay
like files, bad input raises ValueError with the CLI's message, and the GIL is
released while a simulation runs. (The `cli` fixture, in conftest.py, finds or
builds the `ssdcache` binary of this tree.)"""

import json
import pickle
import sys
import threading
import time

import numpy as np
import pytest

from ssdcache import _core

GEN = "mix(zipf(alpha=0.9,keys=4096,read=70%,unit=bytes),scan(length=1024,read=90%,unit=bytes),weights=85%/15%,requests=30k,seed=3)"


def cli_json_text(cli, *args) -> str:
    out = cli("sim", "--json", *args).stdout.strip()
    assert "\n" not in out, "one run, one line"
    return out


def cli_error(cli, *args) -> str:
    proc = cli("sim", "--json", *args, check=False)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert line.startswith("ssdcache: error: "), line
    return line[len("ssdcache: error: "):]


@pytest.mark.parametrize(
    "spec, flags",
    [
        ({"policy": "lru", "cache": "4MiB"}, []),
        ({"policy": "arc", "cache": 1 << 20, "page": "8KiB"}, ["--page", "8KiB"]),
        ({"policy": "cflru", "cache": "2MiB", "mode": "write-through"}, ["--mode", "write-through"]),
        ({"policy": "belady", "cache": "1MiB", "device": "ftl(nand=mlc2)"}, ["--device", "ftl(nand=mlc2)"]),
        (
            {"policy": "lru", "cache": "1MiB", "device": "hdd", "cache_device": "ssd", "interval": 10**6},
            ["--device", "hdd", "--cache-device", "ssd", "--interval", "1ms"],
        ),
        ({"policy": "lru", "cache": "1MiB", "device": "ssd", "queue_depth": 4, "iat_scale": 0.5},
         ["--device", "ssd", "--queue-depth", "4", "--iat-scale", "0.5"]),
        ({"policy": "2q", "cache": "1MiB", "repeat": 2}, ["--repeat", "2"]),
    ],
)
def test_run_is_the_clis_json(cli, spec, flags):
    cache = spec["cache"] if isinstance(spec["cache"], str) else str(spec["cache"])
    want = cli_json_text(cli, "--gen", GEN, "-p", spec["policy"], "-c", cache, *flags)
    got = _core.run({"gen": GEN}, spec)
    assert got == want


def test_numpy_scalars_are_numbers_bools_are_not():
    plain = {"policy": "lru", "cache": 1 << 20, "device": "ssd", "queue_depth": 4, "iat_scale": 0.5,
             "interval": 10**6, "repeat": 2}
    numpy = dict(plain, cache=np.int64(1 << 20), queue_depth=np.int32(4), iat_scale=np.float32(0.5),
                 interval=np.uint64(10**6), repeat=np.int8(2))
    assert _core.run({"gen": GEN}, numpy) == _core.run({"gen": GEN}, plain)
    for key in ("cache", "queue_depth", "iat_scale", "interval", "repeat"):
        with pytest.raises(ValueError, match=key):
            _core.run({"gen": GEN}, dict(plain, **{key: True}))


def test_file_trace_is_the_clis_json(cli, fin1):
    spec = {"policy": "lirs", "cache": "1MiB", "device": "ftl(type=hybrid,nand=mlc1)"}
    want = cli_json_text(cli, "-t", fin1, "-p", "lirs", "-c", "1MiB", "--device", "ftl(type=hybrid,nand=mlc1)")
    assert _core.run({"path": fin1}, spec) == want
    assert _core.run({"path": fin1, "format": "ssdsim", "skip_bad": False, "csv_columns": None}, spec) == want


def test_align_pages_is_the_clis_and_drops_read_for_write(cli, fin1):
    spec = {"policy": "lru", "cache": "1MiB", "page": "8KiB", "align_pages": True}
    want = cli_json_text(cli, "-t", fin1, "-p", "lru", "-c", "1MiB", "--page", "8KiB", "--align-pages")
    assert _core.run({"path": fin1}, spec) == want
    aligned = json.loads(want)
    unaligned = json.loads(_core.run({"path": fin1}, dict(spec, align_pages=False)))
    assert aligned["read_for_write"] == 0 < unaligned["read_for_write"]
    assert aligned["pages"] == unaligned["pages"]
    with pytest.raises(ValueError, match="align_pages"):
        _core.run({"path": fin1}, dict(spec, align_pages=1))


def test_arrays_replay_like_a_key_file(cli, tmp_path):
    rng = np.random.default_rng(7)
    keys = (rng.zipf(1.3, 20_000) % 5000).astype(np.uint64)
    (tmp_path / "k.txt").write_text("\n".join(map(str, keys)) + "\n")
    want = json.loads(cli_json_text(cli, "-t", str(tmp_path / "k.txt"), "-f", "keys", "-p", "s3fifo", "-c", "2MiB"))
    got = json.loads(_core.run(
        {"arrays": {"addr": keys, "op": np.zeros(len(keys), np.uint8)}, "unit": "pages", "name": "mine"},
        {"policy": "s3fifo", "cache": "2MiB"},
    ))
    assert (got.pop("trace"), got.pop("format")) == ("mine", "arrays")
    del want["trace"], want["format"]
    assert got == want


def test_array_columns_are_used():
    n = 1000
    addr = np.arange(n, dtype=np.uint64) % 100
    op = (np.arange(n) % 3).astype(np.uint8)  # read, write, trim
    spec = {"policy": "lru", "cache": "64KiB"}
    r = json.loads(_core.run({"arrays": {"addr": addr, "op": op}}, spec))
    assert (r["read_requests"], r["write_requests"], r["trim_requests"]) == (334, 333, 333)
    assert r["trace"] == "arrays" and r["pages"] == 667
    # len in pages; dev splits the address space; time feeds the series
    r = json.loads(_core.run({"arrays": {
        "addr": addr, "op": op, "len": np.full(n, 2, np.uint32), "dev": (np.arange(n) % 2).astype(np.uint32),
        "time": np.arange(n, dtype=np.uint64) * 1000 + 5_000_000,
    }}, dict(spec, interval=100_000)))
    assert r["pages"] == 2 * 667
    assert len(r["series"]) == 10  # 1 ms of trace time, rebased to the first request, in 0.1 ms steps
    # byte unit: a 4 KiB request at a byte offset
    r = json.loads(_core.run({"arrays": {"addr": addr * 4096, "op": op, "len": np.full(n, 4096, np.uint32)},
                              "unit": "bytes"}, spec))
    assert r["pages"] == 667
    # strided views work
    wide = np.repeat(addr, 2)
    r2 = json.loads(_core.run({"arrays": {"addr": wide[::2], "op": op}}, spec))
    r1 = json.loads(_core.run({"arrays": {"addr": addr, "op": op}}, spec))
    assert r1 == r2


def test_loaded_trace_replays_and_pickles(fin1):
    spec = {"policy": "arc", "cache": "2MiB"}
    t = _core.load({"path": fin1})
    assert (t.format, t.requests, t.unit, t.skipped) == ("ssdsim", 10_000, "bytes", 0)
    assert t.name == fin1 and len(t) == 10_000
    assert _core.run(t, spec) == _core.run({"path": fin1}, spec)
    assert _core.load(t) is t
    back = pickle.loads(pickle.dumps(t))
    assert isinstance(back, _core.Trace) and repr(back) == repr(t)
    assert _core.run(back, spec) == _core.run(t, spec)
    arrays = {"arrays": {"addr": np.arange(50, dtype=np.uint64), "op": np.ones(50, np.uint8)}, "name": "a"}
    a = _core.load(arrays)
    assert (a.name, a.format, a.requests, a.unit) == ("a", "arrays", 50, "pages")
    assert _core.run(pickle.loads(pickle.dumps(a)), spec) == _core.run(arrays, spec)
    g = _core.load({"gen": GEN})
    assert (g.format, g.requests) == ("gen", 30_000)


@pytest.mark.parametrize(
    "trace, spec, flags",
    [
        ({"gen": GEN}, {"policy": "nosuch", "cache": "1MiB"}, ["--gen", GEN, "-p", "nosuch", "-c", "1MiB"]),
        ({"gen": GEN}, {"policy": "lru(k=1)", "cache": "1MiB"}, ["--gen", GEN, "-p", "lru(k=1)", "-c", "1MiB"]),
        ({"gen": GEN}, {"policy": "lru", "cache": "lots"}, ["--gen", GEN, "-p", "lru", "-c", "lots"]),
        ({"gen": GEN}, {"policy": "lru", "cache": "1KiB"}, ["--gen", GEN, "-p", "lru", "-c", "1KiB"]),
        ({"gen": GEN}, {"policy": "lru", "cache": "1MiB", "mode": "sideways"},
         ["--gen", GEN, "-p", "lru", "-c", "1MiB", "--mode", "sideways"]),
        ({"gen": GEN}, {"policy": "lru", "cache": "1MiB", "device": "floppy"},
         ["--gen", GEN, "-p", "lru", "-c", "1MiB", "--device", "floppy"]),
        ({"gen": GEN}, {"policy": "lru", "cache": "1MiB", "queue_depth": 0, "device": "ssd"},
         ["--gen", GEN, "-p", "lru", "-c", "1MiB", "--queue-depth", "0", "--device", "ssd"]),
        ({"gen": "zipf(alpha=x)"}, {"policy": "lru", "cache": "1MiB"},
         ["--gen", "zipf(alpha=x)", "-p", "lru", "-c", "1MiB"]),
        ({"path": "/no/such/trace.csv"}, {"policy": "lru", "cache": "1MiB"},
         ["-t", "/no/such/trace.csv", "-p", "lru", "-c", "1MiB"]),
    ],
)
def test_errors_are_value_errors_with_the_clis_message(cli, trace, spec, flags):
    with pytest.raises(ValueError) as e:
        _core.run(trace, spec)
    assert str(e.value) == cli_error(cli, *flags)


def test_malformed_trace_line_is_the_clis_message(cli, tmp_path):
    bad = tmp_path / "bad.ssdsim"
    bad.write_text("0 0 8 8 1\n10 0 oops 8 0\n")
    flags = ["-t", str(bad), "-f", "ssdsim", "-p", "lru", "-c", "1MiB"]
    with pytest.raises(ValueError) as e:
        _core.run({"path": str(bad), "format": "ssdsim"}, {"policy": "lru", "cache": "1MiB"})
    assert str(e.value) == cli_error(cli, *flags)
    with pytest.raises(ValueError) as e:
        _core.load({"path": str(bad), "format": "ssdsim"})
    assert str(e.value) == cli_error(cli, *flags)
    t = _core.load({"path": str(bad), "format": "ssdsim", "skip_bad": True})
    assert (t.requests, t.skipped) == (1, 1)


@pytest.mark.parametrize(
    "trace, spec, words",
    [
        ({"gen": GEN}, {"cache": "1MiB"}, ["policy"]),
        ({"gen": GEN}, {"policy": "lru"}, ["cache"]),
        ({"gen": GEN}, {"policy": "lru", "cache": "1MiB", "size": 3}, ["unknown key", "size"]),
        ({"gen": GEN}, {"policy": "lru", "cache": [1]}, ["cache", "list"]),
        ({"gen": GEN}, "lru", ["spec must be a dict"]),
        ({"gen": GEN, "path": "x"}, {"policy": "lru", "cache": "1MiB"}, ["exactly one"]),
        ({"gen": GEN, "format": "spc"}, {"policy": "lru", "cache": "1MiB"}, ["unknown key", "format"]),
        ({"path": "x", "format": "nope"}, {"policy": "lru", "cache": "1MiB"}, ["unknown trace format"]),
        ("zipf", {"policy": "lru", "cache": "1MiB"}, ["trace must be a dict"]),
        ({"arrays": {"addr": np.arange(3, dtype=np.int64), "op": np.zeros(3, np.uint8)}},
         {"policy": "lru", "cache": "1MiB"}, ['arrays["addr"]', "uint64", "int64"]),
        ({"arrays": {"addr": [1, 2, 3], "op": np.zeros(3, np.uint8)}},
         {"policy": "lru", "cache": "1MiB"}, ['arrays["addr"]', "numpy array", "list"]),
        ({"arrays": {"addr": np.arange(3, dtype=np.uint64), "op": np.zeros(2, np.uint8)}},
         {"policy": "lru", "cache": "1MiB"}, ['arrays["op"]', "2 elements"]),
        ({"arrays": {"addr": np.arange(3, dtype=np.uint64), "op": np.zeros(3, np.uint8),
                     "len": np.ones(3, np.uint64)}},
         {"policy": "lru", "cache": "1MiB"}, ['arrays["len"]', "uint32"]),
        ({"arrays": {"addr": np.zeros((3, 1), dtype=np.uint64), "op": np.zeros(3, np.uint8)}},
         {"policy": "lru", "cache": "1MiB"}, ['arrays["addr"]', "one-dimensional"]),
        ({"arrays": {"addr": np.arange(3, dtype=np.uint64), "op": np.array([0, 1, 5], np.uint8)}},
         {"policy": "lru", "cache": "1MiB"}, ['arrays["op"][2] = 5']),
        ({"arrays": {"addr": np.arange(3, dtype=np.uint64)}}, {"policy": "lru", "cache": "1MiB"}, ['"op"']),
        ({"arrays": {"addr": np.arange(3, dtype=np.uint64), "op": np.zeros(3, np.uint8), "size": 1}},
         {"policy": "lru", "cache": "1MiB"}, ["unknown key", "size"]),
        ({"arrays": {"addr": np.arange(3, dtype=np.uint64), "op": np.zeros(3, np.uint8)}, "unit": "blocks"},
         {"policy": "lru", "cache": "1MiB"}, ["blocks", "pages"]),
    ],
)
def test_bad_arguments_are_value_errors(trace, spec, words):
    with pytest.raises(ValueError) as e:
        _core.run(trace, spec)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_catalogues(cli):
    policies = _core.policies()
    names = [p["name"] for p in policies]
    assert names[0] == "lru" and "belady" in names and "abm" in names
    listing = cli("policies").stdout
    assert all(f"  {n} " in listing for n in names)
    for p in policies:
        assert set(p) == {"name", "about", "params"}
        assert p["params"][-1]["name"] == "mode"
        assert all(set(q) == {"name", "default", "about"} for q in p["params"])
    devices = _core.devices()
    assert {"ftl", "hdd", "ssd"} <= {d["name"] for d in devices}
    assert all(set(d) == {"name", "about", "params"} for d in devices)
    gens = {g["name"]: g for g in _core.generators()}
    # the same shape as policies() and devices()
    assert all(set(g) == {"name", "about", "params"} for g in gens.values())
    assert "zipf" in gens and {"name": "alpha", "default": "1.0"}.items() <= gens["zipf"]["params"][0].items()
    assert _core.modes() == ["write-back", "write-through", "write-around", "write-only", "read-only"]
    assert _core.__version__ == cli("--version").stdout.split()[-1]


def test_run_releases_the_gil():
    """While a simulation runs, another Python thread keeps running at its usual pace."""
    ticks = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks[0] += 1

    old = sys.getswitchinterval()
    # Were the GIL held, the spinner could run only until the next switch: 0.1 ms.
    sys.setswitchinterval(1e-4)
    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        time.sleep(0.05)
        start = ticks[0]
        time.sleep(0.2)
        rate = (ticks[0] - start) / 0.2
        before, t0 = ticks[0], time.perf_counter()
        report = _core.run({"gen": "zipf(alpha=0.8,keys=200k,requests=3M)"}, {"policy": "lirs", "cache": "8MiB"})
        elapsed, during = time.perf_counter() - t0, ticks[0] - before
    finally:
        stop.set()
        spinner.join()
        sys.setswitchinterval(old)
    assert json.loads(report)["requests"] == 3_000_000
    assert elapsed > 0.02, "the run is too short to tell"
    assert during > 0.1 * rate * elapsed, (during, rate, elapsed)
