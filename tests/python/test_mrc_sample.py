"""`ssdcache.mrc(..., sample=, sample_keys=, seed=)`: sampled curves (SHARDS for
lru, miniature simulation for the rest) equal the CLI's, are exact at 100 %,
and bad arguments are ValueErrors naming the flag."""

import csv
import io
import math

import pytest

import ssdcache

GEN = "uniform(keys=2000,requests=20000,read=70%,size=1KiB..12KiB,align=1KiB,seed=4)"


def test_at_full_rate_shards_is_the_exact_curve():
    exact = ssdcache.mrc(GEN, points=6)
    shards = ssdcache.mrc(GEN, points=6, sample="100%")
    assert list(shards["method"]) == ["shards"] * 6 and list(exact["method"]) == ["exact"] * 6
    assert list(shards["sample_rate"]) == [1.0] * 6 == list(exact["sample_rate"])
    for key in ("cache_pages", "hits", "read_hits", "write_hits", "request_hits", "dirty_writebacks"):
        assert list(shards[key]) == list(exact[key]), key


def test_at_full_rate_miniature_is_simulate():
    df = ssdcache.mrc(GEN, policy=["arc", "cflru"], cache=["256KiB", "2MiB"], sample=1.0)
    assert list(df["policy"]) == ["arc", "arc", "cflru", "cflru"]
    for row in df.to_dict("records"):
        r = ssdcache.simulate(GEN, row["policy"], cache=row["cache_bytes"]).to_dict()
        assert (row["hits"], row["dirty_writebacks"]) == (r["hits"], r["dirty_writebacks"]), row["policy"]


def test_equals_the_cli_cell_for_cell(cli):
    df = ssdcache.mrc(GEN, policy="lru,s3fifo", points=4, sample="10%", seed=3)
    out = cli("mrc", "--gen", GEN, "--policy", "lru,s3fifo", "--points", 4, "--sample", "10%", "--seed", 3, "--csv")
    rows = list(csv.reader(io.StringIO(out.stdout)))
    assert list(df.columns) == rows[0]
    assert len(df) == len(rows) - 1 == 8
    for record, row in zip(df.to_dict("records"), rows[1:]):
        for key, text in zip(rows[0], row):
            value = record[key]
            if value is None:  # (no share, no warm-up: an empty cell)
                assert text == "", key
            elif isinstance(value, float):
                assert math.isclose(float(text), value, rel_tol=1e-12), key
            else:
                assert text == str(value), key


def test_a_fixed_size_sample_lowers_its_rate():
    df = ssdcache.mrc(GEN, sample_keys=100, points=3)
    assert set(df["method"]) == {"shards"}
    assert 0 < df["sample_rate"][0] < 0.5


@pytest.mark.parametrize("kwargs, message", [
    ({"sample": "0"}, "--sample 0: the rate must be more than 0"),
    ({"sample": "150%"}, "at most 100%"),
    ({"sample": "lots"}, "not a rate"),
    ({"sample": True}, "sample must be"),
    ({"sample_keys": 0}, "sample_keys"),
    ({"sample": "1%", "seed": -1}, "seed"),
    ({"sample": "1%", "policy": "belady"}, "future"),
    ({"sample": "1%", "policy": "arc", "sample_keys": 5}, "--sample-keys"),
    ({"sample": "1%", "warmup": "10%"}, "warmup with sample is not supported"),
    ({"sample": "1%", "cache": "5%"}, "share of the footprint with sample is not supported"),
])
def test_bad_arguments_are_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("%", "%").replace("(", r"\(")):
        ssdcache.mrc(GEN, **kwargs)
