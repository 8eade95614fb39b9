"""Runs as DataFrames, with pandas alone (no ``ssdcache._core``): built from report
dicts or Results (:func:`frame`, :func:`as_frame`), or read from the files ``ssdcache sim
--csv`` / ``--json`` write (:func:`read_results`, also ``ssdcache.plot.read_results``).

:func:`ssdcache.sweep` builds its DataFrame here, the charts of :mod:`ssdcache.plot` take
their input through :func:`as_frame`, and the plot CLI reads its inputs with
:func:`read_results`; none of them needs the extension to do so.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["frame", "as_frame", "read_results"]


def frame(reports: list[dict]) -> Any:
    """A DataFrame of reports: one row each, columns the report keys minus ``series``, in report order."""
    import pandas as pd

    columns: list[str] = []
    seen: set[str] = set()
    for r in reports:
        for k in r:
            if k != "series" and k not in seen:
                seen.add(k)
                columns.append(k)
    rows = [{k: v for k, v in r.items() if k != "series"} for r in reports]
    df = pd.DataFrame.from_records(rows, columns=columns)
    if any("series" in r for r in reports):
        df.attrs["series"] = [r.get("series", []) for r in reports]
    return df


def as_frame(data: Any) -> pd.DataFrame:
    """A DataFrame of runs from a DataFrame, Results, report dicts or one of those."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, Mapping) or hasattr(data, "to_dict"):
        data = [data]
    rows = []
    for r in data:
        if hasattr(r, "to_dict") and not isinstance(r, Mapping):
            r = r.to_dict()
        if not isinstance(r, Mapping):
            raise ValueError(f"expected a DataFrame, Results or report dicts, not {type(r).__name__}")
        rows.append(dict(r))
    if not rows:
        raise ValueError("nothing to plot: no runs")
    return frame(rows)


# Results are small (a row a run); a larger input is a trace or a mistake, and is not read whole.
_MAX_INPUT = 64 << 20


def _read_text(f: Any, name: str) -> str:
    try:
        text = f.read(_MAX_INPUT + 1)
    except UnicodeDecodeError as e:
        raise ValueError(f"{name}: not text ({e.reason} at byte {e.start}): give the CSV or JSON lines of "
                         "`ssdcache sim`") from None
    if len(text) > _MAX_INPUT:
        raise ValueError(f"{name}: more than {_MAX_INPUT >> 20} MiB: not the CSV or JSON lines of `ssdcache sim`")
    return text


def read_results(path: str | os.PathLike[str] | io.TextIOBase) -> pd.DataFrame:
    """Reads runs from a file: the CSV of ``ssdcache sim --csv`` (or a saved sweep
    DataFrame), or the JSON lines of ``ssdcache sim --json`` (series kept in
    ``df.attrs["series"]``). ``"-"`` reads standard input.

    Example
    -------
    >>> df = ssdcache.plot.read_results("runs.jsonl")        # doctest: +SKIP
    """
    import pandas as pd

    if isinstance(path, io.TextIOBase):
        name = "<stream>"
        text = _read_text(path, name)
    elif os.fspath(path) == "-":
        name = "<stdin>"
        text = _read_text(sys.stdin, name)
    else:
        name = os.fspath(path)
        if not os.path.exists(name):
            raise ValueError(f"input file not found: {name!r}")
        if os.path.isdir(name):
            raise ValueError(f"{name}: a directory, not a results file")
        with open(name, encoding="utf-8") as f:
            text = _read_text(f, name)
    stripped = text.lstrip()
    if not stripped:
        raise ValueError(f"{name}: empty input")
    if stripped[0] in "[{":
        try:
            if stripped[0] == "[":
                reports = json.loads(stripped)
            else:
                reports = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as e:
            raise ValueError(f"{name}: not JSON lines as `ssdcache sim --json` prints: {e}") from None
        return as_frame(reports)
    # pandas 3 reads floats exactly by default and deprecates the option.
    exact: dict[str, Any] = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    df = pd.read_csv(io.StringIO(text), **exact)
    if df.columns[0].startswith("Unnamed"):  # a DataFrame saved with its index
        df = df.drop(columns=df.columns[0])
    return df
