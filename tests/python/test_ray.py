"""executor="ray" gives the same DataFrame as the local executor, on a Ray cluster of one node.

The cluster is a separate `ray start --head --block` process that the driver joins with
`ray.init(address=...)`, as a user's cluster would be; the driver leaves before the node
stops. With a plain `ray.init()` the node lives and dies with the driver, and `ray.shutdown()`
in this fixture's teardown once ended a CI run with exit status 1 and no report, after every
test had passed (most likely the driver seeing its own raylet die first).
"""

import os
import signal
import socket
import subprocess
import sys
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
    # its own session, so that a head that will not stop is killed with the node's processes
    head = subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--node-ip-address=127.0.0.1",
         f"--port={port}", "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"],
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
        # the driver leaves first; only then does the node stop (SIGTERM to `ray start --block`)
        if ray.is_initialized():
            ray.shutdown()
        head.terminate()
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        log.close()


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
