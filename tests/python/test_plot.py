"""ssdcache.plot: each chart from a sweep, and `python -m ssdcache.plot` from CLI output."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from matplotlib.figure import Figure

import ssdcache
from ssdcache import plot

HYBRID = "ftl(type=hybrid,nand=mlc1,page=4KiB,block=256KiB)"


@pytest.fixture(scope="module")
def curve_df(fin1, msr):
    return ssdcache.sweep([fin1, msr], ["lru", "arc", "belady"], ["256KiB", "1MiB", "4MiB"], progress=False)


@pytest.fixture(scope="module")
def device_df(fin1, msr):
    return ssdcache.sweep([fin1, msr], ["lru", "cflru", "fab", "clc"], "2MiB", devices=HYBRID, progress=False)


def test_miss_ratio_curve(curve_df):
    fig = plot.miss_ratio_curve(curve_df, title="MRC")
    assert isinstance(fig, Figure)
    axes = [a for a in fig.axes if a.get_visible()]
    assert len(axes) == 2  # a panel per trace
    lines = axes[0].get_lines()
    assert [l.get_label() for l in lines] == ["lru", "arc", "Belady (optimal bound)"]
    assert lines[2].get_linestyle() == "--"
    lru = curve_df[(curve_df.trace == curve_df.trace[0]) & (curve_df.policy == "lru")]
    np.testing.assert_allclose(lines[0].get_ydata(), 1 - lru["hit_ratio"].to_numpy())
    np.testing.assert_array_equal(lines[0].get_xdata(), lru["cache_bytes"].to_numpy())
    # no policy beats Belady
    bel = lines[2].get_ydata()
    assert all((l.get_ydata() >= bel - 1e-12).all() for l in lines[:2])


def test_hit_ratio_curve_and_options(curve_df):
    fig = plot.hit_ratio_curve(curve_df, labels={"arc": "ARC"}, logx=False, belady=False)
    labels = [l.get_label() for l in fig.axes[0].get_lines()]
    assert labels == ["lru", "ARC", "belady"]
    import matplotlib.pyplot as plt

    fig2, ax = plt.subplots()
    out = plot.miss_ratio_curve(curve_df, "backing_accesses", ax=ax)
    assert out is fig2 and len(ax.get_lines()) == 6  # both traces on one panel
    with pytest.raises(ValueError, match="no column"):
        plot.miss_ratio_curve(curve_df, "execution_time_ns")


def test_normalised_bars(device_df):
    fig = plot.normalised_bars(device_df)
    axes = [a for a in fig.axes if a.get_visible()]
    assert len(axes) == 2
    bars = axes[0].patches
    assert len(bars) == 4 * 2  # 4 policies x (hit ratio, execution time)
    assert bars[0].get_height() == pytest.approx(1.0) and bars[4].get_height() == pytest.approx(1.0)
    rows = device_df[device_df.trace == device_df.trace[0]].set_index("policy")
    assert bars[1].get_height() == pytest.approx(rows.loc["cflru", "hit_ratio"] / rows.loc["lru", "hit_ratio"])
    assert bars[5].get_height() == pytest.approx(
        rows.loc["cflru", "execution_time_ns"] / rows.loc["lru", "execution_time_ns"])
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["lru", "cflru", "fab", "clc"]
    with pytest.raises(ValueError, match="no 'arc' run"):
        plot.normalised_bars(device_df, baseline="arc")
    one = plot.normalised_bars(device_df, baseline="fab", metrics=["backing_writes"])
    assert len(one.axes[0].patches) == 4


def test_normalised_bars_without_device(curve_df):
    fig = plot.normalised_bars(curve_df)  # default metrics: those present
    assert len([a for a in fig.axes if a.get_visible()]) == 6  # trace x cache
    with pytest.raises(ValueError, match="device"):
        plot.normalised_bars(curve_df, metrics=["hit_ratio", "execution_time_ns"])


def test_device_cost_bars(device_df):
    fig = plot.device_cost_bars(device_df, read=True)
    ax = fig.axes[0]
    assert len(ax.patches) == 4 * 4  # 4 policies x (read, write, extra write, erase)
    rows = device_df[device_df.trace == device_df.trace[0]].reset_index()
    top = [p.get_y() + p.get_height() for p in ax.patches[-4:]]
    total = (rows.read_time_ns + rows.write_time_ns + rows.extra_write_time_ns + rows.erase_time_ns) / 1e9
    np.testing.assert_allclose(top, total)
    with pytest.raises(ValueError, match="device"):
        plot.device_cost_bars(device_df.drop(columns=["erase_time_ns"]))


def test_series_from_results_and_sweeps(fin1):
    runs = {p: ssdcache.simulate(fin1, policy=p, cache="1MiB", device="hdd", cache_device="ssd", interval="10min")
            for p in ("lru", "arc")}
    fig = plot.series(runs)
    assert len(fig.axes) == 3
    lines = fig.axes[2].get_lines()
    assert [l.get_label() for l in lines] == ["lru", "arc"]
    np.testing.assert_allclose(lines[0].get_ydata(), 100 * runs["lru"].series["hit_ratio"].to_numpy())
    df = ssdcache.sweep(fin1, ["lru", "arc"], ["1MiB", "4MiB"], interval="10min", progress=False)
    fig = plot.series(df, ["hit_ratio"], x="time")
    assert len(fig.axes[0].get_lines()) == 4
    assert plot.series(runs["lru"].series, "requests")
    with pytest.raises(ValueError, match="interval"):
        plot.series(ssdcache.simulate(fin1, cache="1MiB"))


def _run_plot_cli(*args):
    return subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "ssdcache.plot", *map(str, args)],
                          capture_output=True, text=True)


def test_plot_command_line(cli, fin1, tmp_path):
    csv = tmp_path / "runs.csv"
    csv.write_text(cli("sim", "--csv", "--trace", fin1, "--policy", "lru,arc,belady", "--cache",
                       "256KiB,1MiB,4MiB").stdout)
    jsonl = tmp_path / "dev.jsonl"
    jsonl.write_text(cli("sim", "--json", "--trace", fin1, "--policy", "lru,cflru,fab", "--cache", "2MiB",
                         "--device", HYBRID, "--interval", "10min").stdout)
    saved = tmp_path / "sweep.csv"
    ssdcache.sweep(fin1, ["lru", "arc"], ["1MiB", "4MiB"], progress=False).to_csv(saved)
    cases = [
        ("curve", csv, "mrc.png", []),
        ("hrc", csv, "hrc.svg", []),
        ("curve", saved, "saved.png", ["--metric", "backing_accesses"]),
        ("bars", jsonl, "bars.svg", ["--baseline", "lru"]),
        ("bars", csv, "bars2.png", ["--metric", "hit_ratio"]),
        ("cost", jsonl, "cost.png", ["--read"]),
        ("series", jsonl, "series.svg", ["--metric", "hit_ratio", "--metric", "throughput_mb_s"]),
    ]
    for kind, src, out, extra in cases:
        proc = _run_plot_cli(kind, src, "-o", tmp_path / out, *extra)
        assert proc.returncode == 0, (kind, out, proc.stderr)
        data = (tmp_path / out).read_bytes()
        if out.endswith(".png"):
            assert data.startswith(b"\x89PNG"), out
        else:
            assert b"<svg" in data[:500], out


def test_plot_command_line_errors(cli, fin1, tmp_path):
    csv = tmp_path / "runs.csv"
    csv.write_text(cli("sim", "--csv", "--trace", fin1, "--policy", "lru", "--cache", "1MiB").stdout)
    proc = _run_plot_cli("series", csv, "-o", tmp_path / "x.png")
    assert proc.returncode == 2 and "--json" in proc.stderr
    proc = _run_plot_cli("cost", csv, "-o", tmp_path / "x.png")
    assert proc.returncode == 2 and "device" in proc.stderr
    proc = _run_plot_cli("curve", tmp_path / "missing.csv", "-o", tmp_path / "x.png")
    assert proc.returncode == 2 and "not found" in proc.stderr
    proc = _run_plot_cli("curve", csv, "-o", tmp_path / "x.gif")
    assert proc.returncode == 2 and ".png" in proc.stderr
    # A directory, a binary file, an endless stream: one line each, exit 2 (a traceback and exit 1,
    # or a MemoryError after reading /dev/zero whole, before).
    png = tmp_path / "x.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    for src, says in [(tmp_path, "a directory"), (png, "not text"), ("/dev/zero", "more than 64 MiB")]:
        proc = _run_plot_cli("curve", src, "-o", tmp_path / "y.png")
        assert proc.returncode == 2 and says in proc.stderr, (src, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_plot_reads_stdin(cli, fin1, tmp_path):
    out = cli("sim", "--json", "--trace", fin1, "--policy", "lru,arc", "--cache", "1MiB,4MiB").stdout
    proc = subprocess.run([sys.executable, "-m", "ssdcache.plot", "curve", "-", "-o", tmp_path / "s.png"], input=out,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "s.png").read_bytes().startswith(b"\x89PNG")


def test_ssdcache_plot_command(cli, fin1, tmp_path, monkeypatch):
    """`ssdcache plot …` (the Rust CLI) draws the same charts through this module."""
    monkeypatch.setenv("SSDCACHE_PYTHON", sys.executable)
    csv = tmp_path / "runs.csv"
    csv.write_text(cli("sim", "--csv", "--trace", fin1, "--policy", "lru,arc,belady", "--cache", "1MiB,4MiB").stdout)
    out = tmp_path / "mrc.svg"
    cli("plot", "curve", csv, "-o", out)
    assert b"<svg" in out.read_bytes()[:500]
    proc = cli("plot", "series", csv, "-o", tmp_path / "x.png", check=False)
    assert proc.returncode == 2 and "--json" in proc.stderr


# A Python in which the Rust extension cannot be imported: `import ssdcache._core` raises ImportError.
_BLOCK_CORE = "import sys\nsys.modules['ssdcache._core'] = None\n"
GEN = "zipf(alpha=0.9,keys=2000,requests=20000,read=70%,seed=3)"
DAYS = "desktop(days=2,per_day=2k,seed=2)"


def test_plot_command_line_without_the_extension(cli, tmp_path, monkeypatch):
    """The plot path (results reader, command line, charts) is pure Python: `python -m ssdcache.plot`
    and `ssdcache plot` draw from CLI output in a Python where `ssdcache._core` cannot be imported
    (blocked by a sitecustomize), so the Rust CLI never loads the Rust extension back."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_BLOCK_CORE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("SSDCACHE_PYTHON", sys.executable)
    # the block holds: the simulator's names say the extension is missing
    proc = subprocess.run([sys.executable, "-c", "import ssdcache; ssdcache.simulate"], capture_output=True,
                          text=True)
    assert proc.returncode == 1 and "ssdcache._core is missing" in proc.stderr, proc.stderr

    csv = tmp_path / "runs.csv"
    csv.write_text(cli("sim", "--csv", "--gen", GEN, "--policy", "lru,arc,belady", "--cache",
                       "256KiB,1MiB,4MiB").stdout)
    jsonl = tmp_path / "runs.jsonl"
    jsonl.write_text(cli("sim", "--json", "--gen", DAYS, "--policy", "lru,arc", "--cache", "1MiB",
                         "--interval", "1d").stdout)
    report = tmp_path / "analysis.json"
    report.write_text(cli("trace", "analyze", "--gen", GEN, "--json").stdout)
    for kind, src, out, extra in [("curve", csv, "mrc.png", []), ("bars", jsonl, "bars.png", []),
                                  ("series", jsonl, "series.png", ["--metric", "hit_ratio"])]:
        proc = _run_plot_cli(kind, src, "-o", tmp_path / out, *extra)
        assert proc.returncode == 0, (kind, proc.stderr)
        assert proc.stdout.strip() == str(tmp_path / out)
        assert (tmp_path / out).read_bytes().startswith(b"\x89PNG"), out
    proc = _run_plot_cli("analysis", report, "-o", tmp_path / "charts")
    assert proc.returncode == 0, proc.stderr
    assert all(pathlib.Path(p).read_bytes().startswith(b"\x89PNG") for p in proc.stdout.splitlines())
    # the Rust CLI's `ssdcache plot` and `ssdcache trace analyze --plot`, through the same Python
    cli("plot", "curve", csv, "-o", tmp_path / "rust.png")
    assert (tmp_path / "rust.png").read_bytes().startswith(b"\x89PNG")
    cli("trace", "analyze", "--gen", GEN, "--plot", tmp_path / "rust-charts")
    assert (tmp_path / "rust-charts" / "popularity.png").read_bytes().startswith(b"\x89PNG")
