#!/usr/bin/env python3
"""Read throughput of an NBD export with and without structured replies (same server, same
bytes): python3-libnbd, queue depth 16, the whole export read in CHUNK-sized reads, 5 rounds
alternating plain / structured, best of each; prints MiB/s and the ratio structured/plain.

    /usr/bin/python3 scripts/bench/bench_structured.py nbd://127.0.0.1:PORT/disk

Not a test: it prints numbers and asserts only that each side negotiated what it asked for.
Serve a page-cached file for the server's own cost, e.g. the serve_file example.
"""
import sys, time, nbd
uri = sys.argv[1]
def run(structured, chunk):
    h = nbd.NBD(); h.set_request_structured_replies(structured); h.connect_uri(uri)
    assert h.get_structured_replies_negotiated() == structured
    size = h.get_size(); buf = nbd.Buffer(chunk)
    t = time.perf_counter()
    for off in range(0, size, chunk):
        h.aio_pread(buf, off)  # queue depth up to 16
        while h.aio_in_flight() >= 16: h.poll(-1)
    while h.aio_in_flight() > 0: h.poll(-1)
    dt = time.perf_counter() - t
    h.shutdown()
    return size / dt / 2**20
for chunk in (4096, 1 << 20):
    best = {False: 0, True: 0}
    for _ in range(5):
        for s in (False, True):
            best[s] = max(best[s], run(s, chunk))
    print(f"chunk {chunk:>7}: plain {best[False]:8.1f} MiB/s, structured {best[True]:8.1f} MiB/s, ratio structured/plain {best[True]/best[False]:.3f}")
