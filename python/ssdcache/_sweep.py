"""Sweeps: traces × policies × caches × pages × modes × devices, on all cores or on Ray."""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import json
import os
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import _core, _policy, _ray
from ._results_io import frame
from ._run import run_json, run_spec
from ._trace import Size, Trace, TraceLike, spec_of, to_source

if TYPE_CHECKING:
    import pandas

__all__ = ["sweep", "split_list", "frame"]

_COMMON = ("cache_device", "interval", "queue_depth", "iat_scale", "repeat", "align_pages", "warmup")
# A one-request trace: running every distinct spec on it first checks policy specs,
# sizes, modes and device specs before any trace is read, as the CLI does.
_PROBE = {"arrays": {"addr": np.zeros(1, np.uint64), "op": np.zeros(1, np.uint8)}, "unit": "pages",
          "name": "(argument check)"}


def split_list(text: str) -> list[str]:
    """Splits ``"lru,arc,2q(kin=25%,kout=50%)"`` at commas outside parentheses, as the CLI does."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _values(name: str, value: Any, *, none_ok: bool = False) -> list[Any]:
    if value is None:
        if none_ok:
            return [None]
        raise ValueError(f"{name}: give at least one value")
    if isinstance(value, str):
        out: list[Any] = split_list(value)
    elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        out = [value]
    elif isinstance(value, Mapping):
        raise ValueError(f"{name}: expected a value or a list of values, not a dict")
    else:
        try:
            out = list(value)
        except TypeError:
            raise ValueError(f"{name}: expected a value or a list of values, not {value!r}") from None
        out = [v.item() if isinstance(v, (np.integer, np.floating)) else v for v in out]
    if not out:
        raise ValueError(f"{name}: give at least one value")
    return out


def _number(name: str, value: Any, kind: type) -> Any:
    """`"512"` -> 512, as the CLI's `--queue-depth 32,512` reads it; other values as they are."""
    if isinstance(value, str):
        try:
            return kind(value)
        except ValueError:
            raise ValueError(f"{name}: {value!r} is not a {'whole number' if kind is int else 'number'}") from None
    return value


def _traces(traces: Any) -> list[Any]:
    """A single trace, or a list of them."""
    if traces is None:
        raise ValueError("traces: give a trace (path, generator spec, Trace or arrays) or a list of them")
    if isinstance(traces, (str, os.PathLike, Mapping, Trace)) or type(traces).__name__ == "DataFrame":
        return [traces]
    if isinstance(traces, tuple) and traces and isinstance(traces[0], np.ndarray):
        return [traces]  # (pages, ops, …)
    if hasattr(traces, "requests") and hasattr(traces, "unit"):
        return [traces]  # a loaded _core trace
    try:
        out = list(traces)
    except TypeError:
        raise ValueError(f"traces: cannot use {type(traces).__name__} as a trace") from None
    if out and all(isinstance(t, np.ndarray) for t in out):
        return [traces]  # [pages, ops, …]: one trace of arrays
    if not out:
        raise ValueError("traces: give at least one trace")
    return out


def _progress(total: int, enabled: bool, desc: str):
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(total=total, desc=desc, unit="run", leave=False)


