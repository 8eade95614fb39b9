"""numpy-array traces give the same numbers as the same requests read from a file."""

import gzip

import numpy as np
import pandas as pd
import pytest

import ssdcache

# Report fields that name the trace rather than count anything.
NAMES = {"trace", "format"}


def counters(r) -> dict:
    d = r.to_dict() if hasattr(r, "to_dict") else dict(r)
    return {k: v for k, v in d.items() if k not in NAMES}


def frame_counters(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=list(NAMES)).reset_index(drop=True)


def test_page_stream_equals_keys_file(cli, fin1, tmp_path):
    """A real trace's page stream: `trace convert --to keys` as a file and as an array."""
    keys = tmp_path / "fin1.keys"
    cli("trace", "convert", fin1, keys, "--to", "keys")
    pages = np.loadtxt(keys, dtype=np.uint64, comments="#")
    assert len(pages) > 10_000
    ops = np.zeros(len(pages), np.uint8)
    policies, caches = ["lru", "arc", "lirs", "belady"], ["256KiB", "1MiB", "4MiB"]
    from_file = ssdcache.sweep(str(keys), policies, caches, progress=False)
    from_arrays = ssdcache.sweep({"pages": pages, "ops": ops}, policies, caches, progress=False)
    assert (from_arrays["trace"] == "arrays").all()
    pd.testing.assert_frame_equal(frame_counters(from_file), frame_counters(from_arrays))
    # and the tuple form, ops as letters
    r = ssdcache.simulate((pages, np.full(len(pages), "r")), policy="arc", cache="1MiB")
    assert counters(r) == counters(from_file.iloc[4])


def _ssdsim_arrays(path):
    """Parses an ssdsim text trace (time_ns dev lba_sectors size_sectors op, 1 = read) with numpy."""
    with gzip.open(path, "rt") as f:
        a = np.loadtxt(f, dtype=np.int64)
    return {
        "addr": (a[:, 2] * 512).astype(np.uint64),
        "sizes": (a[:, 3] * 512).astype(np.uint32),
        "ops": np.where(a[:, 4] == 1, 0, 1).astype(np.uint8),
        "times": (a[:, 0] - a[:, 0].min()).astype(np.uint64),
        "devs": a[:, 1].astype(np.uint32),
        "unit": "bytes",
        "name": "fin1-arrays",
    }


@pytest.mark.parametrize("device", [None, "ftl(type=hybrid,nand=mlc1,page=4KiB,block=256KiB)", "hdd"])
def test_byte_arrays_equal_the_real_trace(fin1, device):
    """Financial1 (22 ASUs, partial-page writes) as byte-unit arrays with devices and times."""
    arrays = _ssdsim_arrays(fin1)
    policies = ["lru", "cflru", "fab", "belady"]
    a = ssdcache.sweep(fin1, policies, ["1MiB", "4MiB"], devices=device, progress=False)
    b = ssdcache.sweep(arrays, policies, ["1MiB", "4MiB"], devices=device, progress=False)
    assert (b["trace"] == "fin1-arrays").all()
    assert a["read_for_write"].sum() > 0
    pd.testing.assert_frame_equal(frame_counters(a), frame_counters(b))


def test_byte_arrays_with_a_series_equal_the_real_trace(fin1):
    arrays = _ssdsim_arrays(fin1)
    a = ssdcache.simulate(fin1, policy="lru", cache="1MiB", device="ssd", interval="10min")
    b = ssdcache.simulate(arrays, policy="lru", cache="1MiB", device="ssd", interval="10min")
    assert counters(a) == counters(b)


