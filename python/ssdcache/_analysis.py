"""`Analysis`: the report of ``ssdcache trace analyze --json`` as DataFrames.

Pandas alone, no ``ssdcache._core``: :func:`ssdcache.analyze` makes one from the
extension's report, and ``python -m ssdcache.plot analysis`` from a saved report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Analysis"]


def _bins(hist: dict[str, Any], **extra: Any) -> "pd.DataFrame":
    import pandas as pd

    rows = []
    if hist["zero"]:
        rows.append({"lo": 0.0, "hi": 0.0, "count": hist["zero"]})
    rows += hist["bins"]
    frame = pd.DataFrame(rows, columns=["lo", "hi", "count"])
    total = frame["count"].sum()
    frame["share"] = frame["count"] / total if total else 0.0
    frame["cumulative"] = frame["share"].cumsum()
    for i, (k, v) in enumerate(extra.items()):
        frame.insert(i, k, v)
    frame.attrs["base"] = hist["base"]
    return frame


class Analysis:
    """What :func:`analyze` found: the report of ``ssdcache trace analyze --json``,
    one DataFrame per analysis.

    - ``summary`` — dict of the trace's totals (requests, reads, writes, trims,
      bytes, page accesses, ``footprint_pages``, ``duration_ns``, ``zipf_alpha``, …).
    - ``reuse_distance`` — LRU stack distances of the accesses that are not
      first uses, in logarithmic bins: ``lo``, ``hi`` (excluded), ``count``,
      ``share``, ``cumulative``.
    - ``reuse_time`` — the same for reuse time, ``unit`` "accesses" (page
      accesses since the last use) and "ns" (trace time; a 0 ns bin first).
    - ``popularity`` — the frequency table (the rank-frequency curve):
      ``frequency``, ``pages``, ``first_rank``, ``last_rank``; ``attrs`` hold
      ``zipf_alpha``, ``zipf_r2`` and ``fit_ranks``.
    - ``timeline`` — one row per interval (``axis`` "time", ns, or "requests"):
      ``start``, ``end``, counts of requests, reads, writes, trims, bytes, page
      accesses, ``distinct_pages`` (the working set), ``new_pages``,
      ``footprint_pages`` (cumulative), ``read_share``, ``requests_per_s``.
    - ``sequentiality`` — run lengths (requests per run of contiguous requests)
      in base-2 bins; ``attrs`` hold ``runs`` and ``sequential_requests``.
    - ``devices`` — one row per device.
    - ``heatmap`` — page accesses, a row per page range (index: its first page),
      a column per interval (its start).
    - ``report`` — the report dict itself.
    """

    def __init__(self, report: dict[str, Any]) -> None:
        import pandas as pd

        self.report = report
        r = report
        pop = r["popularity"]
        self.summary: dict[str, Any] = {
            k: v for k, v in r.items() if not isinstance(v, (dict, list))
        }
        self.summary.update(zipf_alpha=pop["zipf_alpha"], zipf_r2=pop["zipf_r2"])
        self.reuse_distance = _bins(r["reuse_distance"])
        self.reuse_time = pd.concat([_bins(r["reuse_accesses"], unit="accesses"), _bins(r["reuse_time_ns"], unit="ns")],
                                    ignore_index=True)
        self.popularity = pd.DataFrame(pop["frequencies"], columns=["frequency", "pages", "first_rank", "last_rank"])
        self.popularity.attrs.update({k: pop[k] for k in ("zipf_alpha", "zipf_r2", "fit_ranks")})
        tl = r["timeline"]
        cols = ["start", "requests", "reads", "writes", "trims", "read_bytes", "write_bytes", "page_accesses",
                "new_pages", "distinct_pages", "footprint_pages"]
        t = pd.DataFrame(tl["intervals"], columns=cols)
        t.insert(1, "end", t["start"] + tl["interval"])
        t["read_share"] = (t["reads"] / t["requests"].where(t["requests"] > 0)).fillna(0.0)
        t["requests_per_s"] = t["requests"] * 1e9 / tl["interval"] if tl["axis"] == "time" else float("nan")
        t.attrs.update(axis=tl["axis"], interval=tl["interval"])
        self.timeline = t
        seq = r["sequentiality"]
        self.sequentiality = _bins(seq["run_lengths"])
        self.sequentiality.attrs.update(runs=seq["runs"], sequential_requests=seq["sequential_requests"])
        self.devices = pd.DataFrame(r["devices"], columns=["dev", "requests", "reads", "writes", "trims", "read_bytes",
                                                           "write_bytes", "footprint_pages", "first_page", "last_page",
                                                           "sequential_requests"])
        h = tl["heatmap"]
        self.heatmap = pd.DataFrame(h["counts"], index=[i * h["pages_per_row"] for i in range(len(h["counts"]))],
                                    columns=[i * h["interval"] for i in range(len(tl["intervals"]))], dtype="int64")
        self.heatmap.index.name = "first_page"
        self.heatmap.attrs.update(pages_per_row=h["pages_per_row"], interval=h["interval"], axis=tl["axis"])

    @property
    def zipf_alpha(self) -> float | None:
        return self.summary["zipf_alpha"]

    def __repr__(self) -> str:
        s = self.summary
        return (f"Analysis({s['trace']!r}: {s['requests']} requests, footprint {s['footprint_pages']} pages, "
                f"Zipf α {s['zipf_alpha']})")