def sweep(traces: TraceLike | Sequence[TraceLike], policies: str | Sequence[str], caches: Size | Sequence[Size],
          pages: Size | Sequence[Size] = "4KiB", modes: str | Sequence[str] = "write-back",
          devices: str | None | Sequence[str | None] = None, *, executor: Literal["local", "ray"] = "local",
          jobs: int | None = None,
          progress: bool = True, format: str = "auto", skip_bad: bool = False, csv_columns: str | None = None,
          unit: str = "page", **common: Any) -> pandas.DataFrame:
    """Runs every combination of traces × policies × caches × pages × modes × devices and
    returns a pandas DataFrame, one row per run, in that order.

    The columns are those of ``ssdcache sim --csv`` (the JSON report's keys, in
    report order, without ``series``) and the numbers are the CLI's for the
    same inputs. With ``interval=`` the per-run series are in
    ``df.attrs["series"]`` (a list, one per row) for :func:`ssdcache.plot.series`.

    Parameters
    ----------
    traces:
        One trace or a list: file paths, generator specs, :class:`Trace` objects
        from :func:`ssdcache.load`, numpy-array traces (see :func:`simulate`).
    policies:
        Policy specs: a list, or a comma-separated string
        (``"lru,arc,2q(kin=25%,kout=50%)"``; commas inside parentheses stay).
    caches:
        Cache sizes: a list of sizes (``"64MiB"``, bytes, or a share of each
        trace's footprint such as ``"5%"``), or ``"1%,5%,64MiB"``. A trace's
        footprint is found once and shared by every run on it.
    pages:
        Page size(s), default ``"4KiB"``.
    modes:
        Write mode(s), default ``"write-back"``.
    devices:
        Backing device spec(s); ``None`` for none. A list may hold ``None``.
    executor:
        ``"local"``: a thread per core (the simulations run without the GIL);
        ``"ray"``: each run a Ray task (``ray.init(address=…)`` first for a
        cluster; otherwise ``ray.init()`` joins the cluster of ``RAY_ADDRESS`` or
        of the last ``ray start``, or starts a local Ray; a ConnectionError says so
        at once if that cluster does not answer). Trace files
        must exist at the same path on every worker; arrays travel through the
        object store. Both give identical results.
    jobs:
        Worker threads for ``"local"`` (default: ``os.cpu_count()``).
    progress:
        Show a tqdm progress bar.
    format, skip_bad, csv_columns:
        How to read trace files, as :func:`simulate` takes them.
    unit:
        ``"object"`` for object mode (see :func:`simulate`): traces × policies ×
        caches on local threads, the columns of ``ssdcache sim --unit object --csv``.
    **common:
        Passed to every run: ``cache_device``, ``interval``, ``repeat``, ``align_pages``, ``warmup``,
        ``queue_depth`` and ``iat_scale`` (these two may be lists, swept like the
        CLI's ``--queue-depth 32,512 --iat-scale 1,2``, innermost).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ValueError
        Bad arguments (checked for every combination before any trace is read),
        missing files, malformed traces.

    Example
    -------
    >>> df = ssdcache.sweep("Financial1.spc", ["lru", "arc", "belady"], ["1MiB", "4MiB"])  # doctest: +SKIP
    >>> df[["policy", "cache_bytes", "hit_ratio", "backing_accesses"]]                      # doctest: +SKIP
    """
    unknown = sorted(set(common) - set(_COMMON))
    if unknown:
        raise ValueError(f"sweep: unknown argument(s) {', '.join(unknown)}; "
                         f"the arguments passed to every run are {', '.join(_COMMON)}")
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be 'local' or 'ray', not {executor!r}")
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise ValueError(f"jobs must be a whole number of at least 1, not {jobs!r}")
    trace_list = _traces(traces)
    from ._objects import check_unit, refuse_page_options, sweep_objects

    if check_unit(unit):
        refuse_page_options(dict(pages=pages, modes=modes, devices=devices, executor=executor, **common),
                            dict(pages="4KiB", modes="write-back", executor="local"))
        sources = [to_source(t, format=format, skip_bad=skip_bad, csv_columns=csv_columns) for t in trace_list]
        return sweep_objects(sources, _values("policies", policies), _values("caches", caches), jobs)
    dims = [
        _values("policies", policies),
        _values("caches", caches),
        _values("pages", pages),
        _values("modes", modes),
        _values("devices", devices, none_ok=True),
        [_number("queue_depth", v, int) for v in _values("queue_depth", common.get("queue_depth"), none_ok=True)],
        [_number("iat_scale", v, float) for v in _values("iat_scale", common.get("iat_scale"), none_ok=True)],
    ]
    specs = [
        run_spec(policy=p, cache=c, page=pg, mode=m, device=d, cache_device=common.get("cache_device"),
                 interval=common.get("interval"), queue_depth=q, iat_scale=s, repeat=common.get("repeat", 1),
                 align_pages=common.get("align_pages", False), warmup=common.get("warmup"))
        for p, c, pg, m, d, q, s in itertools.product(*dims)
    ]
    # path and array checks, before any run
    sources = [to_source(t, format=format, skip_bad=skip_bad, csv_columns=csv_columns) for t in trace_list]
    _check_specs(specs)
    cells = [(i, spec) for i in range(len(sources)) for spec in specs]
    if executor == "local":
        texts = _run_local(sources, cells, jobs, progress)
    else:
        texts = _run_ray([spec_of(t) if isinstance(t, Trace) else s for t, s in zip(trace_list, sources)], cells,
                         progress)
    return frame([json.loads(t) for t in texts])


