"""Bad arrays are refused with what to do; the daemon's errors become exceptions."""
import os
import signal
import time

import numpy as np
import pytest

import sortd

from conftest import CAPACITY


@pytest.mark.parametrize("a, exc, hint", [
    (np.zeros(10, np.float16), TypeError, "astype(np.float32)"),
    (np.zeros(10, bool), TypeError, "view(np.uint8)"),
    (np.zeros(10, complex), TypeError, "float32 and float64"),
    (np.zeros(10, "datetime64[s]"), TypeError, "view(np.int64)"),
    (np.zeros(20, np.uint32)[::2], ValueError, "np.ascontiguousarray(a)"),
    (np.zeros(10, ">u4"), ValueError, "newbyteorder"),
    (np.zeros((3, 4), np.int32), ValueError, "a.ravel()"),
    ([3, 1, 2], TypeError, "np.asarray(a)"),
])
def test_bad_arrays(client, a, exc, hint):
    with pytest.raises(exc, match=None) as e:
        client.sort(a)
    assert hint in str(e.value)
    if isinstance(a, np.ndarray) and a.ndim == 1 and a.dtype.itemsize >= 2:
        with pytest.raises(exc):
            client.argsort(a)


def test_bad_arguments(client):
    a = np.arange(10, dtype=np.uint32)
    ro = a.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        client.sort(ro)
    client.argsort(ro)  # argsort leaves a alone: read-only is fine
    with pytest.raises(ValueError, match="has 5 elements"):
        client.sort(a, values=np.zeros(5, np.int32))
    with pytest.raises(TypeError, match="4- or 8-byte"):
        client.sort(a, values=np.zeros(10, np.int16))
    with pytest.raises(TypeError, match="index_dtype"):
        client.argsort(a, index_dtype=np.int32)
    with pytest.raises(ValueError, match="out must be"):
        client.sort(a, out=np.zeros(10, np.int32))
    with pytest.raises(TypeError, match="bits"):
        client.sort(a, bits=3)
    with pytest.raises(ValueError, match="begin_bit < end_bit"):
        client.sort(a, bits=(8, 8))
    with pytest.raises(ValueError):
        sortd.Client(timeout=0)


def test_daemon_refusals(client):
    with pytest.raises(sortd.InvalidRequest, match="bit"):
        client.sort(np.arange(10, dtype=np.uint32), bits=(0, 40))
    big = np.zeros(CAPACITY + 1, np.uint8)
    with pytest.raises(sortd.CapacityError):
        client.sort(big)
    client.inline_max_bytes = 0
    with pytest.raises(sortd.CapacityError):
        client.sort(big)
    client.ping()  # the connection survives a refusal


def test_not_running(tmp_path):
    gone = str(tmp_path / "nobody.sock")
    with pytest.raises(sortd.NotRunning, match="systemctl start sortd.socket") as e:
        sortd.Client(gone)
    assert isinstance(e.value, ConnectionError)
    assert gone in str(e.value)


def test_permission_denied(tmp_root):
    from conftest import Daemon
    d = Daemon(tmp_root, "--allow-uid", "4000000000")
    try:
        with pytest.raises(sortd.PermissionDenied, match="is not served") as e:
            sortd.Client(d.sock)
        assert isinstance(e.value, PermissionError)
    finally:
        d.stop()


def test_closed_client(daemon):
    c = sortd.Client(daemon.sock)
    c.close()
    c.close()
    with pytest.raises(sortd.Error, match="closed"):
        c.ping()


def test_killed_daemon_raises(fresh_daemon):
    c = sortd.Client(fresh_daemon.sock, timeout=30)
    a = np.random.default_rng(0).integers(0, 1 << 32, 1 << 20, dtype=np.uint32)
    c.sort(a)
    fresh_daemon.proc.send_signal(signal.SIGKILL)
    fresh_daemon.proc.wait()
    start = time.monotonic()
    with pytest.raises(sortd.ConnectionLost):
        c.sort(a)
    assert time.monotonic() - start < 5
    with pytest.raises(sortd.ConnectionLost):
        c.ping()  # broken for good: a new client is needed
    c.close()
    os.unlink(fresh_daemon.sock)
