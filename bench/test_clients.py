#!/usr/bin/env python3
"""sortd-bench --clients, cheaply (a few sorts of a few thousand keys), against each kind of daemon:

  cpu       SORTD on the cpu engine, device-streams 2 and 1 alternated over 2 rounds: the phases
            in ABBA order, each saying the daemon has no device rows, both medians and the
            gain, without the target (that is for 2^26 keys on a GPU);
  emulated  SORTD is sortd-emulated-cuda on FAKE_CUDA_DEVICES=2: both devices appear, each
            with a share of the sorts, and the shares add up.

Usage: test_clients.py cpu|emulated SORTD_BENCH SORTD. sortd-bench checks every client's first
and last sort itself and exits 1 on a wrong one.
"""
import os
import re
import subprocess
import sys

PHASE = re.compile(r"^  round (\d+), device-streams (\S+) +(\d+) sorts in +[0-9.]+ s"
                   r" +[0-9.]+ Mkeys/s +[0-9.]+ GB/s$")
DEVICE = re.compile(r"^    device (\d+)  (GPU-[0-9a-f-]{36})  serving +(\d+) streams"
                    r" +(\d+) sorts +([0-9.]+)%")
CPU_PATH = re.compile(r"^    cpu path +(\d+) sorts +([0-9.]+)%$")


def bench(argv, extra_env=None):
    env = dict(os.environ, **(extra_env or {}))
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    assert p.returncode == 0, f"sortd-bench exited {p.returncode}"
    return p.stdout.splitlines()


def phases(lines):
    """Each phase's (round, streams, sorts) and the lines under it."""
    out = []
    for line in lines:
        m = PHASE.match(line)
        if m:
            out.append(((int(m[1]), m[2], int(m[3])), []))
        elif out and line.startswith("    "):
            out[-1][1].append(line)
    return out


def check_cpu(bench_bin, sortd):
    lines = bench([bench_bin, sortd, "--clients", "3", "--n", "5000", "--sorts", "4",
                   "--engine", "cpu", "--threads", "2", "--device-streams", "2,1",
                   "--rounds", "2"])
    got = phases(lines)
    assert [p[0] for p in got] == [(1, "2", 12), (1, "1", 12), (2, "1", 12), (2, "2", 12)], got
    for _, rows in got:
        assert rows == ["    no device rows in Status: the daemon serves no GPU (engine cpu)"], rows
    for streams in ("2", "1"):
        assert any(re.match(rf"^  median of 2 rounds, device-streams {streams} +[0-9.]+ Mkeys/s", l)
                   for l in lines), f"no median line for device-streams {streams}"
    gain = [l for l in lines if l.startswith("  device-streams 2 against 1: ")]
    ratios = r": [0-9.]+x  \(median of the rounds' ratios: [0-9.]+x [0-9.]+x\)$"
    assert len(gain) == 1 and re.search(ratios, gain[0]), gain
    assert "target" not in gain[0], gain


def check_emulated(bench_bin, sortd):
    lines = bench([bench_bin, sortd, "--clients", "4", "--n", "4096", "--sorts", "4",
                   "--cpu-path-keys", "0", "--device-streams", "2"],
                  {"FAKE_CUDA_DEVICES": "2"})
    got = phases(lines)
    assert len(got) == 1 and got[0][0] == (1, "2", 16), got
    rows = got[0][1]
    devices = [DEVICE.match(l) for l in rows if l.startswith("    device ")]
    assert len(devices) == 2 and all(devices), rows
    assert {m[1] for m in devices} == {"0", "1"} and len({m[2] for m in devices}) == 2, rows
    assert all(m[3] == "2" for m in devices), rows
    assert all(int(m[4]) > 0 and float(m[5]) > 0 for m in devices), f"a device had no share: {rows}"
    cpu = [CPU_PATH.match(l) for l in rows if l.startswith("    cpu path")]
    sorts = sum(int(m[4]) for m in devices) + sum(int(m[1]) for m in cpu if m)
    share = sum(float(m[5]) for m in devices) + sum(float(m[2]) for m in cpu if m)
    assert sorts == 16 and abs(share - 100) < 0.5, rows


if __name__ == "__main__":
    {"cpu": check_cpu, "emulated": check_emulated}[sys.argv[1]](sys.argv[2], sys.argv[3])
    print("ok")
