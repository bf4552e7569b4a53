#!/usr/bin/env python3
"""The rows and top-k benches run on small sizes and print their lines (each checks its own results and
exits 1 on a wrong one):

  sortbench SORTBENCH          sortbench --segments on cpu (cuda and cub: a line each on stderr
                               where they cannot run);
  sortd-bench SORTD_BENCH SORTD   sortd-bench --segments through a cpu daemon;
  rows SORTD LIBSORTD          bench/rows.py against a cpu daemon (exit 77 without numpy).
"""
import importlib.util
import os
import re
import subprocess
import sys

NUM = r"[0-9.]+"


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    assert p.returncode == 0, f"{argv[0]} exited {p.returncode}"
    return p.stdout


def expect(out, patterns):
    lines = out.splitlines()
    for pat in patterns:
        assert any(re.fullmatch(pat, line) for line in lines), f"no line matches {pat!r}"
    assert "target" not in out, "a target printed at a size other than the issue's"


def check_sortbench(sortbench):
    out = run([sortbench, "--segments", "--engines", "cpu,cuda,cub", "--rows", "300",
               "--row-len", "100", "--n", "100000", "--k", "50", "--repeats", "2",
               "--threads", "2"])
    expect(out, [
        rf"cpu   rows 300 x 100 u32: segmented +{NUM} ms, a call a row +{NUM} ms: {NUM}x faster "
        r"\(median of 2 pairs\)",
        rf"cpu   top-k 50 of 100000 u32: top-k +{NUM} ms, full sort +{NUM} ms: {NUM}x the time "
        r"\(median of 2 pairs\)",
    ])


def check_sortd_bench(bench, sortd):
    out = run([bench, sortd, "--segments", "--rows", "300", "--row-len", "100", "--n", "100000",
               "--k", "50", "--pairs", "3", "--threads", "2"])
    expect(out, [
        r"rows: 300 x 100 u32 keys, inline, median of 3 pairs, alternated",
        r"rows: 300 x 100 u32 keys, in a region, median of 3 rounds, alternated",
        rf"  one segmented request +{NUM} ms",
        rf"  separate requests +{NUM} ms  \(64 in flight\)",
        rf"  separate requests +{NUM} ms  \(one at a time\)",
        rf"  segmented speed-up +{NUM}x  \(of each pair\)",
        rf"  separate, inline +{NUM} ms  \(64 in flight\)",
        rf"  speed-up, each at best +{NUM}x  \(of each round\)",
        r"top-k: k = 50 of 100000 u32 keys, inline, median of 3 pairs, alternated",
        r"top-k: k = 50 of 100000 u32 keys, in regions, median of 3 pairs, alternated",
        rf"  top-k / full sort +{NUM}x  \(of each pair\)",
    ])


def check_rows(sortd, libsortd):
    if importlib.util.find_spec("numpy") is None:
        print("SKIP: no numpy")
        sys.exit(77)
    rows_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rows.py")
    out = run([sys.executable, rows_py, "--sortd", sortd, "--library", libsortd, "--threads",
               "2", "--rows", "200", "--row-len", "100", "--pairs", "3"])
    expect(out, [
        rf"rows: 200 x 100 uint32, median of 3 pairs, alternated, numpy {NUM}",
        rf"  np.sort\(a, axis=-1\) +{NUM} ms",
        rf"  sortd.sort\(a, axis=-1\) +{NUM} ms",
        rf"  sortd speed-up +{NUM}x  \(of each pair\)",
    ])


if __name__ == "__main__":
    {"sortbench": check_sortbench, "sortd-bench": check_sortd_bench,
     "rows": check_rows}[sys.argv[1]](*sys.argv[2:])
