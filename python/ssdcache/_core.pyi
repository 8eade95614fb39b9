"""Types of the compiled extension `ssdcache._core` (crates/py). Use the `ssdcache`
package's API; this module is its engine."""

from os import PathLike
from typing import Any, Literal, Mapping, TypedDict, Union

import numpy as np
import numpy.typing as npt

__version__: str

class PathTrace(TypedDict, total=False):
    path: Union[str, PathLike[str]]
    format: str  # "auto" (default) or a name from `ssdcache trace formats`
    skip_bad: bool
    csv_columns: Union[str, None]

class GenTrace(TypedDict):
    gen: str  # "zipf(alpha=0.9,keys=1M,requests=1M)"

class Arrays(TypedDict, total=False):
    addr: npt.NDArray[np.uint64]  # required
    op: npt.NDArray[np.uint8]  # required: 0 read, 1 write, 2 trim
    len: npt.NDArray[np.uint32]  # default 1
    time: npt.NDArray[np.uint64]  # ns, default 0; rebased to the first request
    dev: npt.NDArray[np.uint32]  # default 0

class ArraysTrace(TypedDict, total=False):
    arrays: Arrays
    unit: Literal["pages", "bytes"]  # default "pages"
    name: str  # default "arrays"

TraceDict = Union[PathTrace, GenTrace, ArraysTrace]

class Spec(TypedDict, total=False):
    policy: str  # required
    cache: Union[int, str]  # required: bytes, "64MiB", or "5%" of the footprint
    page: Union[int, str]  # default "4KiB"
    mode: str  # default "write-back"
    device: Union[str, None]
    cache_device: Union[str, None]
    interval: Union[int, str, None]  # ns, or a duration like "1d"
    queue_depth: Union[int, None]
    iat_scale: Union[float, None]
    repeat: int  # default 1
    align_pages: bool  # default False: requests taken as page-aligned (no read-for-write)
    warmup: Union[int, str, None]  # requests, or "20%", "1h", "5M": the head runs uncounted

class Trace:
    """A trace read into memory by `load`; `run` replays it without parsing it again.
    Pickles as `load(the dict it came from)`."""

    @property
    def name(self) -> str: ...
    @property
    def format(self) -> str: ...
    @property
    def requests(self) -> int: ...
    @property
    def unit(self) -> Literal["pages", "bytes"]: ...
    @property
    def skipped(self) -> int: ...
    def __len__(self) -> int: ...
    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]: ...

def run(trace: Union[Trace, TraceDict, Mapping[str, Any]], spec: Union[Spec, Mapping[str, Any]]) -> str:
    """One simulation, the GIL released; the report as the JSON text `ssdcache sim --json`
    prints. Bad input raises ValueError with the CLI's message."""

def mrc(trace: Union[Trace, TraceDict, Mapping[str, Any]], page: Union[int, str],
        cache: Union[list[Union[int, str]], None] = None, points: int = 20,
        warmup: Union[int, str, None] = None, policy: str = "lru",
        sample: Union[str, None] = None, sample_keys: Union[int, None] = None, seed: int = 0) -> str:
    """The exact LRU miss-ratio curve in one pass (the GIL released), as the JSON text
    `ssdcache mrc --json` prints; with `sample` or `sample_keys`, a JSON list of
    sampled curves (SHARDS for lru, miniature simulation for other policies).
    Bad input raises ValueError with the CLI's message."""

def run_objects(trace: Union[Trace, TraceDict, Mapping[str, Any]], policy: str, cache: Union[int, str]) -> str:
    """One object-mode run (`sim --unit object`), the GIL released; the report as JSON text.
    `trace` must be a file with object sizes. Bad input raises ValueError with the CLI's message."""

def mrc_objects(trace: Union[Trace, TraceDict, Mapping[str, Any]], cache: Union[list[Union[int, str]], None] = None,
                points: int = 20, policy: str = "lru", sample: Union[str, None] = None, seed: int = 0) -> str:
    """Object-mode curves (`mrc --unit object`) as a JSON list: the exact byte-LRU curve, or with
    `sample` miniature curves of size-aware policies. Bad input raises ValueError."""

def analyze(trace: Union[Trace, TraceDict, Mapping[str, Any]], page: Union[int, str], interval: str = "auto",
            log_base: float = 2.0) -> str:
    """The trace analyzer's report in one pass (the GIL released), as the JSON text
    `ssdcache trace analyze --json` prints. Bad input raises ValueError with the CLI's message."""

def check_warmup(warmup: Union[int, str]) -> None:
    """Checks a warm-up ("20%", "1h", "5M" or a request count) without a trace; ValueError if bad."""

def load(trace: Union[Trace, TraceDict, Mapping[str, Any]]) -> Trace:
    """Reads a trace into memory once (the GIL released)."""

class ParamInfo(TypedDict):
    name: str
    default: str
    about: str

class CatalogueEntry(TypedDict):
    name: str
    about: str
    params: list[ParamInfo]

def policies() -> list[CatalogueEntry]: ...
def devices() -> list[CatalogueEntry]: ...
def generators() -> list[CatalogueEntry]: ...
def modes() -> list[str]: ...
def register_policy(name: str) -> None:
    """Registers `name` as a rule written in Python (`ssdcache.register_policy` keeps its class)."""
def unregister_policy(name: str) -> bool: ...
