"""executor="ray" gives the same DataFrame as the local executor, on a Ray cluster of one node.

The cluster is a separate `ray start --head --block` process that the driver joins with
`ray.init(address=...)`, as a user's cluster would be; the driver leaves before the node
stops. With a plain `ray.init()` the node lives and dies with the driver, and `ray.shutdown()`
in this fixture's teardown once ended a CI run with exit status 1 and no report, after every
test had passed (most likely the driver seeing its own raylet die first).

The node runs in a temporary directory of its own (`ray start --temp-dir`), so the address
file `ray start` writes (`ray_current_cluster`) lives there and not in Ray's default temp
directory, where a later plain `ray.init()` — `ssdcache.sweep(executor="ray")` without an
address — would find it pointing at a dead head. Once pytest has exited, a detached reaper
stops the node as `ray start --block` is made to stop, SIGTERM, ends whatever is left of its
process group and removes the directory. (Not `ray stop`: it stops every Ray process on the
machine, other users' clusters included.)
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd
import pytest

import ssdcache

ray = pytest.importorskip("ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    if ray.is_initialized():  # a cluster the caller joined already
        yield ray
        return
    port = _free_port()
    address = f"127.0.0.1:{port}"
    log = open(tmp_path_factory.mktemp("ray") / "ray-start.log", "w+")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    # short: Ray's socket paths under it must fit in 107 bytes
    temp_dir = tempfile.mkdtemp(prefix="ssdcache-ray-")
    # its own session, so that a head that will not stop is killed with the node's processes
    head = subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--node-ip-address=127.0.0.1",
         f"--port={port}", "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats",
         f"--temp-dir={temp_dir}"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            if head.poll() is not None:
                log.seek(0)
                pytest.fail(f"ray start --head exited {head.returncode}:\n{log.read()[-3000:]}")
            try:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
                break
            except ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield ray
    finally:
        # The driver leaves first; the node is stopped only once this process has exited.
        if ray.is_initialized():
            ray.shutdown()
        _stop_after_exit(head.pid, temp_dir)
        log.close()


# Run by a detached reaper: waits for the pytest process to exit, then ends the node's
# process group (`ray start --block` stops the node on SIGTERM; SIGKILL for what is left)
# and removes its temp dir.
_REAPER = """
import os, shutil, signal, sys, time
parent, pgid, temp_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def alive(kill):
    try:
        kill(0)
        return True
    except ProcessLookupError:
        return False
while alive(lambda s: os.kill(parent, s)):
    time.sleep(0.2)
for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
    if alive(lambda s: os.killpg(pgid, s)):
        os.killpg(pgid, sig)
        end = time.monotonic() + wait
        while time.monotonic() < end and alive(lambda s: os.killpg(pgid, s)):
            time.sleep(0.1)
shutil.rmtree(temp_dir, ignore_errors=True)
"""


def _stop_after_exit(pgid: int, temp_dir: str) -> None:
    """Stops the node (its own session: nothing else is in its group) after this process exits.
    A driver that sees its cluster die while it still runs may end itself with status 1 and
    no report, after every test passed (seen in CI even after ray.shutdown()), so the cluster
    outlives the driver by a moment instead."""
    subprocess.Popen([sys.executable, "-c", _REAPER, str(os.getpid()), str(pgid), temp_dir],
                     start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)


# First, before the cluster fixture: these need Ray not initialised in this process.

GEN = "zipf(alpha=0.9,keys=1000,requests=1000)"  # no sample traces needed


def _closed_port() -> int:
    return _free_port()  # nothing listens there once the probe socket is closed


def test_ray_fails_fast_when_ray_address_does_not_answer(monkeypatch):
    if ray.is_initialized():
        pytest.skip("Ray is initialised already in this process")
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{_closed_port()}")
    t = time.monotonic()
    with pytest.raises(ConnectionError, match="RAY_ADDRESS.*does not answer.*unset RAY_ADDRESS"):
        ssdcache.sweep(GEN, ["lru"], "1MiB", executor="ray", progress=False)
    assert time.monotonic() - t < 30
    assert not ray.is_initialized()


def test_ray_fails_fast_when_the_last_ray_start_is_dead(monkeypatch, tmp_path):
    """A `ray_current_cluster` file left by a head that is gone (what a SIGTERM'd test cluster
    in Ray's default temp directory used to leave behind)."""
    if ray.is_initialized():
        pytest.skip("Ray is initialised already in this process")
    from ssdcache import _sweep

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    stale = tmp_path / "ray_current_cluster"
    stale.write_text(f"127.0.0.1:{_closed_port()}")
    monkeypatch.setattr(_sweep, "_ray_address_file", lambda: str(stale))
    t = time.monotonic()
    with pytest.raises(ConnectionError, match=re.escape(str(stale)) + ".*does not answer.*delete that file"):
        ssdcache.sweep(GEN, ["lru"], "1MiB", executor="ray", progress=False)
    assert time.monotonic() - t < 30
    assert not ray.is_initialized()


def test_the_address_file_is_where_ray_reads_it():
    from ray._private.services import find_bootstrap_address

    from ssdcache import _sweep

    path = _sweep._ray_address_file()
    expected = find_bootstrap_address(None)
    if os.path.exists(path):
        with open(path) as f:
            assert f.read().strip() == expected
    else:
        assert expected is None


def test_ray_equals_local(local_ray, fin1, msr):
    rng = np.random.default_rng(1)
    pages = (rng.zipf(1.2, 30_000) % 3000).astype(np.uint64)
    arrays = {"pages": pages, "ops": rng.integers(0, 2, len(pages)), "name": "zipf-arrays"}
    traces = [fin1, msr, "zipf(alpha=0.9,keys=5000,requests=20k,read=70%)", arrays, ssdcache.load(fin1)]
    args = dict(policies=["lru", "arc", "2q(kin=25%,kout=50%)"], caches=["512KiB", "2MiB"],
                modes=["write-back", "write-only"], progress=False)
    local = ssdcache.sweep(traces, **args)
    remote = ssdcache.sweep(traces, executor="ray", **args)
    assert len(remote) == 5 * 3 * 2 * 2
    pd.testing.assert_frame_equal(local, remote)


def test_ray_device_and_series_equal_local(local_ray, fin1):
    args = dict(devices="ftl(type=hybrid,nand=mlc1,page=4KiB,block=256KiB)", interval="10min", progress=False)
    local = ssdcache.sweep(fin1, ["lru", "fab"], "1MiB", **args)
    remote = ssdcache.sweep(fin1, ["lru", "fab"], "1MiB", executor="ray", **args)
    pd.testing.assert_frame_equal(local, remote)
    assert local.attrs["series"] == remote.attrs["series"]


def test_ray_errors_are_value_errors(local_ray, fin1):
    with pytest.raises(ValueError, match="nosuchpolicy"):
        ssdcache.sweep(fin1, ["nosuchpolicy"], "1MiB", executor="ray", progress=False)
    # an error only a worker can find: a malformed line, found while parsing
    bad = {"path": fin1, "format": "msr"}
    with pytest.raises(ValueError):
        ssdcache.sweep(bad, ["lru"], "1MiB", executor="ray", progress=False)


def test_ray_mrc_is_one_task_per_trace_and_equals_local(local_ray, fin1, msr):
    local = ssdcache.mrc([fin1, msr], cache="1%,10%", warmup="10%")
    remote = ssdcache.mrc([fin1, msr], cache="1%,10%", warmup="10%", executor="ray")
    pd.testing.assert_frame_equal(local, remote)
    assert remote.attrs["curves"] == local.attrs["curves"]
