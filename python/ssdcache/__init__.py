"""ssdcache: flash-aware storage cache simulation from Python.

The simulator is the Rust engine of the ``ssdcache`` command line (the
``_core`` extension): the same inputs give the same numbers as
``ssdcache sim``, and simulations run without holding the GIL.

- :func:`simulate` — one run, a :class:`Result` with every counter of
  ``ssdcache sim --json`` as an attribute.
- :func:`sweep` — traces × policies × caches × pages × modes × devices on all
  cores (or a Ray cluster), a pandas DataFrame with one row per run.
- :func:`load` — parse a trace once (any file format, a generator spec, numpy
  arrays) to replay it many times.
- :func:`analyze` — what a trace is (reuse, popularity, working set, mix,
  sequentiality, devices, heatmap) in one pass, an :class:`Analysis` of DataFrames.
- :func:`policies`, :func:`devices`, :func:`generators`, :func:`modes` — the catalogues.
- :func:`whatif` — a running ``ssdcache serve``'s live what-if (other policies, ¼× to 4×
  its size), a DataFrame; ``load`` reads its ``--record`` recordings as any trace.
- :class:`Policy`, :func:`register_policy` — your own replacement policy, in Python,
  usable under its name wherever a built-in one is.
- :mod:`ssdcache.plot` — miss-ratio curves with the Belady bound, bars
  normalised to LRU, device-cost bars, per-interval series;
  ``python -m ssdcache.plot`` draws them from CLI output.

Example
-------
>>> import ssdcache
>>> df = ssdcache.sweep("zipf(alpha=0.9,keys=100k,requests=1M)", ["lru", "arc", "belady"],
...                     ["16MiB", "64MiB", "256MiB"])                      # doctest: +SKIP
>>> ssdcache.plot.miss_ratio_curve(df).savefig("mrc.png")              # doctest: +SKIP
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

# The names below that run the simulator come from modules built on the Rust
# extension `ssdcache._core`; they are imported on first use (module __getattr__,
# PEP 562), not here. So the pure-Python half of the package — ssdcache.plot, its
# command line and results reader — imports without the extension: `ssdcache plot`
# (Rust) runs Python, which need not load the Rust extension back, and draws charts
# even where the extension is missing. `Result` and `Analysis` need only pandas.
from ._analysis import Analysis
from ._policy import Policy, PolicyError, register_policy, registered_policies, unregister_policy
from ._result import Result
from ._whatif import whatif

if _TYPE_CHECKING:
    from . import _core
    from . import plot as plot
    from ._analyze import analyze as analyze
    from ._mrc import mrc as mrc
    from ._run import simulate as simulate
    from ._sweep import sweep as sweep
    from ._trace import Trace as Trace
    from ._trace import load as load

    __version__: str

# name -> the module that defines it, imported on first use (see __getattr__)
_LAZY = {"simulate": "._run", "sweep": "._sweep", "load": "._trace", "Trace": "._trace", "mrc": "._mrc",
         "analyze": "._analyze"}

__all__ = [
    "simulate",
    "sweep",
    "load",
    "mrc",
    "analyze",
    "Analysis",
    "Result",
    "Trace",
    "Policy",
    "PolicyError",
    "register_policy",
    "unregister_policy",
    "registered_policies",
    "policies",
    "devices",
    "generators",
    "modes",
    "plot",
    "whatif",
    "__version__",
]


def policies() -> list[_core.CatalogueEntry]:
    """Every policy: ``{"name", "about", "params": [{"name", "default", "about"}]}``.

    A spec is ``NAME`` or ``NAME(key=value,…)``; ``params`` lists the keys and defaults.
    Policies registered with :func:`register_policy` come last.

    Example
    -------
    >>> [p["name"] for p in ssdcache.policies()][:4]          # doctest: +SKIP
    ['lru', 'fifo', 'clock', 'lfu']
    """
    from . import _policy

    return list(_ext().policies()) + _policy.catalogue()


def devices() -> list[_core.CatalogueEntry]:
    """Every backing device model (``device=``): ``{"name", "about", "params": [...]}``.

    Example
    -------
    >>> [d["name"] for d in ssdcache.devices()]                # doctest: +SKIP
    ['ftl', 'hdd', 'ssd', 'dram', 'nvram']
    """
    return list(_ext().devices())


def generators() -> list[_core.CatalogueEntry]:
    """Every synthetic workload generator: ``{"name", "about", "params": [{"name", "default", "about"}]}``,
    the same shape as :func:`policies`.

    A generator spec such as ``"zipf(alpha=0.9,keys=1M,requests=1M)"`` is a trace
    for :func:`simulate`, :func:`sweep` and :func:`load`.

    Example
    -------
    >>> [g["name"] for g in ssdcache.generators()][:3]         # doctest: +SKIP
    ['zipf', 'uniform', 'scan']
    """
    return list(_ext().generators())


def modes() -> list[str]:
    """The cache write modes (``mode=``): write-back, write-through, write-around, write-only, read-only.

    Example
    -------
    >>> ssdcache.modes()                                       # doctest: +SKIP
    ['write-back', 'write-through', 'write-around', 'write-only', 'read-only']
    """
    return list(_ext().modes())


def _ext() -> _Any:
    """The compiled extension `ssdcache._core`, imported on first use."""
    try:
        return _importlib.import_module("._core", __name__)
    except ImportError as e:  # pragma: no cover - depends on the build
        raise ImportError(
            "ssdcache's compiled extension ssdcache._core is missing: install the package with "
            "`pip install .` (or `maturin develop`) from the repository root"
        ) from e


def __getattr__(name: str) -> _Any:
    # `ssdcache.plot` is imported on first use: it needs matplotlib, and
    # `python -m ssdcache.plot` must not find it imported already.
    if name == "plot":
        return _importlib.import_module(".plot", __name__)
    if name in _LAZY:
        _ext()  # the extension first, for its message when it is missing
        value = getattr(_importlib.import_module(_LAZY[name], __name__), name)
    elif name == "__version__":
        value = getattr(_ext(), "__version__", "0")
    else:
        raise AttributeError(f"module 'ssdcache' has no attribute {name!r}")
    globals()[name] = value  # later lookups find it without coming here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
