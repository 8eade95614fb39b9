"""ssdcache.whatif: a running server's live what-if as a DataFrame, drawn with the current point."""

import os
import shutil
import subprocess
import time

import pytest

import ssdcache

# The client: qemu-io (Debian's qemu-utils, which the test command installs).
pytestmark = pytest.mark.skipif(shutil.which("qemu-io") is None, reason="qemu-io (qemu-utils) is not installed")


def _io(addr, commands):
    cmd = ["qemu-io", "-f", "raw", f"nbd://{addr}"]
    for c in commands:
        cmd += ["-c", c]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0 and "error" not in out.stdout.lower(), out.stdout + out.stderr


def _serve(cli, tmp_path, *extra):
    backing, cache = tmp_path / "backing", tmp_path / "cache"
    with open(backing, "wb") as f:
        f.truncate(32 << 20)
    cli("create", cache, backing, "--size", "4MiB")
    p = subprocess.Popen([str(cli.path), "serve", cache, backing, "--listen", "127.0.0.1:0", "--policy", "lru", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    assert line.startswith("listening on"), line
    return p, cache, line.split()[-1]


def test_whatif_frame_matches_the_server_and_plots(cli, tmp_path):
    p, cache, addr = _serve(cli, tmp_path)
    try:
        _io(addr, [f"read {((i * 7919) % 97 if i % 3 else i % 13) * 131072} 4k" for i in range(3000)])
        time.sleep(1.2)
        df = ssdcache.whatif(cache)
        assert set(df["policy"]) == {"lru", "s3fifo"}
        now = df[df["current"]]
        assert len(now) == 1 and now["policy"].item() == "lru"
        assert now["miss_ratio"].item() == pytest.approx(df.attrs["measured_miss_ratio"], abs=1e-12)
        assert df.attrs["sample_rate"] == 1.0 and df.attrs["requests"] == 3000
        fig = ssdcache.plot.miss_ratio_curve(df)
        fig.savefig(tmp_path / "whatif.png")
        assert os.path.getsize(tmp_path / "whatif.png") > 1000
        assert len(ssdcache.whatif(cache, "hour")) == len(df)
        with pytest.raises(ValueError, match="window"):
            ssdcache.whatif(cache, "week")
    finally:
        p.terminate()
        p.wait()
    with pytest.raises(ConnectionError, match="no server is running"):
        ssdcache.whatif(cache)


def test_whatif_off_says_how_to_turn_it_on(cli, tmp_path):
    p, cache, _ = _serve(cli, tmp_path, "--whatif", "off")
    try:
        with pytest.raises(RuntimeError, match="--whatif"):
            ssdcache.whatif(cache)
    finally:
        p.terminate()
        p.wait()


def test_a_recording_loads_as_a_trace(cli, tmp_path):
    rec = tmp_path / "rec.zst"
    p, cache, addr = _serve(cli, tmp_path, "--record", rec)
    try:
        _io(addr, [f"write -P 7 {i * 65536} 4k" for i in range(100)])
    finally:
        p.terminate()
        p.wait()
    t = ssdcache.load(rec)
    assert len(t) == 100
    r = ssdcache.simulate(rec, "lru", cache="1MiB", page="128KiB")
    assert r.requests == 100
