"""Ray, for ``executor="ray"``: joining (or starting) a cluster and gathering tasks'
results, shared by :func:`ssdcache.sweep` (a task per run) and :func:`ssdcache.mrc`
(a task per trace). Ray is optional: it is imported only when a caller asks for it."""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from typing import Any

from ._policy import PolicyError

__all__ = ["init", "gather", "writable", "address_file", "check_cluster"]

_MISSING = "executor='ray' needs Ray: pip install 'ssdcache[ray]' (or pip install ray)"


def init() -> Any:
    """The ``ray`` module, connected: joins the cluster a plain ``ray.init()`` joins (or starts
    a local one) unless Ray is initialised already; fails fast when that cluster is gone."""
    try:
        import ray
    except ImportError:
        raise ImportError(_MISSING) from None
    if not ray.is_initialized():
        check_cluster()
        ray.init()
    return ray


def gather(ray: Any, futures: Sequence[Any], bar: Any = None) -> list[Any]:
    """The results of `futures`, in order, ticking the progress `bar` (if any) as tasks end.

    On a failure the other tasks are cancelled; a task's ``ValueError`` (which Ray wraps in a
    ``RayTaskError``) is raised as a plain ``ValueError``, as the local executor raises it."""
    try:
        if bar is not None:
            pending = list(futures)
            while pending:
                done, pending = ray.wait(pending, num_returns=len(pending), timeout=0.2)
                bar.update(len(done))
        return list(ray.get(list(futures)))
    except Exception as e:
        for f in futures:
            ray.cancel(f, force=False)
        cause = getattr(e, "cause", None)
        if isinstance(cause, ValueError):  # a RayTaskError wrapping the task's error
            raise ValueError(str(cause)) from None
        if isinstance(cause, PolicyError):  # a Python policy broke a rule on the worker
            raise PolicyError(str(cause)) from e
        raise


def writable(source: Any) -> Any:
    """A trace source whose arrays `_core` may use: arrays from Ray's object store are
    read-only views, copied here; anything else is returned as it is."""
    if isinstance(source, dict) and "arrays" in source:
        arrays = {k: (v if v.flags.writeable else v.copy()) for k, v in source["arrays"].items()}
        return dict(source, arrays=arrays)
    return source


def address_file() -> str:
    """Where `ray start` leaves the address of the cluster a plain `ray.init()` joins."""
    try:
        from ray._common.utils import get_ray_address_file

        return str(get_ray_address_file(None))
    except Exception:  # pragma: no cover - Ray's layout moved
        return os.path.join(os.environ.get("RAY_TMPDIR", "/tmp"), "ray", "ray_current_cluster")


def check_cluster(timeout: float = 3.0) -> None:
    """Fails fast, with a message that says what to do, when the cluster `ray.init()` would
    join (``RAY_ADDRESS``, else the address the last `ray start` left in Ray's temp directory)
    does not answer: Ray itself would retry for minutes before giving up."""
    env = os.environ.get("RAY_ADDRESS", "")
    if env:
        address, source = env, "RAY_ADDRESS"
    else:
        path = address_file()
        try:
            with open(path, encoding="utf-8") as f:
                address = f.read().strip()
        except OSError:
            return  # no cluster recorded: ray.init() starts a local one
        source = f"{path}, left by the last `ray start`"
    if not address or address in ("auto", "local") or "://" in address:
        return  # Ray's own lookup, a fresh local instance, or a Ray Client address
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout):
            return
    except (OSError, ValueError) as e:
        reason = str(e) or type(e).__name__
    raise ConnectionError(
        f"executor='ray': the Ray cluster at {address} (from {source}) does not answer ({reason}). "
        "Start it again, join another with ray.init(address=...) before sweeping, or "
        + ("unset RAY_ADDRESS" if source == "RAY_ADDRESS" else "delete that file")
        + " to run on a new local Ray instance.")
