"""Cache sizes as a share of the footprint, warm-up, and the trace options as
keywords, in `simulate`, `sweep` and `mrc`: the same numbers as the CLI, and
bad values are ValueErrors with the CLI's message."""

import gzip
import struct

import numpy as np
import pytest

import ssdcache

GEN = "zipf(alpha=0.8,keys=800,requests=4000,read=70%,seed=3)"


def test_simulate_takes_shares_and_warmups_as_the_cli(cli):
    r = ssdcache.simulate(GEN, "arc", cache="10%", warmup="25%").to_dict()
    (c,) = cli.json("--gen", GEN, "-p", "arc", "-c", "10%", "--warmup", "25%")
    for key in ("cache_share", "footprint_pages", "capacity_pages", "warmup", "warmup_requests", "hits",
                "requests", "dirty_writebacks"):
        assert r[key] == c[key], key
    assert r["warmup_requests"] == 1000 and r["requests"] == 3000
    assert r["capacity_pages"] == -(-r["footprint_pages"] // 10)
    # an int warm-up is a request count
    assert ssdcache.simulate(GEN, "lru", cache="64KiB", warmup=1000).to_dict()["warmup_requests"] == 1000


def test_a_share_runs_as_its_page_count():
    pages = np.array([1, 2, 3, 1, 2, 9, 9, 4, 5, 1] * 20, dtype=np.uint64)
    ops = np.array([0, 1] * 100, dtype=np.uint8)
    r = ssdcache.simulate((pages, ops), "lru", cache="50%").to_dict()
    assert (r["footprint_pages"], r["capacity_pages"], r["cache_share"]) == (6, 3, 0.5)
    explicit = ssdcache.simulate((pages, ops), "lru", cache=3 * 4096).to_dict()
    assert explicit["cache_share"] is None and explicit["hits"] == r["hits"]


def test_sweep_resolves_shares_per_trace(fin1):
    df = ssdcache.sweep([GEN, fin1], "lru,s3fifo", "1%,10%,64KiB", warmup="10%", progress=False)
    assert len(df) == 12
    for trace, rows in df.groupby("trace", sort=False):
        # (measured once per trace, reported with the runs sized by a share)
        shares = rows[rows["cache_share"].notna()]
        footprint = shares["footprint_pages"].iloc[0]
        assert len(shares) == 4 and (shares["footprint_pages"] == footprint).all()
        assert (rows["warmup"] == "10%").all()
        assert list(shares["capacity_pages"]) == [-(-footprint * int(s * 100) // 100) for s in shares["cache_share"]]
        one = ssdcache.simulate(trace if trace == GEN else fin1, "s3fifo", cache="10%", warmup="10%").to_dict()
        row = rows[(rows["policy"] == one["policy"]) & (rows["cache_share"] == 0.1)].iloc[0]
        assert row["hits"] == one["hits"] and row["capacity_pages"] == one["capacity_pages"]


def test_mrc_with_shares_and_warmup_equals_simulate():
    df = ssdcache.mrc(GEN, cache="5%,20%,64KiB", warmup="1000")
    assert list(df["cache_share"].fillna(-1)) == [0.05, 0.2, -1]
    assert df.attrs["warmup"] == "1000" and df.attrs["warmup_requests"] == 1000
    for row in df.to_dict("records"):
        r = ssdcache.simulate(GEN, "lru", cache=row["cache_bytes"], warmup=1000).to_dict()
        assert (row["hits"], row["request_hits"], row["dirty_writebacks"]) == (
            r["hits"], r["request_hits"], r["dirty_writebacks"])


def test_mrc_of_several_traces_is_one_frame_and_plots(fin1):
    df = ssdcache.mrc([GEN, fin1], points=4)
    assert list(df["trace"].unique()) == [GEN, fin1]
    assert len(df.attrs["curves"]) == 2
    fig = ssdcache.plot.miss_ratio_curve(df)
    assert len(fig.axes) >= 2


def test_trace_options_are_keywords(tmp_path):
    keys = [5, 6, 7, 5, 6, 8, 5, 9] * 10
    path = tmp_path / "keys.bin.gz"
    with gzip.open(path, "wb") as f:
        f.write(b"".join(struct.pack(">I", k) for k in keys))
    r = ssdcache.simulate(str(path), "lru", cache="3%", format="keys-u32be").to_dict()
    assert r["format"] == "keys-u32be" and r["requests"] == 80 and r["footprint_pages"] == 5
    df = ssdcache.sweep(str(path), "lru", "60%", format="keys-u32be", progress=False)
    assert df["capacity_pages"].iloc[0] == 3
    m = ssdcache.mrc(str(path), cache="100%", format="keys-u32be")
    assert m["cache_pages"].iloc[0] == 5 and m["hits"].iloc[0] == 80 - 5
    csv = tmp_path / "t.csv"
    csv.write_text("0,R,0,4096\n1,W,4096,4096\nbad line\n2,R,0,4096\n")
    cols = "time=0,op=1,offset=2,size=3"
    r = ssdcache.simulate(str(csv), "lru", cache="100%", format="csv", csv_columns=cols, skip_bad=True).to_dict()
    assert (r["skipped"], r["footprint_pages"], r["hits"]) == (1, 2, 1)
    with pytest.raises(ValueError, match=r"t\.csv:3: "):
        ssdcache.simulate(str(csv), "lru", format="csv", csv_columns=cols)


@pytest.mark.parametrize("kwargs, message", [
    ({"cache": "0%"}, "--cache 0%: must be more than 0%"),
    ({"cache": "101%"}, "at most 100%"),
    ({"cache": "x%"}, "--cache x%"),
    ({"warmup": "0%"}, "--warmup 0%"),
    ({"warmup": "100%"}, "less than 100%"),
    ({"warmup": "5m"}, "ambiguous"),
    ({"warmup": 0}, "more than zero"),
    ({"warmup": "4000"}, "leave none"),
    ({"warmup": "10000d"}, "leave none"),
    ({"warmup": 2.5}, "warmup must be"),
])
def test_bad_sizes_and_warmups_are_value_errors(kwargs, message):
    args = {"cache": "64KiB", **kwargs}
    with pytest.raises(ValueError, match=message):
        ssdcache.simulate(GEN, "lru", **args)
    with pytest.raises(ValueError, match=message):
        ssdcache.sweep(GEN, "lru", args.pop("cache"), progress=False, **args)
    if "warmup" in kwargs or "%" in str(kwargs.get("cache")):
        with pytest.raises(ValueError, match=message):
            ssdcache.mrc(GEN, cache=kwargs.get("cache", "64KiB"), warmup=kwargs.get("warmup"))


def test_a_share_on_a_stream_is_refused():
    with pytest.raises(ValueError, match="stream"):
        ssdcache.simulate({"path": "/dev/stdin", "format": "msr"}, "lru", cache="5%")


@pytest.mark.parametrize("kwargs, message", [
    # (2**70 was "not a whole number of bytes", 1e300 a 301-digit number)
    ({"cache": 2**70}, r"^--cache: size \"1180591620717411303424\": too large: a size is at most 2\^64 - 1 bytes"),
    ({"cache": 1e300}, r"^cache 1e\+300: too large: a size is at most 2\^64 - 1 bytes \(16 EiB\)$"),
    ({"cache": "1e9%"}, r"^--cache 1e9%: must be at most 100%$"),
    # (2**64 requests or ns became 2**64 - 1 without a word)
    ({"warmup": 2**64}, r"^--warmup 18446744073709551616: too large: a request count is at most 2\^64 - 1$"),
    ({"warmup": "18446744073709551616ns"}, r"too long: a duration is at most 2\^64 - 1 ns"),
    ({"interval": 2**64}, r"^--interval: duration \"18446744073709551616ns\": too long"),
    ({"queue_depth": 2**40, "device": "ssd"}, r"^--queue-depth 1099511627776: out of range 1\.\.=512$"),
    ({"repeat": 2**40}, r"^--repeat 1099511627776: too large: at most 4294967295$"),
    # (page=3 took 3.4 GB; op=99.99% flash 10,000 times the footprint)
    ({"page": 3}, r"^--page: size \"3\": a page must be a multiple of 512 B from 512 B to 1 MiB$"),
    ({"page": "1B"}, r"a page must be a multiple of 512 B"),
    ({"device": "ftl(op=99.99%)"}, r"device ftl, parameter op=99\.99%: must be at most 90%"),
    ({"device": "ftl(page=1B)"}, r"device ftl, parameter page=1B: a page must be"),
    ({"cache_device": "ftl(size=2TiB)"}, r"parameter size=2TiB: the device would have 536870912 pages"),
])
def test_values_out_of_range_say_so(kwargs, message):
    args = {"cache": "64KiB", **kwargs}
    with pytest.raises(ValueError, match=message) as e:
        ssdcache.simulate(GEN, "lru", **args)
    assert "\n" not in str(e.value) and len(str(e.value)) < 300, str(e.value)


@pytest.mark.parametrize("kwargs, message", [
    ({"page": 3}, r"a page must be a multiple of 512 B"),
    ({"warmup": 2**64}, r"too large: a request count is at most 2\^64 - 1"),
    ({"cache": [2**70]}, r"too large: a size is at most 2\^64 - 1 bytes"),
    ({"cache": [1e300]}, r"^cache 1e\+300: too large"),
    ({"cache": "1e9%"}, r"--cache 1e9%: must be at most 100%"),
])
def test_mrc_values_out_of_range_say_so(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ssdcache.mrc(GEN, **kwargs)


def test_a_trace_without_requests_is_a_value_error(tmp_path):
    # (simulate reported a hit ratio of 0 on 0 requests, mrc a curve of 0 misses)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    bad = tmp_path / "bad.txt"
    bad.write_text("not a request\nnor this\n")
    with pytest.raises(ValueError, match=r"empty\.txt: no requests to simulate$"):
        ssdcache.simulate(str(empty), format="ssdsim")
    with pytest.raises(ValueError, match=r"empty\.txt: no requests to simulate$"):
        ssdcache.simulate(ssdcache.load(str(empty), format="ssdsim"))
    with pytest.raises(ValueError, match=r"no requests to simulate \(2 malformed lines skipped\)$"):
        ssdcache.simulate(ssdcache.load(str(bad), format="ssdsim", skip_bad=True), device="ftl")
    with pytest.raises(ValueError, match=r"no requests to simulate"):
        ssdcache.sweep(str(empty), ["lru", "arc"], ["1MiB"], format="ssdsim", progress=False)
    with pytest.raises(ValueError, match=r"empty\.txt: no requests for a miss-ratio curve$"):
        ssdcache.mrc(str(empty), format="ssdsim")
    with pytest.raises(ValueError, match=r"no requests for a miss-ratio curve \(2 malformed lines skipped\)$"):
        ssdcache.mrc(str(bad), format="ssdsim", skip_bad=True)
    with pytest.raises(ValueError, match=r"no requests for a miss-ratio curve"):
        ssdcache.mrc(str(empty), format="ssdsim", sample="50%", policy=["lru", "arc"])
