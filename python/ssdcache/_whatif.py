"""``ssdcache.whatif``: a running server's live what-if as a DataFrame.

Pure Python (no extension): it asks the server's control socket for its
status, as ``ssdcache whatif --json`` does, and tabulates the shadow's curves.
"""

from __future__ import annotations

import json
import os
import socket
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

_MAX_ANSWER = 64 << 20


def _status(control: str, timeout: float) -> dict[str, Any]:
    """The server's ``status`` answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(control)
        except OSError as e:
            raise ConnectionError(f"no server is running behind {control}: {e}") from e
        s.sendall(b"status\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
            if len(data) > _MAX_ANSWER:
                raise ValueError(f"the server behind {control} answered more than {_MAX_ANSWER} bytes")
    answer = json.loads(data)
    if not answer.get("ok"):
        raise RuntimeError(f"the server behind {control} refused: {answer.get('error')}")
    return answer["status"]


def whatif(cache: str | os.PathLike, window: str = "start", *, control: str | os.PathLike | None = None,
           timeout: float = 10.0) -> pd.DataFrame:
    """The live what-if of the server running ``cache`` (``ssdcache serve --whatif``).

    One row per policy and cache size: ``policy``, ``cache_bytes``, ``miss_ratio``,
    ``read_miss_ratio``, ``write_miss_ratio``, ``backing_read_bytes``,
    ``backing_write_bytes``, ``running`` (the server's policy), ``current``
    (the server's policy at its own size). ``df.attrs`` holds ``measured_miss_ratio``
    (what the cache measured since its start), ``sample_rate``, ``requests``,
    ``dropped`` and ``window_seconds``. ``ssdcache.plot.miss_ratio_curve(df)``
    draws it, the current point marked.

    Parameters
    ----------
    cache:
        The cache file (its control socket is ``CACHE.ctl`` unless ``control`` names another).
    window:
        ``"start"`` (since the server started) or ``"hour"`` (the last hour).
    """
    import pandas as pd

    if window not in ("start", "hour"):
        raise ValueError(f"window={window!r}: 'start' or 'hour'")
    control = os.fspath(control) if control is not None else os.fspath(cache) + ".ctl"
    st = _status(control, timeout)
    w = st.get("whatif")
    if w is None:
        raise RuntimeError(f"the server of {os.fspath(cache)} runs no what-if: start it with `serve --whatif` "
                           "(on by default; `--whatif off` turns it off)")
    running, own = st.get("policy"), w["cache_bytes"]
    rows = [{"policy": c["policy"], **p, "running": c["policy"] == running,
             "current": c["policy"] == running and p["cache_bytes"] == own}
            for c in w["since_start" if window == "start" else "last_hour"] for p in c["points"]]
    df = pd.DataFrame(rows)
    hits = st.get("read_hits", 0) + st.get("write_hits", 0)
    misses = st.get("read_misses", 0) + st.get("write_misses", 0)
    df.attrs.update(measured_miss_ratio=misses / (hits + misses) if hits + misses else None,
                    sample_rate=w["sample_rate"], requests=w["requests"], dropped=w["dropped"],
                    window_seconds=st.get("uptime") if window == "start" else w["last_hour_seconds"],
                    policy=running, cache_bytes=own)
    return df
