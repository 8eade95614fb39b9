"""Object mode (`unit="object"`, `--unit object`): Python equals the CLI, and bad input is a
one-line error (exit 2; ValueError in Python) naming the value and where it is."""

import json

import pytest

import ssdcache

CDN = "adaptsize-cdn-sample/request.trace.xz"


@pytest.fixture(scope="session")
def cdn(traces) -> str:
    return str(traces / CDN)


def test_simulate_and_sweep_equal_the_cli(cli, cdn):
    want = cli.json("--unit", "object", "-t", cdn, "-p", "lru,gdsf", "-c", "1%,10MiB")
    df = ssdcache.sweep(cdn, ["lru", "gdsf"], ["1%", "10MiB"], unit="object", progress=False)
    assert df.to_dict("records") == want
    r = ssdcache.simulate(cdn, policy="gdsf", cache="10MiB", unit="object")
    assert r.to_dict() == want[3]
    assert r.unit == "object" and r.too_large == 0 and 0 < r.byte_miss_ratio < 1


def test_mrc_equals_the_cli_and_the_simulator(cli, cdn):
    out = cli("mrc", "--unit", "object", "-t", cdn, "--cache", "1MiB,10MiB,100MiB", "--json").stdout
    want = json.loads(out)["points"]
    df = ssdcache.mrc(cdn, cache=["1MiB", "10MiB", "100MiB"], unit="object")
    assert df[list(want[0])].to_dict("records") == want
    for p in want:
        r = ssdcache.simulate(cdn, policy="lru", cache=p["cache_bytes"], unit="object")
        assert (r.misses, r.miss_bytes, r.too_large) == (p["misses"], p["miss_bytes"], p["too_large"])


def _one_line_error(cli, *args) -> str:
    proc = cli(*args, check=False)
    assert proc.returncode == 2, proc
    assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    return proc.stderr


def test_a_trace_without_sizes_is_refused(cli, traces):
    msr = str(traces / "msr-hm0-1k-caffeine/msr-cambridge1-sample.csv.gz")
    e = _one_line_error(cli, "sim", "--unit", "object", "-t", msr, "-c", "1MiB")
    assert "format msr has no object sizes" in e and "webcachesim" in e
    with pytest.raises(ValueError, match="format msr has no object sizes"):
        ssdcache.simulate(msr, cache="1MiB", unit="object")
    e = _one_line_error(cli, "sim", "--unit", "object", "--gen", "zipf(alpha=0.9)", "-c", "1MiB")
    assert "needs --trace with object sizes" in e


@pytest.mark.parametrize("size", ["0", str(2**48 + 1)])
def test_a_bad_size_names_the_value_and_line(cli, tmp_path, size):
    trace = tmp_path / "t.webcachesim"
    trace.write_text(f"1 7 100\n2 8 {size}\n3 7 100\n")
    e = _one_line_error(cli, "sim", "--unit", "object", "-t", trace, "-f", "webcachesim", "-c", "1MiB")
    assert f"{trace}:2: field size" in e and f"size {size}" in e
    for run in (lambda: ssdcache.simulate(str(trace), cache="1MiB", unit="object", format="webcachesim"),
                lambda: ssdcache.mrc(str(trace), unit="object", format="webcachesim")):
        with pytest.raises(ValueError, match=f"{trace}:2: field size: object size {size}"):
            run()


def test_a_page_policy_is_refused_naming_the_sized_ones(cli, cdn):
    e = _one_line_error(cli, "sim", "--unit", "object", "-t", cdn, "-p", "arc", "-c", "1MiB")
    assert '"arc"' in e and "lru, fifo, clock, s3fifo, sieve, gdsf" in e
    with pytest.raises(ValueError, match="object-mode policy"):
        ssdcache.simulate(cdn, policy="lirs", cache="1MiB", unit="object")
    with pytest.raises(ValueError, match="mode='write-through' is not supported with unit='object'"):
        ssdcache.simulate(cdn, cache="1MiB", mode="write-through", unit="object")
    e = _one_line_error(cli, "sim", "--unit", "object", "-t", cdn, "--device", "ssd", "-c", "1MiB")
    assert "--device is not supported with --unit object" in e


def test_lcs_and_twr_traces_read_in_both_modes(cli, tmp_path):
    twr = tmp_path / "t.twr"
    twr.write_text("0,a,10,90,1,get,0\n1,b,10,1990,1,set,0\n2,a,10,90,1,get,0\n3,b,10,1990,1,delete,0\n"
                   "4,b,10,1990,1,get,0\n")
    [r] = cli.json("--unit", "object", "-t", twr, "-p", "lru", "-c", "10KiB")
    assert (r["format"], r["requests"], r["hits"], r["deletes_cached"]) == ("twr", 4, 1, 1)
    assert (r["write_requests"], r["write_bytes"], r["read_hit_bytes"]) == (1, 2000, 100)
    [p] = cli.json("-t", twr, "-p", "lru", "-c", "1MiB")  # page mode: each key one page
    assert p["format"] == "twr" and p["requests"] == 5
