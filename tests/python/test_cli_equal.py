"""Results from Python equal the CLI's for the same inputs, number for number.

`ssdcache sim --csv` prints one row per run; a sweep DataFrame must have the
same columns in the same order and the same rows in the same order, every cell
equal — integers exactly, floats bit for bit (both sides print and parse the
shortest round-trip decimal). `--json` objects must equal `Result.to_dict()`.
"""

import math

import pandas as pd
import pytest

import ssdcache

HYBRID = "ftl(type=hybrid,nand=mlc1,page=4KiB,block=256KiB)"


def _cell_equal(text: str, value) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return text == ""
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, int):
        return text == str(value)
    if isinstance(value, float):
        return float(text) == value
    return text == str(value)


def assert_same_as_csv(df: pd.DataFrame, header: list[str], rows: list[list[str]]):
    assert list(df.columns) == header
    assert len(df) == len(rows)
    for i, (record, row) in enumerate(zip(df.to_dict("records"), rows)):
        bad = [(k, t, record[k]) for k, t in zip(header, row) if not _cell_equal(t, record[k])]
        assert not bad, f"row {i} ({record['policy']}, {record['cache_bytes']}): CLI vs Python differ in {bad[:5]}"


def assert_same_as_json(df: pd.DataFrame, reports: list[dict]):
    assert len(df) == len(reports)
    for record, report in zip(df.to_dict("records"), reports):
        report = {k: v for k, v in report.items() if k != "series"}
        assert list(record) == list(report)
        assert record == report


def test_sweep_equals_cli_csv(cli, fin1):
    policies = ["lru", "arc", "2q(kin=25%,kout=50%)", "cflru", "belady"]
    caches = ["1MiB", "4MiB"]
    modes = ["write-back", "write-only"]
    header, rows = cli.csv("--trace", fin1, "--policy", ",".join(policies), "--cache", ",".join(caches),
                           "--mode", ",".join(modes))
    df = ssdcache.sweep(fin1, policies, caches, modes=modes, progress=False)
    assert_same_as_csv(df, header, rows)


def test_sweep_equals_cli_json_several_traces(cli, fin1, msr):
    policies = ["lru", "lirs", "s3fifo"]
    reports = cli.json("--trace", fin1, "--trace", msr, "--policy", ",".join(policies), "--cache", "512KiB,8MiB",
                       "--page", "8KiB")
    df = ssdcache.sweep([fin1, msr], policies, ["512KiB", "8MiB"], pages="8KiB", progress=False)
    assert_same_as_json(df, reports)


def test_device_runs_equal_cli(cli, fin1, msr):
    policies = ["lru", "cflru", "fab", "clc", "abm(read=lru,write=clc)"]
    for trace in (fin1, msr):
        header, rows = cli.csv("--trace", trace, "--policy", ",".join(policies), "--cache", "2MiB",
                               "--device", HYBRID)
        df = ssdcache.sweep(trace, policies, "2MiB", devices=HYBRID, progress=False)
        assert "execution_time_ns" in df.columns
        assert_same_as_csv(df, header, rows)


def test_queue_sweep_equals_cli(cli):
    gen = "iometer-a(requests=3k,iat=exp(1ms),seed=1)"
    header, rows = cli.csv("--gen", gen, "--policy", "lru,qlru", "--cache", "8MiB", "--mode", "write-only",
                           "--device", "ftl(nand=flashsim)", "--queue-depth", "32,512", "--iat-scale", "1,4")
    df = ssdcache.sweep(gen, ["lru", "qlru"], "8MiB", modes="write-only", devices="ftl(nand=flashsim)",
                        queue_depth=[32, 512], iat_scale=[1, 4], progress=False)
    assert list(zip(df["queue_depth"], df["iat_scale"]))[:4] == [(32, 1.0), (32, 4.0), (512, 1.0), (512, 4.0)]
    assert_same_as_csv(df, header, rows)
    # the CLI's comma lists work too
    same = ssdcache.sweep(gen, "lru,qlru", "8MiB", modes="write-only", devices="ftl(nand=flashsim)",
                          queue_depth="32,512", iat_scale="1,4", progress=False)
    pd.testing.assert_frame_equal(df, same)


def test_simulate_equals_cli_json_with_series(cli, fin1):
    """One run with every option: a device, a cache device, a series, a repeat."""
    args = dict(policy="pwc(period=1h)", cache="2MiB", device="hdd(model=rpm7200)", cache_device="ssd",
                interval="5min", repeat=3)
    [report] = cli.json("--trace", fin1, "--policy", args["policy"], "--cache", "2MiB", "--device",
                        args["device"], "--cache-device", "ssd", "--interval", "5min", "--repeat", "3")
    r = ssdcache.simulate(fin1, **args)
    assert r.to_dict() == report
    assert len(report["series"]) > 1
    pd.testing.assert_frame_equal(r.series, pd.DataFrame(report["series"]).set_index("interval"))


@pytest.mark.parametrize("policy", ["lru", "arc(variant=libcachesim)", "lirs", "belady"])
def test_generator_equals_cli(cli, policy):
    gen = "mix(zipf(alpha=0.9,keys=4096,read=70%,unit=bytes),scan(length=1024,unit=bytes),weights=85%/15%,requests=20k,seed=1)"
    [report] = cli.json("--gen", gen, "--policy", policy, "--cache", "4MiB")
    assert ssdcache.simulate(gen, policy=policy, cache="4MiB").to_dict() == report


def test_loaded_trace_equals_cli(cli, traces):
    path = str(traces / "systor17-1k-samples" / "systor17-traces-sample.csv.gz")
    header, rows = cli.csv("--trace", path, "--policy", "lru,clock", "--cache", "256KiB,1MiB")
    df = ssdcache.sweep(ssdcache.load(path), ["lru", "clock"], ["256KiB", "1MiB"], progress=False)
    assert_same_as_csv(df, header, rows)
