"""executor="ray" gives the same DataFrame as the local executor, on a Ray cluster of one node.

The cluster is a separate `ray start --head --block` process, as a user's cluster would be.
The pytest process itself never joins it: every Ray run happens in a short-lived driver
process (`_remote`), which joins the cluster through RAY_ADDRESS, pickles what it got to a
file and leaves with os._exit, skipping `ray.shutdown()`. A Ray driver that sees its raylet or
GCS go away ends its own process with status 1 and no report; twice in CI that process was
pytest (once in `ray.shutdown()` at teardown, once in the last Ray test), which ended the
whole run with exit 1 after every test had passed. In a driver of its own, the same failure
is a failed test with the driver's output, and the rest of the suite still reports.

The node runs in a temporary directory of its own (`ray start --temp-dir`), so the address
file `ray start` writes (`ray_current_cluster`) lives there and not in Ray's default temp
directory, where a later plain `ray.init()` — `ssdcache.sweep(executor="ray")` without an
address — would find it pointing at a dead head. At teardown the node is stopped as
`ray start --block` is made to stop, SIGTERM, and whatever is left of its process group is
killed. (Not `ray stop`: it stops every Ray process on the machine, other users' clusters
included.)
"""

import os
import pathlib
import pickle
import re
import shutil
import signal
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


def _ray_env() -> dict:
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    return env


@pytest.fixture(scope="module")
def ray_address(tmp_path_factory):
    """The address of a one-node cluster that lives for this module."""
    port = _free_port()
    address = f"127.0.0.1:{port}"
    log = open(tmp_path_factory.mktemp("ray") / "ray-start.log", "w+")
    # short: Ray's socket paths under it must fit in 107 bytes
    temp_dir = tempfile.mkdtemp(prefix="ssdcache-ray-")
    # its own session, so that a head that will not stop is killed with the node's processes
    head = subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--node-ip-address=127.0.0.1",
         f"--port={port}", "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats",
         f"--temp-dir={temp_dir}"],
        stdout=log, stderr=subprocess.STDOUT, env=_ray_env(), start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            if head.poll() is not None:
                log.seek(0)
                pytest.fail(f"ray start --head exited {head.returncode}:\n{log.read()[-3000:]}")
            probe = subprocess.run([sys.executable, "-c", _PROBE], env={**_ray_env(), "RAY_ADDRESS": address},
                                   capture_output=True, text=True, timeout=120)
            if probe.returncode == 0:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"no Ray cluster at {address} after 120 s:\n{probe.stderr[-3000:]}")
            time.sleep(0.5)
        yield address
    finally:
        _stop_group(head, temp_dir)
        log.close()


# Joins the cluster and leaves at once: the fixture's readiness check, in a driver of its own.
_PROBE = "import os, ray; ray.init(log_to_driver=False, configure_logging=False); os._exit(0)"