def _check_specs(specs: list[dict]) -> None:
    seen = set()
    for spec in specs:
        key = json.dumps({k: v for k, v in spec.items() if k != "repeat"}, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        # (a warm-up is checked alone: it would take the whole one-request probe)
        probe = {k: v for k, v in spec.items() if k != "warmup"}
        if "warmup" in spec:
            _core.check_warmup(spec["warmup"])
        run_json(_PROBE, dict(probe, repeat=1))


def _run_local(sources: list[Any], cells: list[tuple[int, dict]], jobs: int | None, progress: bool) -> list[str]:
    workers = jobs or os.cpu_count() or 1
    bar = _progress(len(cells), progress and len(cells) > 1, "ssdcache sweep")
    out: list[str | None] = [None] * len(cells)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ssdcache")
    try:
        # Parse each trace once; every run on it shares the parse.
        loaded = list(pool.map(_load_shared, sources)) if len(cells) > len(sources) else sources
        futures = {pool.submit(run_json, loaded[i], spec): n for n, (i, spec) in enumerate(cells)}
        for fut in concurrent.futures.as_completed(futures):
            out[futures[fut]] = fut.result()
            if bar is not None:
                bar.update(1)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        if bar is not None:
            bar.close()
    pool.shutdown(wait=True)
    return out  # type: ignore[return-value]


def _load_shared(source: Any) -> Any:
    if not isinstance(source, dict):
        return source  # already loaded
    try:
        return _core.load(source)
    except (OSError, TypeError) as e:  # defensive: the contract says ValueError
        raise ValueError(str(e)) from e


# --- Ray -----------------------------------------------------------------------------------

# Traces a Ray worker process has loaded, by sweep-local id: each worker parses a
# trace once however many of its runs it serves.
_worker_traces: collections.OrderedDict[str, Any] = collections.OrderedDict()
_worker_lock = threading.Lock()
_WORKER_CACHE = 4


def _ray_cell(trace_id: str, source: Any, spec: dict, policies: bytes | None = None) -> str:
    """One run on a Ray worker, with the driver's Python policies registered; returns the JSON report."""
    _policy.install(policies)
    with _worker_lock:
        trace = _worker_traces.get(trace_id)
        if trace is not None:
            _worker_traces.move_to_end(trace_id)
    if trace is None:
        trace = _load_shared(_ray.writable(source))
        with _worker_lock:
            _worker_traces[trace_id] = trace
            while len(_worker_traces) > _WORKER_CACHE:
                _worker_traces.popitem(last=False)
    return run_json(trace, spec)


def _run_ray(sources: list[Any], cells: list[tuple[int, dict]], progress: bool) -> list[str]:
    ray = _ray.init()
    remote = ray.remote(_ray_cell)
    ids = [uuid.uuid4().hex for _ in sources]
    refs = [ray.put(s) for s in sources]
    policies = ray.put(_policy.export())
    futures = [remote.remote(ids[i], refs[i], spec, policies) for i, spec in cells]
    bar = _progress(len(futures), progress and len(futures) > 1, "ssdcache sweep (ray)")
    try:
        return _ray.gather(ray, futures, bar)
    finally:
        if bar is not None:
            bar.close()
