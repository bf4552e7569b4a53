#!/usr/bin/env python3
"""sortd.sort(a, axis=-1) against np.sort(a, axis=-1) on the rows of a 2-D uint32 array.

    bench/rows.py --sortd SORTD [--threads T] [--library LIBSORTD] [--rows R] [--row-len L]
                  [--pairs P]
    bench/rows.py --socket PATH ...

Both return the rows sorted in a new array: np.sort(a, axis=-1), and sortd.sort(a, axis=-1,
out=b) (one segmented request; a is left as it was). P pairs (default 9), one of each back to
back, the first switching from pair to pair: the machine's speed drifts over seconds, and a pair
sees one speed. Prints both medians and the median of the pairs' ratios; every result is checked
against numpy's. With --sortd a private daemon (cpu engine, --threads T, default 0: the
engine's default) is started from that binary; else the one at --socket or $SORTD_SOCKET is
used. --library: the libsortd to load (else $SORTD_LIBRARY, else the system's).
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def start_daemon(binary, tmp, n, threads):
    sock = os.path.join(tmp, "sortd.sock")
    proc = subprocess.Popen([binary, "--socket", sock, "--engine", "cpu", "--capacity", str(n),
                             "--threads", str(threads), "--log-level", "warning"])
    for _ in range(6000):
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(sock)
            return proc, sock
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("rows.py: sortd exited during start-up")
            time.sleep(0.01)
    proc.terminate()
    raise SystemExit("rows.py: sortd did not come up within 60 s")


def seconds(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def pairs(sortd, a, count):
    """(numpy seconds, sortd seconds) of each pair, every result checked."""
    want = np.sort(a, axis=-1)
    b = np.empty_like(a)
    got = {}
    np_fn = lambda: got.update(np=np.sort(a, axis=-1))  # noqa: E731
    sd_fn = lambda: sortd.sort(a, axis=-1, out=b)  # noqa: E731
    out = []
    for i in range(count):
        b.fill(0)
        if i % 2:
            ts, tn = seconds(sd_fn), seconds(np_fn)
        else:
            tn, ts = seconds(np_fn), seconds(sd_fn)
        assert np.array_equal(b, want), "sortd's rows differ from np.sort's"
        assert np.array_equal(got["np"], want)
        out.append((tn, ts))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--row-len", type=int, default=1024)
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--socket")
    ap.add_argument("--sortd", help="start a private CPU daemon from this binary")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--library", help="the libsortd to load")
    args = ap.parse_args()
    if args.library:
        os.environ["SORTD_LIBRARY"] = os.path.abspath(args.library)
    import sortd  # after SORTD_LIBRARY is set: the package loads libsortd on first use

    a = np.random.default_rng(39).integers(0, 1 << 32, (args.rows, args.row_len),
                                           dtype=np.uint32)
    proc = None
    with tempfile.TemporaryDirectory(prefix="sortd-rows-") as tmp:
        sock = args.socket
        if args.sortd:
            proc, sock = start_daemon(args.sortd, tmp, a.size, args.threads)
        if sock:
            os.environ["SORTD_SOCKET"] = sock
        try:
            timings = pairs(sortd, a, args.pairs)
        finally:
            if proc:
                proc.terminate()
                proc.wait()
    tn = statistics.median(t[0] for t in timings)
    ts = statistics.median(t[1] for t in timings)
    ratio = statistics.median(t[0] / t[1] for t in timings)
    target = "; target >= 2x" if (args.rows, args.row_len) == (10000, 1024) else ""
    print(f"rows: {args.rows} x {args.row_len} uint32, median of {args.pairs} pairs, "
          f"alternated, numpy {np.__version__}")
    print(f"  np.sort(a, axis=-1)      {tn * 1e3:9.2f} ms")
    print(f"  sortd.sort(a, axis=-1)   {ts * 1e3:9.2f} ms")
    print(f"  sortd speed-up           {ratio:9.2f}x  (of each pair{target})")


if __name__ == "__main__":
    main()
