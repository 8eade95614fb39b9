"""executor="ray" gives the same DataFrame as the local executor, on a local Ray instance."""

import numpy as np
import pandas as pd
import pytest

import ssdcache

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    if started:
        ray.shutdown()


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