def test_page_arrays_equal_a_csv_file(tmp_path):
    """Page-unit arrays with writes, trims, sizes and times, against the same requests as a CSV file."""
    rng = np.random.default_rng(7)
    n = 20_000
    pages = (rng.zipf(1.3, n) % 5000).astype(np.uint64)
    ops = rng.choice([0, 1, 2], n, p=[0.6, 0.38, 0.02]).astype(np.uint8)
    sizes = rng.integers(1, 9, n).astype(np.uint32)
    times = np.cumsum(rng.integers(0, 2_000_000, n)).astype(np.uint64)
    times -= times[0]
    path = tmp_path / "reqs.csv"
    letters = np.array(["R", "W", "D"])[ops]
    with open(path, "w") as f:
        f.write("time_ns,op,page,pages\n")
        for t, o, p, s in zip(times, letters, pages, sizes):
            f.write(f"{t},{o},{p},{s}\n")
    file_trace = ssdcache.load(path, format="csv",
                               csv_columns="time=0,op=1,offset=2,size=3,header=1,time_unit=ns,"
                                           "offset_unit=4KiB,size_unit=4KiB")
    assert file_trace.requests == n
    arrays = {"pages": pages, "ops": ops, "sizes": sizes, "times": times}
    for spec in ["lru", "arc", "cflru", "s3fifo"]:
        for mode in ["write-back", "write-through", "read-only"]:
            a = ssdcache.simulate(file_trace, policy=spec, cache="2MiB", mode=mode)
            b = ssdcache.simulate(arrays, policy=spec, cache="2MiB", mode=mode)
            assert counters(a) == counters(b), (spec, mode)
    assert a.trim_requests > 0 and a.write_requests > 0
    # the same arrays as a tuple, as a DataFrame, and with ops as strings
    t = ssdcache.simulate((pages, ops, sizes, times), policy="lru", cache="2MiB")
    d = ssdcache.simulate(pd.DataFrame(arrays), policy="lru", cache="2MiB")
    s = ssdcache.simulate({"pages": pages, "ops": np.array(["r", "w", "t"])[ops], "sizes": sizes, "times": times},
                          policy="lru", cache="2MiB")
    assert counters(t) == counters(d) == counters(s)


def test_arrays_accept_common_dtypes():
    pages = [1, 2, 3, 1, 2, 3, 4]
    base = ssdcache.simulate({"pages": np.array(pages, np.uint64), "ops": np.zeros(7, np.uint8)}, cache="16KiB")
    for p in (pages, np.array(pages, np.int32), np.array(pages, np.float64)):
        for o in ([0] * 7, np.zeros(7, bool), ["read"] * 7, np.zeros(7, np.int64)):
            assert counters(ssdcache.simulate({"pages": p, "ops": o}, cache="16KiB")) == counters(base)
    td = ssdcache.simulate({"pages": pages, "ops": [0] * 7, "times": np.arange(7).astype("timedelta64[s]")},
                           cache="16KiB")
    assert td.requests == 7


@pytest.mark.parametrize("arrays, match", [
    ({"pages": [1, 2, 3], "ops": [0, 1]}, "'ops' has 2 entries"),
    ({"pages": [1, 2, 3], "ops": [0, 1, 0], "sizes": [1, 1]}, "sizes"),
    ({"pages": [1, 2, 3], "ops": [0, 1, 0], "times": [1, 2]}, "times"),
    ({"pages": [1, -2, 3], "ops": [0, 1, 0]}, "pages"),
    ({"pages": [1.5, 2, 3], "ops": [0, 1, 0]}, "pages"),
    ({"pages": ["a", "b"], "ops": [0, 1]}, "pages"),
    ({"pages": [1, 2], "ops": [0, 7]}, "ops"),
    ({"pages": [1, 2], "ops": ["r", "x"]}, "'x'"),
    ({"pages": [1, 2], "ops": [0, 1], "sizes": [1, 0]}, "sizes"),
    ({"pages": [1, 2], "ops": [0, 1], "sizes": [1, 2**33]}, "sizes"),
    ({"pages": [1, 2]}, "ops"),
    ({"ops": [0, 1]}, "pages"),
    ({"pages": [1, 2], "ops": [0, 1], "colour": [1, 2]}, "colour"),
    ({"pages": [1, 2], "addr": [1, 2], "ops": [0, 1]}, "same array"),
    ({"pages": [[1, 2]], "ops": [[0, 1]]}, "one-dimensional"),
    ({"pages": [1, 2], "ops": [0, 1], "unit": "sectors"}, "unit"),
])
def test_bad_arrays_raise_value_error(arrays, match):
    with pytest.raises(ValueError, match=match):
        ssdcache.simulate(arrays, cache="16KiB")
