"""One run: argument checks, the `_core.run` call, the Result."""

from __future__ import annotations

import datetime
import json
import numbers
from typing import Any

from . import _core
from ._result import Result
from ._trace import Mode, Size, TraceLike, to_source

__all__ = ["simulate", "run_spec", "run_json", "SPEC_KEYS"]

SPEC_KEYS = ("policy", "cache", "page", "mode", "device", "cache_device", "interval", "queue_depth", "iat_scale",
             "repeat", "align_pages", "warmup")


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _size(name: str, value: Any) -> int | str:
    if isinstance(value, float) and value.is_integer():
        if value >= 2**64:  # (as an int, 1e300 has 301 digits: say it as given)
            raise ValueError(f"{name} {value:g}: too large: a size is at most 2^64 - 1 bytes (16 EiB)")
        value = int(value)
    if _is_int(value):
        if value <= 0:
            raise ValueError(f"{name} must be greater than zero, not {value}")
        return int(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise ValueError(f"{name} must be a size such as '64MiB' or a number of bytes, not {value!r}")


def _text(name: str, value: Any, example: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise ValueError(f"{name} must be a string such as {example!r}, not {value!r}")


def run_spec(policy: Any = "lru", cache: Any = "64MiB", page: Any = "4KiB", mode: Any = "write-back",
             device: Any = None, cache_device: Any = None, interval: Any = None, queue_depth: Any = None,
             iat_scale: Any = None, repeat: Any = 1, align_pages: Any = False, warmup: Any = None) -> dict[str, Any]:
    """The `_core.run` spec dict for one run; checks types, leaves meaning to `_core`."""
    spec: dict[str, Any] = {
        "policy": _text("policy", policy, "arc or 2q(kin=25%)"),
        "cache": _size("cache", cache),
        "page": _size("page", page),
        "mode": _text("mode", mode, "write-back"),
    }
    dev = _text("device", device, "ftl(nand=mlc2)", optional=True)
    if dev is not None:
        spec["device"] = dev
    cdev = _text("cache_device", cache_device, "ssd", optional=True)
    if cdev is not None:
        spec["cache_device"] = cdev
    if interval is not None:
        if isinstance(interval, datetime.timedelta):
            interval = round(interval.total_seconds() * 1e9)
        if _is_int(interval):
            if interval <= 0:
                raise ValueError(f"interval must be longer than zero, not {interval}")
            spec["interval"] = int(interval)
        elif isinstance(interval, str) and interval.strip():
            spec["interval"] = interval.strip()
        else:
            raise ValueError(f"interval must be a duration such as '1d' or '10min', or nanoseconds, not {interval!r}")
    if queue_depth is not None:
        if not _is_int(queue_depth):
            raise ValueError(f"queue_depth must be a whole number (1..=512), not {queue_depth!r}")
        spec["queue_depth"] = int(queue_depth)
    if iat_scale is not None:
        if not isinstance(iat_scale, numbers.Real) or isinstance(iat_scale, bool):
            raise ValueError(f"iat_scale must be a number, not {iat_scale!r}")
        spec["iat_scale"] = float(iat_scale)
    if not _is_int(repeat) or repeat < 1:
        raise ValueError(f"repeat must be a whole number of at least 1, not {repeat!r}")
    spec["repeat"] = int(repeat)
    if not isinstance(align_pages, bool):
        raise ValueError(f"align_pages must be True or False, not {align_pages!r}")
    if align_pages:
        spec["align_pages"] = True
    if warmup is not None:
        spec["warmup"] = _warmup(warmup)
    return spec


def _warmup(value: Any) -> int | str:
    """A warm-up: a request count, or text such as "20%", "1h", "5M"."""
    if _is_int(value):
        if value <= 0:
            raise ValueError(f"warmup must be more than zero requests, not {value}")
        return int(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise ValueError(f"warmup must be a share such as '20%', a duration such as '1h', or a request count, "
                     f"not {value!r}")


def run_json(source: Any, spec: dict[str, Any]) -> str:
    """`_core.run`, with anything but a RuntimeError reported as ValueError."""
    try:
        return _core.run(source, spec)
    except (ValueError, RuntimeError):
        raise
    except (OSError, TypeError, OverflowError) as e:  # defensive: the contract says ValueError
        raise ValueError(str(e)) from e


def simulate(trace: TraceLike, policy: str = "lru", cache: Size = "64MiB", page: Size = "4KiB",
             mode: Mode | str = "write-back", device: str | None = None, cache_device: str | None = None,
             interval: str | int | None = None, queue_depth: int | None = None, iat_scale: float | None = None,
             repeat: int = 1, align_pages: bool = False, warmup: str | int | None = None, *,
             format: str = "auto", skip_bad: bool = False, csv_columns: str | None = None,
             unit: str = "page") -> Result:
    """Runs one simulation and returns its report: the numbers ``ssdcache sim --json`` prints.

    The simulation runs in Rust without holding the GIL, so threads can run
    several at once (``sweep`` does).

    Parameters
    ----------
    trace:
        A trace file path (any format ``ssdcache trace formats`` lists, sniffed;
        compressed files read transparently), a generator spec such as
        ``"zipf(alpha=0.9,keys=1M,requests=1M)"`` (``ssdcache.generators()``), a
        :class:`Trace` from :func:`ssdcache.load` (parsed once, replayed without
        reparsing; also the way to give a format or CSV column mapping), or numpy
        arrays: ``{"pages": …, "ops": …, "sizes": …, "times": …}`` or
        ``(pages, ops[, sizes[, times]])`` — page numbers, ops 0/1/2 (read, write,
        trim) or ``"r"``/``"w"``/``"t"``, sizes in pages (default 1), times in ns
        (default 0).
    policy:
        Policy spec, ``NAME`` or ``NAME(key=value,…)``, e.g. ``"2q(kin=25%)"``;
        ``ssdcache.policies()`` lists them with their parameters.
    cache:
        Cache size: bytes, a string such as ``"64MiB"``, or a share of the trace's
        footprint (distinct pages touched) such as ``"5%"`` (rounded up to whole
        pages; the report's ``cache_share`` and ``footprint_pages`` say so).
    page:
        Cache page size (the unit of caching), default ``"4KiB"``: a multiple of
        512 B from 512 B to 1 MiB.
    mode:
        ``"write-back"``, ``"write-through"``, ``"write-around"``, ``"write-only"``
        or ``"read-only"`` (``ssdcache.modes()``).
    device:
        Backing device model charged with the cache's I/O, e.g.
        ``"ftl(type=hybrid,nand=mlc1)"``, ``"hdd(model=rpm7200)"``, ``"ssd"``
        (``ssdcache.devices()``); adds device counters and execution time.
    cache_device:
        The cache's own device (e.g. ``"ssd"`` in front of ``device="hdd"``).
    interval:
        Per-interval time series (``Result.series``): a duration such as ``"1d"``
        or ``"10min"``, or nanoseconds.
    queue_depth, iat_scale:
        Open-loop replay through an NCQ of this depth (1..=512) with
        inter-arrival times scaled by this factor; needs ``device``.
    repeat:
        Replay the trace this many times back to back.
    align_pages:
        Take every request as page-aligned (rounded out to whole pages), so no
        write is partial and none costs a read-for-write (``sim --align-pages``).
    warmup:
        Run the head of the trace through the cache and devices uncounted: a
        share of the requests (``"20%"``), a duration of trace time (``"1h"``)
        or a request count (``"5M"``, ``500_000``) — ``sim --warmup``. The
        report's ``warmup_requests`` says how many were skipped.
    format, skip_bad, csv_columns:
        How to read a trace file (``sim --format``, ``--skip-bad``,
        ``--csv-columns``), e.g. ``format="keys-u32be"``.
    unit:
        ``"page"`` (default) or ``"object"`` (``sim --unit object``): each request
        a key with a size in bytes (trace formats oracle-general, lcs, twr,
        webcachesim, csv), ``cache`` in bytes or a share of the footprint in bytes,
        ``policy`` a size-aware one (lru, fifo, clock, s3fifo, sieve, gdsf); the
        report has ``miss_ratio``, ``byte_miss_ratio``, ``too_large``, the byte
        hits of reads and writes. Page options (``page``, ``mode``, devices,
        queues, ``interval``, ``repeat``, ``warmup``) are refused.

    Returns
    -------
    Result
        Every report field as an attribute (``r.hit_ratio``, ``r.backing_writes``,
        …), ``r.to_dict()``, ``r.series``.

    Raises
    ------
    ValueError
        Unknown policy, malformed size, missing file, bad device spec, bad arrays…
        with the message the CLI prints.

    Example
    -------
    >>> import ssdcache
    >>> r = ssdcache.simulate("zipf(alpha=0.9,keys=100k,requests=1M)", policy="arc", cache="64MiB")
    >>> r.hit_ratio                                              # doctest: +SKIP
    0.71...
    >>> ssdcache.simulate("trace.spc.gz", policy="cflru", cache="16MiB",
    ...                   device="ftl(nand=mlc2)").execution_time_ns   # doctest: +SKIP
    """
    from ._objects import check_unit, refuse_page_options, simulate_objects

    if check_unit(unit):
        refuse_page_options(
            dict(page=page, mode=mode, device=device, cache_device=cache_device, interval=interval,
                 queue_depth=queue_depth, iat_scale=iat_scale, repeat=repeat, align_pages=align_pages, warmup=warmup),
            dict(page="4KiB", mode="write-back", repeat=1, align_pages=False))
        return simulate_objects(to_source(trace, format=format, skip_bad=skip_bad, csv_columns=csv_columns), policy,
                                cache)
    spec = run_spec(policy, cache, page, mode, device, cache_device, interval, queue_depth, iat_scale, repeat,
                    align_pages, warmup)
    source = to_source(trace, format=format, skip_bad=skip_bad, csv_columns=csv_columns)
    return Result(json.loads(run_json(source, spec)))
