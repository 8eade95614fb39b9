"""Miss-ratio curves: `mrc`, the exact LRU curve of a trace in one pass, or any
policy's curve estimated from a sample of page keys."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal, Sequence

from . import _core, _policy, _ray
from ._run import _size, _warmup
from ._trace import Size, Trace, TraceLike, _is_arraylike, spec_of, to_source

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["mrc"]


def mrc(trace: TraceLike | Sequence[TraceLike], cache: Sequence[Size] | Size | None = None, points: int = 20,
        page: Size = "4KiB", policy: str | Sequence[str] = "lru", *, sample: str | float | None = None,
        sample_keys: int | None = None, seed: int = 0, warmup: str | int | None = None, format: str = "auto",
        skip_bad: bool = False, csv_columns: str | None = None,
        executor: Literal["local", "ray"] = "local", unit: str = "page") -> "pd.DataFrame":
    """The LRU miss-ratio curve of `trace`, exact, from one pass (stack distances):
    a row per cache size with page, read, write and request miss ratios and the
    dirty write-backs a write-back LRU cache of that size makes — the numbers
    `simulate(trace, "lru", cache=size)` gives, for every size at once.

    Sizes are `cache` (bytes, "64MiB", or a share of the footprint such as
    "5%", each; a string may list several, "1%,5%,64MiB"), or else `points`
    sizes evenly spaced up to the trace's footprint. `warmup` ("20%", "1h",
    "5M" or a request count) warms the LRU stack with the head of the trace
    uncounted, as `simulate(..., warmup=)`. `format`, `skip_bad` and
    `csv_columns` say how to read a trace file. Only `policy="lru"` is exact in
    one pass.

    With `sample` (a rate: "1%", 0.01) or `sample_keys` (fixed-size SHARDS, lru
    only), the curve is estimated from a hashed sample of page keys, seeded by
    `seed`: SHARDS for "lru", miniature simulation (the real policy on the
    sample, caches scaled by the rate) for any other policy; `policy` may then
    name several ("arc,lirs" or a list). Columns `method` (exact, shards,
    miniature) and `sample_rate` say which. Sampled curves take sizes in bytes
    and no warm-up.

    A list of traces gives one frame with a block of rows per trace (the
    `trace` column tells them apart); `executor="ray"` computes each trace's
    curve as a Ray task (one per trace), as `sweep` does its runs.

    `unit="object"` (``mrc --unit object``): sizes in bytes (all bytes or all
    shares of the footprint in bytes); the exact byte-LRU curve from stack
    distances over bytes, or with `sample` miniature curves of size-aware
    policies; columns `cache_bytes`, `misses`, `miss_bytes`, `miss_ratio`,
    `byte_miss_ratio`, `too_large`.
    """
    import pandas as pd

    from ._objects import check_unit, mrc_objects, refuse_page_options

    if not isinstance(policy, str):
        policy = ",".join(policy)
    if check_unit(unit):
        refuse_page_options(dict(page=page, sample_keys=sample_keys, warmup=warmup, executor=executor),
                            dict(page="4KiB", executor="local"))
        if cache is not None:
            from ._sweep import split_list

            cache = split_list(cache) if isinstance(cache, str) else [cache] if isinstance(cache, int) else cache
        several = isinstance(trace, (list, tuple))
        sources = [to_source(t, format=format, skip_bad=skip_bad, csv_columns=csv_columns)
                   for t in (trace if several else [trace])]
        sizes = None if cache is None else [_size("cache", c) for c in cache]
        return mrc_objects(sources, sizes, points, policy, None if sample is None else str(sample), seed)
    sampled = sample is not None or sample_keys is not None
    if sampled:
        _check_sampling(sample, sample_keys, seed)
    elif policy.strip().lower() != "lru":
        raise ValueError(f"policy {policy!r}: mrc computes exact curves for 'lru' only; for another policy "
                         "use sweep(trace, policy, cache=[...]), or sample='1%' for an estimate")
    if isinstance(points, bool) or not isinstance(points, int) or not 1 <= points <= 100_000:
        raise ValueError(f"points must be a whole number from 1 to 100000, not {points!r}")
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be 'local' or 'ray', not {executor!r}")
    sizes: list[Any] | None = None
    if cache is not None:
        if isinstance(cache, str):
            from ._sweep import split_list

            cache = split_list(cache)
        elif isinstance(cache, int):
            cache = [cache]
        sizes = [_size("cache", c) for c in cache]
        if not sizes:
            raise ValueError("cache must name at least one size")
    warm = None if warmup is None else _warmup(warmup)
    if warm is not None:
        _core.check_warmup(warm)
    several = isinstance(trace, (list, tuple)) and not _is_array_tuple(trace)
    traces = list(trace) if several else [trace]
    if not traces:
        raise ValueError("give at least one trace")
    sources = [to_source(t, format=format, skip_bad=skip_bad, csv_columns=csv_columns) for t in traces]
    page_size = _size("page", page)
    sampling = (policy, None if sample is None else str(sample), sample_keys, seed) if sampled else None
    if executor == "ray":
        ray = _ray.init()
        remote = ray.remote(_curve_text)
        shipped = [spec_of(t) if isinstance(t, Trace) else s for t, s in zip(traces, sources)]
        policies = _policy.export() if sampling is not None else None
        futures = [remote.remote(s, page_size, sizes, points, warm, sampling, policies) for s in shipped]
        texts = _ray.gather(ray, futures)
    else:
        texts = [_curve_text(s, page_size, sizes, points, warm, sampling) for s in sources]
    frames, curves = [], []
    for text in texts:
        loaded = json.loads(text)
        # (a sampled run gives a list: one curve per policy)
        for curve in loaded if isinstance(loaded, list) else [loaded]:
            frame = pd.DataFrame(curve.pop("points"))
            for i, key in enumerate(("trace", "policy", "method", "sample_rate")):
                frame.insert(i, key, curve[key])
            # (the columns of `ssdcache mrc --csv`)
            frame["warmup"] = curve.get("warmup")
            frame["warmup_requests"] = curve.get("warmup_requests", 0)
            frames.append(frame)
            curves.append(curve)
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    # what each curve is of: requests, footprint, trims, skipped lines, warm-up
    if several or len(curves) > 1:
        out.attrs["curves"] = curves
    else:
        out.attrs.update(curves[0])
    return out


def _is_array_tuple(trace: Any) -> bool:
    """`(pages, ops[, sizes[, times]])` is one trace, not a list of traces."""
    return 2 <= len(trace) <= 4 and all(_is_arraylike(a) for a in trace)


def _check_sampling(sample: Any, sample_keys: Any, seed: Any) -> None:
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, (str, int, float))):
        raise ValueError(f"sample must be a rate like '1%' or 0.01, not {sample!r}")
    if sample_keys is not None and (isinstance(sample_keys, bool) or not isinstance(sample_keys, int)
                                    or sample_keys < 1):
        raise ValueError(f"sample_keys must be a whole number of keys of at least 1, not {sample_keys!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be a whole number from 0 to 2^64-1, not {seed!r}")


def _curve_text(source: Any, page: Any, sizes: list[Any] | None, points: int, warmup: Any,
                sampling: tuple[str, str | None, int | None, int] | None, policies: bytes | None = None) -> str:
    """One trace's curve, as `ssdcache mrc --json` prints it (also a Ray task, given the
    driver's Python `policies`); with `sampling` (policy, rate, keys, seed), the JSON list of
    sampled curves."""
    _policy.install(policies)
    source = _ray.writable(source)
    try:
        if sampling is None:
            return _core.mrc(source, page, sizes, points, warmup)
        policy, rate, keys, seed = sampling
        return _core.mrc(source, page, sizes, points, warmup, policy, rate, keys, seed)
    except (ValueError, RuntimeError):
        raise
    except (OSError, TypeError, OverflowError) as e:  # defensive: the contract says ValueError
        raise ValueError(str(e)) from e
