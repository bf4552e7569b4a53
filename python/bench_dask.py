#!/usr/bin/env python3
"""sortd.dask against the same pipeline with numpy as the local sort, and against Dask's own
DataFrame.sort_values, side by side on one LocalCluster.

    python/bench_dask.py [--keys N] [--rows N] [--workers W] [--repeat R]
                         [--socket PATH | --sortd PATH] [--json]

  - sortd.dask.sort of N uint32 keys (default 2^26), and the same graph with numpy's stable
    sort as each node's local sort (sortd.sort and sortd.argsort replaced by numpy's on the
    workers for that run);
  - sortd.dask.sort_values of a DataFrame of N rows (default 2^24: an int64 key, a float64
    and an int64 column) against dask's sort_values of the same frame.
Each pair runs alternated, R times (median); results stay on the workers (persist) and are
checked against numpy or pandas once. Where the time goes, from Dask's task stream: the
sample (computed when the call is made), the partition tasks (a chunk sorted and cut), the
shuffle (transfers between workers, summed over workers), the local sorts, each as summed
task time (summed over workers, so it may exceed the wall time).
With --sortd, a private daemon (CPU engine) is started from that binary; else the one at
--socket or $SORTD_SOCKET is used, by every worker.
"""
import argparse
import collections
import json
import os
import sys
import tempfile
import time
import uuid

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import start_daemon  # noqa: E402

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import distributed  # noqa: E402
import pandas as pd  # noqa: E402
from dask.utils import key_split  # noqa: E402

import sortd.dask as sdd  # noqa: E402

PHASES = (("sample", "sample"), ("partition", "partition"), ("local_sort", "local sort"))


def phase(key):
    prefix = key_split(key)
    return next((name for word, name in PHASES if word in prefix), prefix)


def numpy_sorts(on):
    """On a worker: sortd.sort and sortd.argsort replaced by numpy's stable sorts (on=True),
    or put back."""
    import sortd
    if not hasattr(sortd, "_bench_saved"):
        sortd._bench_saved = (sortd.sort, sortd.argsort)
    if on:
        def sort(a, descending=False):
            a.sort(kind="stable")

        def argsort(a, descending=False):
            return np.argsort(a, kind="stable")
        sortd.sort, sortd.argsort = sort, argsort
    else:
        sortd.sort, sortd.argsort = sortd._bench_saved


def run(client, make):
    """Seconds to make() and persist the result on the workers, and the task stream's
    seconds by phase."""
    with distributed.get_task_stream(client) as ts:
        start = time.perf_counter()
        out = client.persist(make())
        distributed.wait(out)
        wall = time.perf_counter() - start
    phases = collections.Counter()
    for t in ts.data:
        for s in t["startstops"]:
            secs = s["stop"] - s["start"]
            if s["action"] == "transfer":
                phases["shuffle"] += secs
            elif s["action"] == "compute":
                phases[phase(t["key"])] += secs
    return wall, out, phases


def paired(client, variants, repeat):
    """Each variant's median wall seconds and its phases of the median run, alternated."""
    runs = {name: [] for name in variants}
    results = {}
    for _ in range(repeat):
        for name, (make, before) in variants.items():
            before()
            wall, out, phases = run(client, make)
            runs[name].append((wall, phases))
            results[name] = out
            del out
    summary = {}
    for name, rs in runs.items():
        rs.sort(key=lambda r: r[0])
        wall, phases = rs[len(rs) // 2]
        summary[name] = {"seconds": wall,
                         "phases": {k: round(v, 3) for k, v in sorted(phases.items())}}
    return summary, results


def array_case(client, n, repeat):
    a = np.random.default_rng(1).integers(0, 1 << 32, n, dtype=np.uint32)
    x = client.persist(da.from_array(a, chunks=n // 16))
    distributed.wait(x)
    variants = {
        "sortd": (lambda: sdd.sort(x), lambda: client.run(numpy_sorts, False)),
        "numpy local sort": (lambda: sdd.sort(x), lambda: client.run(numpy_sorts, True)),
    }
    summary, results = paired(client, variants, repeat)
    client.run(numpy_sorts, False)
    want = np.sort(a, kind="stable")
    for name, out in results.items():
        assert (out.compute() == want).all(), name
    return summary


def frame_case(client, n, repeat):
    rng = np.random.default_rng(2)
    pdf = pd.DataFrame({"key": rng.integers(0, 1 << 40, n), "x": rng.random(n),
                        "row": np.arange(n)})
    df = client.persist(dd.from_pandas(pdf, npartitions=16, sort=False))
    distributed.wait(df)
    # Dask's own graph has the same keys each run, and its last result stays on the workers:
    # each run starts from a renamed frame (no copy) so that neither is served from memory.
    fresh = lambda: df.map_partitions(lambda p: p, token=uuid.uuid4().hex)  # noqa: E731
    variants = {
        "sortd": (lambda: sdd.sort_values(fresh(), "key"), lambda: None),
        "dask": (lambda: fresh().sort_values("key"), lambda: None),
    }
    summary, results = paired(client, variants, repeat)
    want = pdf.sort_values("key", kind="stable")
    pd.testing.assert_frame_equal(results["sortd"].compute(), want)
    got = results["dask"].compute()
    assert (got["key"].to_numpy() == want["key"].to_numpy()).all()
    return summary


def count(text):
    """N or B^E."""
    base, _, exp = text.partition("^")
    return int(base) ** int(exp) if exp else int(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--keys", type=count, default=1 << 26)
    p.add_argument("--rows", type=count, default=1 << 24)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--socket")
    p.add_argument("--sortd")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        proc = None
        sock = args.socket or os.environ.get("SORTD_SOCKET")
        if args.sortd:
            proc, sock = start_daemon(args.sortd, tmp, max(args.keys, args.rows))
        env = {"PYTHONPATH": os.pathsep.join(sys.path)}
        if sock:
            env["SORTD_SOCKET"] = sock
        try:
            with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                          processes=True, dashboard_address=None,
                                          silence_logs=50, env=env) as cluster, \
                    distributed.Client(cluster) as client:
                out = {"workers": args.workers,
                       f"u32 sort, {args.keys} keys": array_case(client, args.keys,
                                                                 args.repeat),
                       f"sort_values, {args.rows} rows": frame_case(client, args.rows,
                                                                    args.repeat)}
        finally:
            if proc:
                proc.terminate()
                proc.wait()
    if args.json:
        print(json.dumps(out, indent=1))
        return
    for case, res in out.items():
        if case == "workers":
            continue
        print(case)
        for name, r in res.items():
            print(f"  {name:18s} {r['seconds']:7.2f} s   " +
                  ", ".join(f"{k} {v:.2f} s" for k, v in r["phases"].items() if v >= 0.005))
        names = list(res)
        print(f"  {names[1]} / {names[0]}: "
              f"{res[names[1]]['seconds'] / res[names[0]]['seconds']:.2f}x")


if __name__ == "__main__":
    main()
