#!/usr/bin/env python3
"""sortd from Python against numpy, side by side in one run.

    python/bench.py [--n N] [--repeat R] [--socket PATH | --sortd PATH] [--cupy] [--json]

Times, on the same random uint32 keys (median of R runs, results verified against numpy):
  - ndarray.sort (numpy's default kind, in place) and sortd.sort of a zero-copy array
    (Client.empty), and of an ordinary array (copied through the client's pool of regions);
  - np.argsort(kind="stable") and sortd.argsort.
With --sortd, a private daemon (CPU engine) is started from that binary; else the one at
--socket or $SORTD_SOCKET is used. --cupy adds sortd.sort of a CuPy array against cupy.sort
(a GPU daemon on the same device).
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sortd  # noqa: E402


def timed(fn, repeat, before=None):
    """Median seconds of fn() over repeat runs; before() runs untimed ahead of each."""
    times = []
    for _ in range(repeat):
        if before:
            before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def start_daemon(binary, tmp, n):
    sock = os.path.join(tmp, "sortd.sock")
    proc = subprocess.Popen([binary, "--socket", sock, "--engine", "cpu", "--capacity", str(n),
                             "--log-level", "warning"])
    for _ in range(3000):
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(sock)
            return proc, sock
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("sortd exited during start-up")
            time.sleep(0.01)
    raise SystemExit("sortd did not come up")


def host_rows(c, n, repeat):
    a = np.random.default_rng(1).integers(0, 1 << 32, n, dtype=np.uint32)
    want = np.sort(a, kind="stable")
    want_idx = np.argsort(a, kind="stable")
    rows = []
    b = np.empty_like(a)
    refill = lambda: np.copyto(b, a)  # noqa: E731
    rows.append(("ndarray.sort", timed(lambda: b.sort(), repeat, refill), None))
    e = c.empty(n, np.uint32)
    refill_e = lambda: np.copyto(e, a)  # noqa: E731
    rows.append(("sortd.sort zero-copy", timed(lambda: c.sort(e), repeat, refill_e),
                 "ndarray.sort"))
    assert np.array_equal(e, want)
    rows.append(("sortd.sort copied", timed(lambda: c.sort(b), repeat, refill), "ndarray.sort"))
    assert np.array_equal(b, want)
    rows.append(("np.argsort stable", timed(lambda: np.argsort(a, kind="stable"), repeat), None))
    np.copyto(e, a)
    out = {}
    rows.append(("sortd.argsort", timed(lambda: out.update(i=c.argsort(e)), repeat),
                 "np.argsort stable"))
    assert np.array_equal(out["i"], want_idx)
    return rows


def cupy_rows(sock, n, repeat):
    import cupy
    a = cupy.random.default_rng(1).integers(0, 1 << 31, n, dtype=cupy.int64).astype(cupy.uint32)
    want = cupy.sort(a)
    b = cupy.empty_like(a)
    sync = cupy.cuda.get_current_stream().synchronize

    def refill():
        cupy.copyto(b, a)
        sync()
    rows = [("cupy.sort", timed(lambda: (cupy.sort(a), sync()), repeat), None)]
    with sortd.Client(sock) as g:
        rows.append(("sortd.sort cupy", timed(lambda: g.sort(b), repeat, refill), "cupy.sort"))
        assert bool((b == want).all())
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=lambda s: int(float(s)), default=1 << 24)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--socket")
    ap.add_argument("--sortd", help="start a private CPU daemon from this binary")
    ap.add_argument("--cupy", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    proc = None
    with tempfile.TemporaryDirectory(prefix="sortd-bench-") as tmp:
        sock = args.socket
        if args.sortd:
            proc, sock = start_daemon(args.sortd, tmp, args.n)
        try:
            with sortd.Client(sock, timeout=600) as c:
                info = c.info()
                rows = host_rows(c, args.n, args.repeat)
            if args.cupy:
                rows += cupy_rows(sock, args.n, args.repeat)
        finally:
            if proc:
                proc.terminate()
                proc.wait()
    by_name = {name: t for name, t, _ in rows}
    if args.json:
        for name, t, base in rows:
            print(json.dumps({"what": name, "n": args.n, "seconds": t,
                              "mkeys_per_s": args.n / t / 1e6,
                              "speedup": by_name[base] / t if base else None,
                              "engine": info["engine"]}))
        return
    print(f"n = {args.n} random uint32 keys, median of {args.repeat}, engine {info['engine']} "
          f"({info['device']}), numpy {np.__version__}, every result verified")
    print(f"{'':24} {'ms':>9} {'Mkeys/s':>9} {'speed-up':>9}")
    for name, t, base in rows:
        ratio = f"{by_name[base] / t:8.1f}x" if base else ""
        print(f"{name:24} {t * 1e3:9.1f} {args.n / t / 1e6:9.1f} {ratio:>9}")


if __name__ == "__main__":
    main()
