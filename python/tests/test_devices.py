"""The devices a daemon lists (Client.info() and status()) and device=, the GPU a sort asks
for: checked before anything is sent, an ordinal looked up in the last Hello, and sent as
libsortd's device_uuid. Against the CPU daemon (no devices) and against the stand-in daemon
of tests/sortctl (fake_devices.py), which lists three and keeps each sort's device."""
import os
import sys

import numpy as np
import pytest

import sortd
from sortd import _devices, _lib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "sortctl"))
from fake_devices import FAILED, SERVING, Device, FakeDaemon  # noqa: E402

UUID0 = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
UNKNOWN = "GPU-ffffffff-0405-0607-0809-0a0b0c0d0e0f"


@pytest.fixture
def fake(tmp_path):
    d = FakeDaemon(str(tmp_path / "fake.sock"), [
        Device(0, bytes(range(16)), "NVIDIA H200", "00000000:1B:00.0", 0, 1 << 28, SERVING,
               "self-check passed", sorts=12, nbytes=4096, busy_ns=1500000000, queued=1),
        Device(3, bytes(range(16, 32)), "NVIDIA H200", "00000000:1C:00.0", -1, 0, FAILED,
               "self-check failed"),
    ])
    yield d
    d.stop()


def test_uuid_text_both_ways():
    lib = _lib.load()
    assert _devices.format_uuid(lib, bytes(range(16))) == UUID0
    for text in (UUID0, "MIG" + UUID0[3:], UUID0[4:], UUID0.upper()):
        assert _devices.parse_uuid(lib, text) == bytes(range(16)), text
    for text in ("", "GPU-", UUID0 + "0", UUID0[:-1] + "g", "gpu" + UUID0[3:], "\u00e9"):
        assert _devices.parse_uuid(lib, text) is None, text


def test_cpu_daemon_lists_none(client):
    assert client.info()["devices"] == []
    st = client.status()
    assert st["devices"] == [] and "device_count" not in st


@pytest.mark.parametrize("bad, error, words", [
    (1.5, TypeError, "not float"),
    (True, TypeError, "not bool"),
    (object(), TypeError, "not object"),
    (-1, ValueError, "an ordinal is >= 0"),
    ("frob", ValueError, "device='frob' is not a device UUID"),
    ("gpu" + UUID0[3:], ValueError, "is not a device UUID"),
    (b"\x01" * 15, ValueError, "got 15 bytes"),
    (bytes(16), ValueError, "not all zero"),
])
def test_device_argument_checked_first(client, bad, error, words):
    """A device= that names nothing is refused before the daemon hears of the sort, and the
    array is left as it was."""
    a = np.array([3, 1, 2], np.uint32)
    before = client.status()["sort_requests"]
    for call in (lambda: client.sort(a, device=bad), lambda: client.argsort(a, device=bad)):
        with pytest.raises(error, match=words.replace("(", r"\(")):
            call()
    assert a.tolist() == [3, 1, 2]
    assert client.status()["sort_requests"] == before


@pytest.mark.parametrize("n", [3, 1 << 20])  # inline, and through the pool's region
def test_no_such_device_on_the_cpu_daemon(client, n):
    a = np.arange(n, 0, -1, dtype=np.uint32)
    with pytest.raises(sortd.InvalidRequest, match="device=0: sortd has no device of that "
                                                   "ordinal; it serves none \\(engine cpu\\)"):
        client.sort(a, device=0)
    for device in (UNKNOWN, bytes.fromhex(UNKNOWN[4:].replace("-", ""))):
        with pytest.raises(sortd.InvalidRequest, match=f"device {UNKNOWN} is not one sortd "
                                                       f"serves; it serves none"):
            client.sort(a, device=device)
        with pytest.raises(sortd.InvalidRequest, match="is not one sortd serves"):
            client.argsort(a, device=device)
    assert a[0] == n
    b = client.empty(n, np.uint32)  # in a region of the connection already
    with pytest.raises(sortd.InvalidRequest, match="is not one sortd serves"):
        client.sort(b, device=UNKNOWN)
    client.sort(a)  # the connection is still good
    assert a[0] == 1


def test_fake_lists_its_devices(fake):
    with sortd.Client(fake.sock) as c:
        rows = c.info()["devices"]
        assert c.status()["devices"] == rows
    assert [d["ordinal"] for d in rows] == [0, 3]
    assert rows[0] == {
        "ordinal": 0, "uuid": UUID0, "uuid_bytes": bytes(range(16)), "name": "NVIDIA H200",
        "pci_bus_id": "00000000:1B:00.0", "numa_node": 0, "capacity": 1 << 28,
        "state": "serving", "reason": "self-check passed", "streams": 2, "sorts": 12,
        "bytes": 4096, "busy_ns": 1500000000, "queued": 1}
    assert (rows[1]["state"], rows[1]["numa_node"]) == ("failed", -1)


def test_device_hint_is_sent(fake):
    a = np.array([9, 3, 7, 1], np.uint32)
    with sortd.Client(fake.sock) as c:
        c.sort(a)
        for device in (0, UUID0, UUID0.lower()[4:], bytes(range(16)),
                       bytearray(range(16)), c.info()["devices"][0]["uuid_bytes"]):
            a[:] = [9, 3, 7, 1]
            c.sort(a, device=device)
            assert a.tolist() == [1, 3, 7, 9]
        with pytest.raises(sortd.InvalidRequest, match="its devices are 0, 3"):
            c.sort(a, device=1)
        with pytest.raises(sortd.InvalidRequest, match="is failed \\(self-check failed\\); "
                                                       "sortd serves " + UUID0):
            c.sort(a, device=3)
    assert fake.sorts == [b""] + [bytes(range(16))] * 6
