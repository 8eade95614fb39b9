"""`ssdcache.mrc`: the exact LRU curve equals the CLI's `ssdcache mrc --csv`
cell for cell, and `simulate` at each size; bad arguments are ValueErrors."""

import csv
import io
import math

import pytest

import ssdcache

GEN = "uniform(keys=500,requests=6000,read=70%,size=1KiB..12KiB,align=1KiB,seed=4)"


def test_equals_the_cli_cell_for_cell(cli):
    df = ssdcache.mrc(GEN, points=7)
    rows = list(csv.reader(io.StringIO(cli("mrc", "--gen", GEN, "--points", 7, "--csv").stdout)))
    assert list(df.columns) == rows[0]
    assert len(df) == len(rows) - 1 == 7
    for record, row in zip(df.to_dict("records"), rows[1:]):
        for key, text in zip(rows[0], row):
            value = record[key]
            if value is None:  # (no share, no warm-up: an empty cell)
                assert text == "", key
            elif isinstance(value, float):
                assert math.isclose(float(text), value, rel_tol=0, abs_tol=0), key
            else:
                assert text == str(value), key


def test_equals_simulate_at_each_size(fin1):
    df = ssdcache.mrc(fin1, cache=["64KiB", "1MiB", 4 << 20, "16MiB"])
    assert list(df["cache_bytes"]) == [64 << 10, 1 << 20, 4 << 20, 16 << 20]
    for row in df.to_dict("records"):
        r = ssdcache.simulate(fin1, "lru", cache=row["cache_bytes"]).to_dict()
        assert row["hits"] == r["hits"] and row["request_hits"] == r["request_hits"]
        assert row["dirty_writebacks"] == r["dirty_writebacks"]
        assert row["miss_ratio"] == pytest.approx(1 - r["hit_ratio"])
    assert df.attrs["footprint_pages"] > 0 and df.attrs["trims"] == 0


@pytest.mark.parametrize("kwargs, message", [
    ({"policy": "arc"}, "lru"),
    ({"points": 0}, "points"),
    ({"cache": ["1KiB"]}, "smaller than one page"),
    ({"cache": []}, "at least one size"),
    ({"page": "0"}, "page"),
])
def test_bad_arguments_are_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ssdcache.mrc(GEN, **kwargs)


def test_the_curve_plots_like_a_sweep():
    fig = ssdcache.plot.miss_ratio_curve(ssdcache.mrc(GEN, points=5))
    assert len(fig.axes[0].lines) == 1