def _stop_group(head: subprocess.Popen, temp_dir: str) -> None:
    """`ray start --block` stops the node on SIGTERM; SIGKILL for whatever is left."""
    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(head.pid, sig)
        except ProcessLookupError:
            break
        end = time.monotonic() + wait
        while time.monotonic() < end:
            try:
                os.killpg(head.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
    head.wait()
    shutil.rmtree(temp_dir, ignore_errors=True)


# The driver: calls ssdcache.<function>(*args, **kwargs) with executor="ray", pickles the
# result (or the exception's type and message) and leaves without ray.shutdown().
_DRIVER = """
import os, pickle, sys
import ssdcache
out_path = sys.argv[1]
with open(out_path, "rb") as f:
    function, args, kwargs = pickle.load(f)
try:
    result = ("ok", getattr(ssdcache, function)(*args, executor="ray", **kwargs))
except Exception as e:
    result = ("error", type(e).__name__, str(e))
with open(out_path, "wb") as f:
    pickle.dump(result, f)
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""


def _remote(address: str, function: str, *args, **kwargs):
    """`ssdcache.<function>(*args, executor="ray", **kwargs)` in a driver process of its own;
    its result, or the exception it raised, raised again here (ValueError stays ValueError)."""
    with tempfile.NamedTemporaryFile(suffix=".pickle", delete=False) as f:
        pickle.dump((function, args, kwargs), f)
        path = f.name
    try:
        driver = subprocess.run([sys.executable, "-c", _DRIVER, path], env={**_ray_env(), "RAY_ADDRESS": address},
                                capture_output=True, text=True, timeout=600)
        assert driver.returncode == 0, (
            f"the Ray driver exited {driver.returncode}:\n{driver.stdout[-2000:]}\n{driver.stderr[-4000:]}")
        with open(path, "rb") as f:
            result = pickle.load(f)
    finally:
        os.unlink(path)
    if result[0] == "ok":
        return result[1]
    kind = {"ValueError": ValueError, "ConnectionError": ConnectionError}.get(result[1], RuntimeError)
    raise kind(f"{result[1]}: {result[2]}")


# These run in this process: they must fail before Ray is initialised.

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
    from ssdcache import _ray

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    stale = tmp_path / "ray_current_cluster"
    stale.write_text(f"127.0.0.1:{_closed_port()}")
    monkeypatch.setattr(_ray, "address_file", lambda: str(stale))
    t = time.monotonic()
    with pytest.raises(ConnectionError, match=re.escape(str(stale)) + ".*does not answer.*delete that file"):
        ssdcache.sweep(GEN, ["lru"], "1MiB", executor="ray", progress=False)
    assert time.monotonic() - t < 30
    assert not ray.is_initialized()


def test_the_address_file_is_where_ray_reads_it():
    from ray._private.services import find_bootstrap_address

    from ssdcache import _ray

    path = _ray.address_file()
    expected = find_bootstrap_address(None)
    if os.path.exists(path):
        with open(path) as f:
            assert f.read().strip() == expected
    else:
        assert expected is None


def test_ray_equals_local(ray_address, fin1, msr):
    rng = np.random.default_rng(1)
    pages = (rng.zipf(1.2, 30_000) % 3000).astype(np.uint64)
    arrays = {"pages": pages, "ops": rng.integers(0, 2, len(pages)), "name": "zipf-arrays"}
    traces = [fin1, msr, "zipf(alpha=0.9,keys=5000,requests=20k,read=70%)", arrays, ssdcache.load(fin1)]
    args = dict(policies=["lru", "arc", "2q(kin=25%,kout=50%)"], caches=["512KiB", "2MiB"],
                modes=["write-back", "write-only"], progress=False)
    local = ssdcache.sweep(traces, **args)
    remote = _remote(ray_address, "sweep", traces, **args)
    assert len(remote) == 5 * 3 * 2 * 2
    pd.testing.assert_frame_equal(local, remote)


def test_ray_device_and_series_equal_local(ray_address, fin1):
    args = dict(devices="ftl(type=hybrid,nand=mlc1,page=4KiB,block=256KiB)", interval="10min", progress=False)
    local = ssdcache.sweep(fin1, ["lru", "fab"], "1MiB", **args)
    remote = _remote(ray_address, "sweep", fin1, ["lru", "fab"], "1MiB", **args)
    pd.testing.assert_frame_equal(local, remote)
    assert local.attrs["series"] == remote.attrs["series"]


def test_ray_errors_are_value_errors(ray_address, fin1):
    with pytest.raises(ValueError, match="nosuchpolicy"):
        _remote(ray_address, "sweep", fin1, ["nosuchpolicy"], "1MiB", progress=False)
    # an error only a worker can find: a malformed line, found while parsing
    bad = {"path": fin1, "format": "msr"}
    with pytest.raises(ValueError):
        _remote(ray_address, "sweep", bad, ["lru"], "1MiB", progress=False)


def test_ray_mrc_is_one_task_per_trace_and_equals_local(ray_address, fin1, msr):
    local = ssdcache.mrc([fin1, msr], cache="1%,10%", warmup="10%")
    remote = _remote(ray_address, "mrc", [fin1, msr], cache="1%,10%", warmup="10%")
    pd.testing.assert_frame_equal(local, remote)
    assert remote.attrs["curves"] == local.attrs["curves"]


# A driver whose Python policies are defined in __main__ (they travel by value, cloudpickle)
# and in an importable module (by reference).
_POLICY_DRIVER = """
import os, pickle, sys
import ssdcache
from clock import Clock
from lru import LRU

class MainLRU(LRU):  # a class of __main__ (by value), on one of a module (by reference)
    pass

class Raises(MainLRU):
    def evict(self):
        return None

ssdcache.register_policy("mainlru", MainLRU)
ssdcache.register_policy("modclock", Clock)
ssdcache.register_policy("raises", Raises)
trace, out_path = sys.argv[1], sys.argv[2]
df = ssdcache.sweep(trace, ["lru", "mainlru", "clock", "modclock"], ["64KiB", "1MiB"], executor="ray", progress=False)
curves = ssdcache.mrc(trace, cache=["64KiB", "1MiB"], policy=["clock", "modclock"], sample="50%", executor="ray")
try:
    ssdcache.sweep(trace, ["raises"], "64KiB", executor="ray", progress=False)
    error = None
except ssdcache.PolicyError as e:
    error = str(e)
with open(out_path, "wb") as f:
    pickle.dump((df, curves, error), f)
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""


def test_ray_runs_python_policies_defined_in_main_and_in_modules(ray_address, fin1, tmp_path):
    examples = pathlib.Path(__file__).resolve().parents[2] / "examples" / "policies"
    out = tmp_path / "out.pickle"
    # (`clock` travels by reference: the workers import it as the driver does, from the
    # driver's working directory and PYTHONPATH, as a user's installed module would be)
    env = {**_ray_env(), "RAY_ADDRESS": ray_address,
           "PYTHONPATH": f"{examples}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    driver = subprocess.run([sys.executable, "-c", _POLICY_DRIVER, fin1, str(out)], env=env, capture_output=True,
                            text=True, timeout=600, cwd=examples)
    assert driver.returncode == 0, f"{driver.stdout[-2000:]}\n{driver.stderr[-4000:]}"
    with open(out, "rb") as f:
        df, curves, error = pickle.load(f)
    rows = {p: df[df.policy == p].drop(columns="policy").reset_index(drop=True) for p in df.policy.unique()}
    assert rows["mainlru"].equals(rows["lru"]) and rows["modclock"].equals(rows["clock"])
    a, b = (curves[curves.policy == p].drop(columns="policy").reset_index(drop=True) for p in ("clock", "modclock"))
    assert a.equals(b)
    assert error and "policy raises (Raises) at request" in error and "evict() returned None" in error, error
