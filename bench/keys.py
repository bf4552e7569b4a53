#!/usr/bin/env python3
"""sortd.lexsort against np.lexsort on two uint32 columns, and sortd's float16 sort against
numpy's.

    bench/keys.py --sortd SORTD [--threads T] [--library LIBSORTD] [--n N] [--pairs P]
    bench/keys.py --socket PATH ...

lexsort: the permutation that sorts n rows by two uint32 columns, np.lexsort((b, a)) against
sortd.lexsort((b, a)) (a primary). f16: n float16 keys sorted into a new array,
np.sort(x, kind="stable") against sortd.sort(x, out=y). n is 2^22 by default. P pairs (default
9) of each, one of each back to back, the first switching from pair to pair: the machine's
speed drifts over seconds, and a pair sees one speed. Prints both medians and the median of the
pairs' ratios; every result is checked against numpy's (the float16 keys hold no NaN and no
-0.0, where totalOrder and numpy's order differ). With --sortd a private daemon (cpu engine,
--threads T, default 0: the engine's default) is started from that binary; else the one at
--socket or $SORTD_SOCKET is used. --library: the libsortd to load (else $SORTD_LIBRARY, else
the system's).
"""
import argparse
import os
import statistics
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rows import seconds, start_daemon  # noqa: E402  (bench/rows.py: the same daemon, clock)


def pairs(np_fn, sd_fn, check, count):
    """(numpy seconds, sortd seconds) of each pair, alternated, every result checked."""
    out = []
    for i in range(count):
        if i % 2:
            ts, tn = seconds(sd_fn), seconds(np_fn)
        else:
            tn, ts = seconds(np_fn), seconds(sd_fn)
        check()
        out.append((tn, ts))
    return out


def lexsort_case(sortd, n, count):
    rng = np.random.default_rng(40)
    a = rng.integers(0, 1 << 16, n, dtype=np.uint32)  # ties, so the second column matters
    b = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    got = {}
    want = np.lexsort((b, a))

    def check():
        assert np.array_equal(got["sd"], want), "sortd.lexsort differs from np.lexsort"
        assert np.array_equal(got["np"], want)
    return pairs(lambda: got.update(np=np.lexsort((b, a))),
                 lambda: got.update(sd=sortd.lexsort((b, a))), check, count)


def f16_case(sortd, n, count):
    x = np.random.default_rng(41).standard_normal(n).astype(np.float16)
    x[x == 0] = 1  # no -0.0 (numpy's equal to +0.0, totalOrder's smaller)
    want = np.sort(x, kind="stable")
    y = np.empty_like(x)
    got = {}

    def check():
        assert np.array_equal(y.view(np.uint16), want.view(np.uint16)), \
            "sortd's float16 order differs from numpy's"
        assert np.array_equal(got["np"], want)
        y.fill(0)
    return pairs(lambda: got.update(np=np.sort(x, kind="stable")),
                 lambda: sortd.sort(x, out=y), check, count)


def report(name, np_name, sd_name, timings, target):
    tn = statistics.median(t[0] for t in timings)
    ts = statistics.median(t[1] for t in timings)
    ratio = statistics.median(t[0] / t[1] for t in timings)
    print(f"{name}")
    print(f"  {np_name:32s} {tn * 1e3:9.2f} ms")
    print(f"  {sd_name:32s} {ts * 1e3:9.2f} ms")
    print(f"  {'sortd speed-up':32s} {ratio:9.2f}x  (of each pair{target})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--socket")
    ap.add_argument("--sortd", help="start a private CPU daemon from this binary")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--library", help="the libsortd to load")
    args = ap.parse_args()
    if args.library:
        os.environ["SORTD_LIBRARY"] = os.path.abspath(args.library)
    import sortd  # after SORTD_LIBRARY is set: the package loads libsortd on first use

    proc = None
    with tempfile.TemporaryDirectory(prefix="sortd-keys-") as tmp:
        sock = args.socket
        if args.sortd:
            proc, sock = start_daemon(args.sortd, tmp, args.n, args.threads)
        if sock:
            os.environ["SORTD_SOCKET"] = sock
        try:
            lex = lexsort_case(sortd, args.n, args.pairs)
            f16 = f16_case(sortd, args.n, args.pairs)
        finally:
            if proc:
                proc.terminate()
                proc.wait()
    default = args.n == 1 << 22
    print(f"n = {args.n}, median of {args.pairs} pairs, alternated, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs")
    report("argsort by two uint32 columns", "np.lexsort((b, a))", "sortd.lexsort((b, a))", lex,
           "; target >= 4x" if default else "")
    report("float16 sort", "np.sort(x, kind='stable')", "sortd.sort(x, out=y)", f16,
           "; target >= 4x" if default else "")


if __name__ == "__main__":
    main()
