"""Three GPUs with no GPU: sortd-emulated-cuda on the stand-in runtime's three devices
(FAKE_CUDA_DEVICES=3), and both clients against it. Python's info() and status() list the
three, serving; device= sends a sort to the device it names, and the daemon's per-device
counters say that one ran it; sortctl status shows a row per device in every format, and
sortctl sort --device takes a UUID or an ordinal. One daemon serves every case: its start
(each device's engine self-checked on the emulator) is most of this test's time. meson's
test_devices_emulated runs it; elsewhere it is skipped."""
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np
import pytest

import sortd

from conftest import Daemon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "sortctl"))
import prometheus_format  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("SORTD_EMULATED_CUDA") != "1",
                                reason="needs sortd-emulated-cuda and sortctl "
                                       "(meson test test_devices_emulated)")

SORTCTL = os.environ.get("SORTCTL_BIN")
UUID_TEXT = re.compile(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
UNKNOWN = "GPU-ffffffff-0000-0000-0000-000000000000"


@pytest.fixture(scope="module")
def gpus(tmp_root):
    old = os.environ.get("FAKE_CUDA_DEVICES")
    os.environ["FAKE_CUDA_DEVICES"] = "3"  # read by the daemon's stand-in runtime
    try:
        # Every sort goes to a device: none to the CPU path or the loop thread.
        d = Daemon(tmp_root, "--engine", "cuda", "--capacity", "4K", "--cpu-path-keys", "0",
                   "--loop-sort-keys", "0")
    finally:
        if old is None:
            del os.environ["FAKE_CUDA_DEVICES"]
        else:
            os.environ["FAKE_CUDA_DEVICES"] = old
    yield d
    d.stop()


@pytest.fixture
def client(gpus):
    with sortd.Client(gpus.sock, timeout=120) as c:
        yield c


def sorts_by_device(c):
    return [d["sorts"] for d in c.status()["devices"]]


def ran_on(c, index, sort):
    """sort() ran on the device of row index alone, by the daemon's counters."""
    before = sorts_by_device(c)
    sort()
    after = sorts_by_device(c)
    want = [b + (i == index) for i, b in enumerate(before)]
    assert after == want, f"sorts by device {before} -> {after}: not on device {index} alone"


def test_three_devices_serve(client):
    rows = client.info()["devices"]
    assert [d["ordinal"] for d in rows] == [0, 1, 2]
    assert [d["state"] for d in rows] == ["serving"] * 3
    assert all(UUID_TEXT.match(d["uuid"]) for d in rows), rows
    assert len({d["uuid"] for d in rows}) == 3
    assert all(d["capacity"] == 4096 and d["name"] and d["reason"] for d in rows), rows
    st = client.status()
    assert st["engine"] == "cuda"
    assert [d["uuid"] for d in st["devices"]] == [d["uuid"] for d in rows]


def test_device_hint_is_honoured(client):
    rows = client.info()["devices"]
    rng = np.random.default_rng(3)
    a = rng.integers(0, 1 << 32, 3000, dtype=np.uint64).astype(np.uint32)
    for index, device in ((1, 1), (1, rows[1]["uuid"]), (2, rows[2]["uuid_bytes"]),
                          (0, rows[0]["uuid"])):
        b = a.copy()
        ran_on(client, index, lambda: client.sort(b, device=device))
        np.testing.assert_array_equal(b, np.sort(a, kind="stable"))
    idx = []
    ran_on(client, 2, lambda: idx.append(client.argsort(a, descending=True, device=2)))
    np.testing.assert_array_equal(a[idx[0]], np.sort(a, kind="stable")[::-1])
    r = client.empty(a.size, np.uint32)  # a shared-memory region: sorted where it is
    r[:] = a
    ran_on(client, 1, lambda: client.sort(r, device=rows[1]["uuid"]))
    np.testing.assert_array_equal(r, np.sort(a, kind="stable"))


def test_unknown_device_refused(client):
    served = ", ".join(d["uuid"] for d in client.info()["devices"])
    a = np.arange(100, 0, -1, dtype=np.uint32)
    before = sorts_by_device(client)
    with pytest.raises(sortd.InvalidRequest, match=f"device {UNKNOWN} is not one sortd serves; "
                                                   f"it serves {served}"):
        client.sort(a, device=UNKNOWN)
    with pytest.raises(sortd.InvalidRequest, match="its devices are 0, 1, 2"):
        client.sort(a, device=3)
    assert a[0] == 100 and sorts_by_device(client) == before


def sortctl(gpus, *args, code=0):
    r = subprocess.run([SORTCTL, "--socket", gpus.sock, "--timeout", "120000", *args],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == code, r.stderr
    return r


def test_sortctl_status_rows(gpus, client):
    uuids = [d["uuid"] for d in client.info()["devices"]]
    lines = sortctl(gpus, "status").stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("devices "))
    assert lines[at].split() == ["devices", "3"]
    assert lines[at + 1].split()[:3] == ["#", "name", "uuid"]
    rows = lines[at + 2:]
    assert len(rows) == 3, lines
    for i, row in enumerate(rows):
        cells = re.split(r"  +", row)
        assert (cells[0], cells[2], cells[6]) == (str(i), uuids[i], "serving"), row
    st = json.loads(sortctl(gpus, "status", "--json").stdout)
    assert [(d["uuid"], d["state"]) for d in st["devices"]] == [(u, "serving") for u in uuids]
    samples, _ = prometheus_format.check(sortctl(gpus, "status", "--format",
                                                 "prometheus").stdout)
    up = {(dict(k[1])["device"], dict(k[1])["uuid"]): v
          for k, v in samples.items() if k[0] == "sortd_device_up"}
    assert up == {(str(i), u): 1 for i, u in enumerate(uuids)}


def test_sortctl_sort_on_a_device(gpus, client, tmp_path):
    uuids = [d["uuid"] for d in client.info()["devices"]]
    keys = np.random.default_rng(4).integers(0, 1 << 32, 2000, dtype=np.uint64).astype("<u4")
    src, out = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(keys.tobytes())
    for index, device in ((1, uuids[1]), (2, "2"), (0, "MIG" + uuids[0][3:].upper())):
        ran_on(client, index, lambda: sortctl(gpus, "sort", str(src), "-o", str(out), "--type",
                                              "u32", "--device", device))
        got = struct.unpack("<%dI" % keys.size, out.read_bytes())
        assert list(got) == sorted(keys.tolist())
    r = sortctl(gpus, "sort", str(src), "-o", str(out), "--type", "u32", "--device", UNKNOWN,
                code=1)
    assert f"device {UNKNOWN} is not one sortd serves; it serves {', '.join(uuids)}" in r.stderr
    r = sortctl(gpus, "sort", str(src), "-o", str(out), "--type", "u32", "--device", "5",
                code=1)
    assert "--device 5: sortd has no device of that ordinal; its devices are 0, 1, 2" in r.stderr
