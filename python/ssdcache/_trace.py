"""Turning what a user calls a trace into what `_core` takes.

`_core.run` and `_core.load` take a dict (`{"path": …}`, `{"gen": …}`,
`{"arrays": …}`) or a `_core.Trace`. Everything here checks its input in
Python first, so that a mistake raises a ValueError that says what was wrong
before any Rust code runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Union

import numpy as np
from numpy.typing import ArrayLike

from . import _core

if TYPE_CHECKING:
    import pandas

__all__ = ["Trace", "load", "to_source", "spec_of"]

# Numpy arrays: {"pages": …, "ops": …, "sizes"?: …, "times"?: …} or (pages, ops[, sizes[, times]]).
ArrayTrace = Union[
    Mapping[str, Union[ArrayLike, str]],
    tuple[ArrayLike, ArrayLike],
    tuple[ArrayLike, ArrayLike, ArrayLike],
    tuple[ArrayLike, ArrayLike, ArrayLike, ArrayLike],
    "pandas.DataFrame",
]
# For signatures: a file path, a generator spec, a loaded Trace, or numpy arrays.
TraceLike = Union[str, os.PathLike[str], "Trace", ArrayTrace]
# Bytes, or a size with a unit such as "64MiB".
Size = Union[int, str]
# The cache write modes (`ssdcache.modes()`).
Mode = Literal["write-back", "write-through", "write-around", "write-only", "read-only"]

# the loaded-trace class of `_core`, if it exposes one by name
_CoreTrace = getattr(_core, "Trace", ())

# A generator spec: NAME or NAME(…), NAME as `ssdcache trace gen --list` shows it.
_GEN_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_-]*)\s*(\(.*\))?\s*$", re.S)

_OPS = {
    "r": 0, "read": 0, "0": 0,
    "w": 1, "write": 1, "1": 1,
    "t": 2, "trim": 2, "d": 2, "discard": 2, "2": 2,
}

# dict keys accepted for array traces, and the `_core` array each becomes
_ARRAY_KEYS = {
    "pages": "addr", "addr": "addr",
    "ops": "op", "op": "op",
    "sizes": "len", "len": "len",
    "times": "time", "time": "time",
    "devs": "dev", "dev": "dev",
}
_META_KEYS = {"unit", "name"}


class Trace:
    """A trace parsed once into memory; pass it to :func:`simulate` or :func:`sweep`
    to replay it many times without reparsing.

    Made by :func:`ssdcache.load`. Attributes: ``name`` (what reports call it),
    ``format`` (the reader used), ``requests`` (count), ``unit`` ("bytes" or
    "pages"), ``skipped`` (malformed lines skipped with ``skip_bad``),
    ``source`` (the dict it was loaded from; pickling a Trace ships
    this and loads it again on the other side, e.g. on a Ray worker).
    """

    __slots__ = ("_trace", "_source")

    def __init__(self, trace: Any, source: dict[str, Any] | None) -> None:
        self._trace = trace
        self._source = source

    @property
    def name(self) -> str:
        return self._trace.name

    @property
    def format(self) -> str:
        return self._trace.format

    @property
    def requests(self) -> int:
        return int(self._trace.requests)

    @property
    def unit(self) -> Literal["bytes", "pages"]:
        return self._trace.unit

    @property
    def skipped(self) -> int:
        """Malformed lines skipped (``skip_bad=True``)."""
        return int(getattr(self._trace, "skipped", 0))

    @property
    def source(self) -> dict[str, Any] | None:
        return self._source

    def __len__(self) -> int:
        return self.requests

    def __repr__(self) -> str:
        return f"Trace({self.name!r}, format={self.format!r}, requests={self.requests:,}, unit={self.unit!r})"

    def __reduce__(self):
        if self._source is None:  # made from a `_core` trace: that pickles itself
            return (Trace, (self._trace, None))
        return (_reload, (self._source,))


def _reload(source: dict) -> Trace:
    return Trace(_core_load(source), source)


def _core_load(source: dict) -> Any:
    try:
        return _core.load(source)
    except ValueError:
        raise
    except (OSError, TypeError) as e:  # defensive: the contract says ValueError
        raise ValueError(str(e)) from e


def _generator_names() -> set[str]:
    try:
        return {g["name"] for g in _core.generators()}
    except Exception:  # pragma: no cover - only if _core is broken
        return set()


def _path_source(path: str, fmt: str, skip_bad: bool, csv_columns: str | None) -> dict:
    if not os.path.exists(path):
        raise ValueError(f"trace file not found: {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"trace path is a directory, not a file: {path!r}")
    if not isinstance(fmt, str) or not fmt:
        raise ValueError(f"format must be a format name such as 'auto' or 'csv', not {fmt!r}")
    if fmt == "csv" and not csv_columns:
        raise ValueError("format 'csv' needs csv_columns, e.g. 'time=0,op=1,offset=2,size=3'")
    if csv_columns is not None and not isinstance(csv_columns, str):
        raise ValueError(f"csv_columns must be a string such as 'time=0,op=1,offset=2,size=3', not {csv_columns!r}")
    return {"path": path, "format": fmt, "skip_bad": bool(skip_bad), "csv_columns": csv_columns}


def _int_array(name: str, values: Any, dtype: type, *, minimum: int = 0) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a one-dimensional array, got shape {a.shape}")
    if a.dtype == np.bool_ or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
        if np.issubdtype(a.dtype, np.floating) and a.size and np.all(np.isfinite(a)) and np.all(a == np.floor(a)):
            a = a.astype(np.int64) if a.min() < 0 else a.astype(np.uint64)
        else:
            raise ValueError(f"{name}: expected integers, got an array of dtype {a.dtype}")
    if a.size:
        lo = int(a.min())
        hi = int(a.max())
        if lo < minimum:
            raise ValueError(f"{name}: values must be at least {minimum}, found {lo}")
        limit = int(np.iinfo(dtype).max)
        if hi > limit:
            raise ValueError(f"{name}: values must be at most {limit}, found {hi}")
    return np.ascontiguousarray(a, dtype=dtype)


def _times_array(values: Any) -> np.ndarray:
    a = np.asarray(values)
    if np.issubdtype(a.dtype, np.timedelta64):
        a = a.astype("timedelta64[ns]").astype(np.int64)
    elif np.issubdtype(a.dtype, np.datetime64):
        a = a.astype("datetime64[ns]").astype(np.int64)
        if a.size:
            a = a - a.min()
    return _int_array("times (ns)", a, np.uint64)


def _ops_array(values: Any) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1:
        raise ValueError(f"ops: expected a one-dimensional array, got shape {a.shape}")
    if a.dtype == np.bool_:
        return a.astype(np.uint8)  # True = write
    if a.dtype.kind in "USO":
        uniq, inverse = np.unique(a.astype(str), return_inverse=True)
        codes = []
        for u in uniq:
            key = u.strip().lower()
            if key not in _OPS:
                raise ValueError(f"ops: unknown operation {u!r} (use 0/1/2 or 'r'/'w'/'t')")
            codes.append(_OPS[key])
        return np.ascontiguousarray(np.asarray(codes, dtype=np.uint8)[inverse.reshape(-1)])
    a = _int_array("ops", a, np.uint8)
    if a.size and int(a.max()) > 2:
        raise ValueError(f"ops: values must be 0 (read), 1 (write) or 2 (trim), found {int(a.max())}")
    return a


def _array_source(arrays: Mapping[str, Any], name: str | None = None, unit: str | None = None) -> dict:
    """`{"pages"|"addr", "ops", "sizes"?, "times"?, "devs"?}` -> the `_core` arrays dict."""
    out: dict[str, np.ndarray] = {}
    given: dict[str, str] = {}
    for key, value in arrays.items():
        if key in _META_KEYS:
            continue
        if key not in _ARRAY_KEYS:
            raise ValueError(
                f"unknown trace array {key!r}: expected pages (or addr), ops, and optionally sizes, times, devs"
            )
        target = _ARRAY_KEYS[key]
        if target in given:
            raise ValueError(f"trace arrays {given[target]!r} and {key!r} are the same array; give one")
        given[target] = key
        if value is None:
            continue
        if target == "addr":
            out[target] = _int_array(key, value, np.uint64)
        elif target == "op":
            out[target] = _ops_array(value)
        elif target == "len":
            out[target] = _int_array(key, value, np.uint32, minimum=1)
        elif target == "time":
            out[target] = _times_array(value)
        else:
            out[target] = _int_array(key, value, np.uint32)
    if "addr" not in out:
        raise ValueError("a trace of arrays needs 'pages' (page numbers), and 'ops'")
    if "op" not in out:
        raise ValueError("a trace of arrays needs 'ops' (0/1/2 or 'r'/'w'/'t' per request)")
    n = len(out["addr"])
    for target, a in out.items():
        if len(a) != n:
            raise ValueError(
                f"trace array {given[target]!r} has {len(a)} entries, {given['addr']!r} has {n}: they must be the same length"
            )
    unit = unit if unit is not None else arrays.get("unit", "pages")
    if unit not in ("pages", "bytes"):
        raise ValueError(f"unit must be 'pages' or 'bytes', not {unit!r}")
    name = name if name is not None else arrays.get("name", "arrays")
    if not isinstance(name, str):
        raise ValueError(f"a trace name must be a string, not {name!r}")
    return {"arrays": out, "unit": unit, "name": name}


def to_source(trace: Any, *, format: str = "auto", skip_bad: bool = False, csv_columns: str | None = None,
              name: str | None = None) -> Any:
    """What `_core` takes for `trace`: a loaded trace object, or a source dict."""
    if isinstance(trace, Trace):
        return trace._trace
    if _is_core_trace(trace) and not isinstance(trace, (str, Mapping)):
        return trace
    if isinstance(trace, os.PathLike):
        return _path_source(os.fspath(trace), format, skip_bad, csv_columns)
    if isinstance(trace, str):
        if os.path.exists(trace):
            return _path_source(trace, format, skip_bad, csv_columns)
        m = _GEN_RE.match(trace)
        gens = _generator_names()
        if m and m.group(1) in gens:
            return {"gen": trace.strip()}
        if m and m.group(2):
            raise ValueError(
                f"unknown generator {m.group(1)!r} in {trace!r} (and no such file); generators: {', '.join(sorted(gens))}"
            )
        raise ValueError(f"trace file not found: {trace!r} (nor is it a generator spec such as 'zipf(alpha=0.9)')")
    if isinstance(trace, Mapping):
        if "path" in trace or "gen" in trace or "arrays" in trace:
            return _core_dict(trace)
        return _array_source(trace, name=name)
    if _is_dataframe(trace):
        return _array_source({c: trace[c].to_numpy() for c in trace.columns}, name=name)
    if isinstance(trace, (tuple, list)) and 2 <= len(trace) <= 4 and all(_is_arraylike(a) for a in trace):
        keys = ("pages", "ops", "sizes", "times")
        return _array_source(dict(zip(keys, trace)), name=name)
    raise ValueError(
        f"cannot use {type(trace).__name__} as a trace: give a file path, a generator spec such as "
        "'zipf(alpha=0.9,keys=1M)', a Trace from ssdcache.load, or arrays {'pages': …, 'ops': …}"
    )


def _core_dict(trace: Mapping[str, Any]) -> dict:
    """A dict already in `_core`'s form: checked, arrays converted."""
    if "path" in trace:
        unknown = set(trace) - {"path", "format", "skip_bad", "csv_columns"}
        if unknown:
            raise ValueError(f"unknown keys for a file trace: {sorted(unknown)}")
        return _path_source(os.fspath(trace["path"]), trace.get("format", "auto"), trace.get("skip_bad", False),
                            trace.get("csv_columns"))
    if "gen" in trace:
        if set(trace) != {"gen"} or not isinstance(trace["gen"], str):
            raise ValueError("a generator trace is {'gen': 'SPEC'}")
        return {"gen": trace["gen"]}
    unknown = set(trace) - {"arrays", "unit", "name"}
    if unknown:
        raise ValueError(f"unknown keys for an array trace: {sorted(unknown)}")
    return _array_source(trace["arrays"], name=trace.get("name", "arrays"), unit=trace.get("unit", "pages"))


def _is_core_trace(x: Any) -> bool:
    return isinstance(x, _CoreTrace) or all(hasattr(x, a) for a in ("name", "format", "requests", "unit"))


def _is_dataframe(x: Any) -> bool:
    return type(x).__name__ == "DataFrame" and hasattr(x, "columns")


def _is_arraylike(x: Any) -> bool:
    return isinstance(x, np.ndarray) or (hasattr(x, "__len__") and hasattr(x, "__array__")) or (
        isinstance(x, (list, tuple)) and (len(x) == 0 or not isinstance(x[0], (str, os.PathLike, Mapping))))


def spec_of(trace: Any) -> Any:
    """What to ship to another process for `trace` (a dict, or a loaded trace object to pickle)."""
    if isinstance(trace, Trace):
        return trace.source
    return trace


def load(trace: TraceLike, *, format: str = "auto", skip_bad: bool = False, csv_columns: str | None = None,
         name: str | None = None) -> Trace:
    """Parses a trace once into memory, so that many runs can share it.

    Parameters
    ----------
    trace:
        A file path (any supported format; gz, xz, bz2 and zstd are decompressed
        transparently), a generator spec such as ``"zipf(alpha=0.9,keys=1M,requests=1M)"``,
        or numpy arrays: a dict ``{"pages": …, "ops": …, "sizes": …, "times": …}``
        (``sizes`` and ``times`` optional; ops 0/1/2 or ``"r"``/``"w"``/``"t"``;
        times in ns) or a tuple ``(pages, ops[, sizes[, times]])``. Arrays are
        page numbers and page counts; add ``"unit": "bytes"`` for byte offsets and
        lengths, ``"devs"`` for device numbers.
    format:
        Reader for a file (``ssdcache trace formats`` lists them); ``"auto"`` sniffs.
    skip_bad:
        Count and skip malformed lines instead of raising.
    csv_columns:
        Column mapping for ``format="csv"``, e.g. ``"time=0,op=1,offset=2,size=3"``.
    name:
        Name of an array trace in reports (default ``"arrays"``).

    Returns
    -------
    Trace
        ``.name``, ``.format``, ``.requests``, ``.unit``.

    Raises
    ------
    ValueError
        Missing file, unknown format, malformed line, bad arrays.

    Example
    -------
    >>> t = ssdcache.load("Financial1.spc")          # doctest: +SKIP
    >>> [ssdcache.simulate(t, policy=p, cache="4MiB").hit_ratio for p in ("lru", "arc")]  # doctest: +SKIP
    """
    if isinstance(trace, Trace):
        return trace
    source = to_source(trace, format=format, skip_bad=skip_bad, csv_columns=csv_columns, name=name)
    if not isinstance(source, dict):
        return Trace(source, None)  # a `_core` trace, loaded already
    return Trace(_core_load(source), source)
