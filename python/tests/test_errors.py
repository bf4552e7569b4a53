"""Bad arrays are refused with what to do; the daemon's errors become exceptions."""
import gc
import math
import os
import signal
import threading
import time

import numpy as np
import pytest

import sortd

from conftest import CAPACITY, FakeCudaArray, settled_regions


@pytest.mark.parametrize("a, exc, hint", [
    (np.zeros(10, "V16"), TypeError, "key_type='u128' or key_type='i128'"),
    (np.zeros(10, bool), TypeError, "view(np.uint8)"),
    (np.zeros(10, complex), TypeError, "float32 and float64"),
    (np.zeros(10, "datetime64[s]"), TypeError, "view(np.int64)"),
    (np.zeros(20, np.uint32)[::2], ValueError, "np.ascontiguousarray(a)"),
    (np.zeros(10, ">u4"), ValueError, "newbyteorder"),
    (np.zeros((3, 4), np.int32).T, ValueError, "np.ascontiguousarray(a)"),
    (np.zeros((), np.int32), ValueError, "a.reshape(1)"),
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
    for bits in ((0, 2**32), (2**32 + 4, 2**32 + 12)):  # past what a C unsigned holds
        with pytest.raises(ValueError, match="end_bit <= the key's width"):
            client.sort(a[::-1].copy(), bits=bits)
    with pytest.raises(ValueError):
        sortd.Client(timeout=0)


def test_bad_axes_and_k(client, daemon, monkeypatch):
    """sortd sorts along the last axis only: any other is refused with the way to make it the
    last, before anything is sent; so are a k no top-k has, and values of another shape."""
    monkeypatch.setenv("SORTD_SOCKET", daemon.sock)
    m = np.zeros((3, 4, 5), np.int32)
    for call in (lambda ax: client.sort(m, axis=ax), lambda ax: client.argsort(m, axis=ax),
                 lambda ax: client.topk(m, 2, axis=ax), lambda ax: sortd.sort(m, ax)):
        for ax in (0, 1, -2, -3):
            with pytest.raises(ValueError, match=r"sortd sorts along the last axis") as e:
                call(ax)
            assert f"np.moveaxis(a, {ax}, -1)" in str(e.value)
            assert "swapaxes" in str(e.value) and "contiguous" in str(e.value)
        with pytest.raises(ValueError, match="out of bounds"):
            call(3)
        with pytest.raises(TypeError, match="axis must be an integer"):
            call(1.0)
    for ax in (2, -1):
        client.sort(m, axis=ax)  # the last axis, either way
    with pytest.raises(ValueError, match=r"has shape \(4, 3\) and a has shape \(3, 4\)"):
        client.sort(np.zeros((3, 4), np.int32), values=np.zeros((4, 3), np.int32))
    with pytest.raises(ValueError, match="k must be at least 0"):
        client.topk(m, -1)
    with pytest.raises(TypeError, match="k must be an integer"):
        client.topk(m, 2.0)
    with pytest.raises(TypeError, match="index_dtype"):
        client.topk(m, 2, index_dtype=np.int32)


def test_read_only_hints_fit_their_argument(client):
    """Each read-only refusal says what to do about the argument it names: out= is a way
    around a read-only a only, not a read-only values or out."""
    a = np.arange(10, dtype=np.uint32)
    ro = a.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"a is read-only.*a\.copy\(\), or out="):
        client.sort(ro)
    with pytest.raises(ValueError, match=r"values is read-only.*values\.copy\(\)") as e:
        client.sort(a.copy(), values=ro)
    assert "out=" not in str(e.value)
    with pytest.raises(ValueError, match=r"out is read-only.*writable array") as e:
        client.sort(a, out=ro)
    assert "out=" not in str(e.value) and "out.copy()" not in str(e.value)
    with pytest.raises(ValueError, match="values is read-only") as e:
        client.sort(FakeCudaArray(), values=FakeCudaArray(readonly=True))
    assert "argsort" not in str(e.value)


def test_masked_arrays_refused(client):
    """A masked array is an ndarray whose mask sortd would leave behind as its data moved:
    refused as keys, values or out, and left as it was."""
    a = np.ma.array([5, 3, 9, 1, 7], mask=[1, 0, 0, 0, 0], dtype=np.uint32)
    plain = np.array([5, 3, 9, 1, 7], dtype=np.uint32)
    for call in (lambda: client.sort(a), lambda: client.argsort(a),
                 lambda: client.sort(plain.copy(), values=a),
                 lambda: client.sort(plain, out=np.ma.zeros(5, np.uint32))):
        with pytest.raises(TypeError, match=r"masked array.*compressed\(\)"):
            call()
    np.testing.assert_array_equal(a.data, [5, 3, 9, 1, 7])
    np.testing.assert_array_equal(a.mask, [1, 0, 0, 0, 0])


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


def test_inline_sorts_above_max_request_bytes_go_through_a_region(tmp_root):
    """A daemon's max-request-bytes below inline_max_bytes: sorts between the two, which it
    refuses inline, go through the pool, which the limit does not hold to."""
    from conftest import Daemon
    d = Daemon(tmp_root, "--max-request-bytes", "256K")
    try:
        with sortd.Client(d.sock, timeout=60) as c:
            a = np.random.default_rng(4).integers(0, 1 << 32, 125_000, dtype=np.uint32)
            b = a.copy()
            c.sort(b)
            np.testing.assert_array_equal(b, np.sort(a, kind="stable"))
            np.testing.assert_array_equal(c.argsort(a[:40_000]),
                                          np.argsort(a[:40_000], kind="stable"))
            assert c.pool_regions()[0] == 1
            small = a[:1000].copy()
            c.sort(small)  # inline still
            np.testing.assert_array_equal(small, np.sort(a[:1000], kind="stable"))
            assert c.status()["bytes_in"] < 2 * small.nbytes + 4096
    finally:
        d.stop()


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


@pytest.mark.parametrize("cut_in", ["keys", "values"])
def test_reply_cut_short_leaves_the_arrays_alone(daemon, proxy, cut_in):
    """An inline reply cut partway (the daemon's stream ends after n bytes): the arrays keep
    their input, neither half-sorted keys nor values parted from them."""
    rng = np.random.default_rng(8)
    a = rng.integers(0, 1 << 32, 50_000, dtype=np.uint32)
    v = np.arange(a.size, dtype=np.int64)
    a0, v0 = a.copy(), v.copy()
    c = sortd.Client(proxy.sock, timeout=30)
    proxy.cut(a.nbytes // 2 if cut_in == "keys" else a.nbytes + v.nbytes // 2)
    with pytest.raises(sortd.ConnectionLost):
        c.sort(a, values=v)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(v, v0)
    c.close()


def test_values_holding_objects_refused(client):
    a = np.arange(10, dtype=np.uint32)[::-1].copy()
    with pytest.raises(TypeError, match="Python objects.*sortd.argsort"):
        client.sort(a, values=np.array([object()] * 10))
    for v in (np.zeros(10, "S8"), np.zeros(10, "U1"), np.zeros(10, "V4")):
        with pytest.raises(TypeError, match="values must be numbers"):
            client.sort(a, values=v)
    for v in (np.zeros(10, np.complex64), np.zeros(10, "datetime64[ns]")):
        client.sort(a, values=v)  # numbers of 8 bytes


def test_default_client_made_again_after_a_timeout(daemon, proxy, monkeypatch):
    """A timeout leaves libsortd's connection broken: sortd.sort connects again after it."""
    monkeypatch.setenv("SORTD_SOCKET", daemon.sock)
    monkeypatch.setattr(sortd._default, "client", sortd.Client(proxy.sock, timeout=0.2),
                        raising=False)
    proxy.stall(0)  # the daemon's answers go no further
    a = np.arange(1000, dtype=np.uint32)[::-1].copy()
    with pytest.raises(sortd.Timeout):
        sortd.sort(a)
    assert sortd.sort(a) is a  # a new connection, straight to the daemon
    np.testing.assert_array_equal(a, np.arange(1000))


def test_timeout_covers_the_whole_inline_sort(daemon, proxy):
    """timeout is one deadline for a sort, sending and waiting together: a daemon slow to take
    the keys (0.6 s), then silent, ends a sort with timeout=1 after 1 s, not after 1.6 s."""
    with sortd.Client(proxy.sock, timeout=1.0) as c:
        c.inline_max_bytes = 32 << 20
        a = np.arange(1 << 21, dtype=np.uint64)  # 16 MiB: more than the socket holds
        proxy.hold(0.6)
        proxy.stall(0)
        t0 = time.monotonic()
        with pytest.raises(sortd.Timeout, match=r"within \d+ ms \(the rest of this call's "
                                                r"timeout of 1 s\)"):
            c.sort(a)
        took = time.monotonic() - t0
    assert took > 0.95
    assert took < 1.45, f"the sort took {took:.2f} s for a timeout of 1 s"


@pytest.mark.parametrize("call", ["sort", "argsort"])
def test_timeout_covers_every_exchange_of_a_call(fresh_daemon, call):
    """timeout is one deadline for a whole call: a sort or argsort through the pool, on a
    client with no pool yet, registers a region (a round trip), then sorts in it. A daemon
    stopped for 0.6 s during the register, then for good during the sort, ends the call with
    timeout=1 after 1 s, not after 0.6 s plus a timeout of its own for the sort."""
    from conftest import LibHooks
    pid = fresh_daemon.proc.pid

    def region_create(real, conn, size, out):
        os.kill(pid, signal.SIGSTOP)
        threading.Timer(0.6, os.kill, (pid, signal.SIGCONT)).start()
        status = real(conn, size, out)
        os.kill(pid, signal.SIGSTOP)  # the sort that follows is never answered
        return status

    a = np.arange(1 << 18, dtype=np.uint32)[::-1].copy()
    a0 = a.copy()
    try:
        with sortd.Client(fresh_daemon.sock, timeout=1.0) as c:
            c.inline_max_bytes = 0
            c._lib = LibHooks(c._lib, sortd_region_create=region_create)
            t0 = time.monotonic()
            with pytest.raises(sortd.Timeout, match="this call's timeout of 1 s"):
                getattr(c, call)(a)
            took = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
    np.testing.assert_array_equal(a, a0)  # the pool's copy was being sorted, not a
    assert took > 0.95
    assert took < 1.45, f"the {call} took {took:.2f} s for a timeout of 1 s"


def test_timeout_starts_again_with_each_call(client):
    """Each call has the client's whole timeout, whatever the calls before it took; between
    calls the connection keeps the client's own timeout."""
    from conftest import LibHooks
    set_to = []
    client._lib = LibHooks(client._lib, sortd_set_timeout=lambda real, conn, ms: (
        set_to.append(ms), real(conn, ms))[1])
    for _ in range(3):
        client.sort(np.arange(1 << 18, dtype=np.uint32)[::-1].copy())
        client.ping()
        time.sleep(0.05)
    # exchanges get what remains of 60 s (never the rest of an earlier call's); each call
    # ends by restoring the client's 60 s
    assert set_to and all(55_000 < ms <= 60_000 for ms in set_to)
    assert set_to[-1] == 60_000


@pytest.mark.parametrize("timeout,ms", [(2**31 // 1000, 2**31 // 1000 * 1000), (2**31 / 1000, -1),
                                        (1e300, -1)])
def test_timeout_beyond_libsortd_is_none(daemon, timeout, ms):
    """A timeout libsortd's int cannot hold (over 2^31 - 1 ms) is no timeout, as math.inf:
    cut to 24.8 days it would be a wait Ctrl-C cannot end."""
    from conftest import LibHooks
    set_to = []
    with sortd.Client(daemon.sock, timeout=timeout) as c:
        c._lib = LibHooks(c._lib, sortd_set_timeout=lambda real, conn, t: (
            set_to.append(t), real(conn, t))[1])
        c.ping()
    if ms == -1:
        assert set_to and set(set_to) == {-1}, set_to
    else:
        assert set_to and all(ms - 1000 < t <= ms for t in set_to), set_to


@pytest.mark.parametrize("n", [1000, 1 << 18], ids=["inline", "pool"])
def test_default_client_outlives_an_idle_timeout(tmp_root, monkeypatch, n):
    """The daemon closes a connection idle past idle-timeout-ms: sortd.sort and sortd.argsort
    then find theirs lost, and send the (untouched) array again on a new one."""
    from conftest import Daemon
    d = Daemon(tmp_root, "--idle-timeout-ms", "200")
    try:
        monkeypatch.setenv("SORTD_SOCKET", d.sock)
        monkeypatch.setattr(sortd._default, "client", None, raising=False)
        a = np.arange(n, dtype=np.uint32)[::-1].copy()
        sortd.sort(a.copy())
        for call in (sortd.sort, sortd.argsort):
            time.sleep(0.6)  # the daemon hangs up meanwhile
            got = call(a.copy())
            np.testing.assert_array_equal(got, np.arange(n) if call is sortd.sort
                                          else np.arange(n)[::-1])
        sortd._default.client.close()
    finally:
        d.stop()


def test_interrupted_inline_sort_leaves_the_client_usable(client):
    """A signal handler's exception as the inline sort's call returns: the array has the
    result the daemon sent, whole (see test_interrupted_copy_back_leaves_pairs_together),
    nothing is left outstanding, and regions that died meanwhile are still released."""
    from conftest import LibHooks
    interrupted = []

    def sort_request(real, conn, req):
        status = real(conn, req)
        if not interrupted:
            interrupted.append(status)
            raise KeyboardInterrupt
        return status

    client._lib = LibHooks(client._lib, sortd_sort_request=sort_request)
    e = client.empty(1000, np.uint8)
    regions = settled_regions(client)
    a = np.arange(1000, dtype=np.uint32)[::-1].copy()
    with pytest.raises(KeyboardInterrupt):
        client.sort(a)
    assert interrupted == [sortd._lib.OK]
    np.testing.assert_array_equal(a, np.arange(1000))
    del e
    gc.collect()
    big = np.arange(1 << 18, dtype=np.uint64)[::-1].copy()
    client.sort(big)  # through the pool: no "submitted sorts not yet received"
    np.testing.assert_array_equal(big, np.arange(1 << 18))
    assert client.status()["regions"] == regions - 1 + client.pool_regions()[0]


@pytest.mark.parametrize("path", ["inline", "pool", "keys-in-region"])
def test_interrupted_copy_back_leaves_pairs_together(client, monkeypatch, path):
    """A signal handler's exception (KeyboardInterrupt) that comes once the daemon has sorted,
    between the keys' copy back into the caller's array and the values', or before the
    values' copy back when the keys were sorted in their region: the call still raises it,
    and the keys and the values are both sorted, never one without the other."""
    from conftest import LibHooks
    n = 1000 if path == "inline" else 1 << 17
    rng = np.random.default_rng(3)
    if path == "keys-in-region":
        a = client.empty(n, np.uint32)
        a[:] = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    else:
        a = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    v = np.arange(n, dtype=np.int64)
    order = np.argsort(a, kind="stable")
    want_a, want_v = a[order], v[order]
    raised = []

    def interrupt():
        if not raised:
            raised.append(True)
            raise KeyboardInterrupt

    if path == "keys-in-region":
        def sort_in_region(real, conn, rs):
            status = real(conn, rs)
            interrupt()
            return status
        client._lib = LibHooks(client._lib, sortd_sort_in_region=sort_in_region)
    else:
        copyto = np.copyto

        def copy_then_interrupt(dst, src, *args, **kwargs):
            copyto(dst, src, *args, **kwargs)
            if dst is a:  # the keys are back in the caller's array: the values are next
                interrupt()
        monkeypatch.setattr(np, "copyto", copy_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        client.sort(a, values=v)
    assert raised
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(v, want_v)
    monkeypatch.undo()
    client.ping()  # the connection is in step


_CTRL_C_CHILD = r"""
import math, os, sys
import numpy as np
import sortd
from test_regions import _region_fds

sock, path = sys.argv[1], sys.argv[2]
c = sortd.Client(sock, timeout=math.inf)
if path == "pool":
    c.inline_max_bytes = 0
n = 1000 if path == "inline" else 1 << 17
a = np.arange(n, dtype=np.uint32)[::-1].copy()
v = np.arange(n, dtype=np.int64)
c.sort(a.copy(), values=v.copy())  # the pool has its region now
print("ready", flush=True)
sys.stdin.readline()  # the daemon is stopped now
try:
    c.sort(a, values=v)
except KeyboardInterrupt:
    assert (a == np.arange(n)[::-1]).all() and (v == np.arange(n)).all(), "half-written"
    try:
        c.ping()
        raise AssertionError("the interrupted connection still works")
    except sortd.ConnectionLost as e:
        assert "interrupted" in str(e), e
    c.close()
    assert _region_fds() == 0, f"{_region_fds()} regions left"
    print("arrays whole, regions released", flush=True)
    raise
"""


@pytest.mark.parametrize("path", ["inline", "pool"])
def test_ctrl_c_ends_a_wait_with_no_timeout(fresh_daemon, path):
    """SIGINT (Ctrl-C) to a process whose sort waits with timeout=math.inf for a daemon that
    never answers (stopped): the sort ends with KeyboardInterrupt at once, the arrays keep
    their input, the connection is broken and says why, and no region is left mapped."""
    out, err, rc, took = _sigint_child(fresh_daemon, _CTRL_C_CHILD, path, timeout=10)
    assert "arrays whole, regions released" in out, err
    assert rc == -signal.SIGINT and "KeyboardInterrupt" in err, err
    assert took < 3, f"the child took {took:.1f} s to end after SIGINT"


@pytest.mark.parametrize("path", ["empty", "pool"])
def test_interrupted_region_create_leaks_no_region(client, path):
    """A signal handler's exception as a region's registration returns (where a Ctrl-C during
    it is raised when the call has a timeout): the region libsortd made is not lost, but
    released, in the daemon at the next call and in this process at close()."""
    from conftest import LibHooks
    from test_regions import _region_fds
    raised = []

    def region_create(real, conn, size, out):
        status = real(conn, size, out)
        if not raised:
            raised.append(status)
            raise KeyboardInterrupt
        return status

    client.ping()
    regions, fds = settled_regions(client), _region_fds()
    client._lib = LibHooks(client._lib, sortd_region_create=region_create)
    a = np.arange(1 << 17, dtype=np.uint32)[::-1].copy()
    with pytest.raises(KeyboardInterrupt):
        if path == "empty":
            client.empty(1 << 17, np.uint32)
        else:
            client.inline_max_bytes = 0
            client.sort(a)
    assert raised == [sortd._lib.OK]
    np.testing.assert_array_equal(a, np.arange(1 << 17)[::-1])
    assert client.status()["regions"] == regions
    client.close()
    assert _region_fds() == fds


_SECOND_CTRL_C_CHILD = r"""
import math, os, signal, sys
import numpy as np
import sortd
from conftest import LibHooks

c = sortd.Client(sys.argv[1], timeout=math.inf)
seconds = []

def interrupt(real, conn):
    if not seconds:  # Ctrl-C again, just as the first one's interrupt is made
        seconds.append(True)
        os.kill(os.getpid(), signal.SIGINT)
    real(conn)

c._lib = LibHooks(c._lib, sortd_interrupt=interrupt)
a = np.arange(1000, dtype=np.uint32)[::-1].copy()
print("ready", flush=True)
sys.stdin.readline()  # the daemon is stopped now
try:
    c.sort(a)
except KeyboardInterrupt:
    assert seconds, "no second signal"
    assert (a == np.arange(1000)[::-1]).all(), "half-written"
    try:
        c.ping()  # fails at once: the waiter is free and the connection shut down
        raise AssertionError("the interrupted connection still works")
    except sortd.ConnectionLost as e:
        assert "interrupted" in str(e), e
    c.close()
    print("the call ended", flush=True)
    raise
"""



def _sigint_child(daemon, script, *args, timeout=5):
    """Runs script (python -c, in this directory), which prints "ready" and reads a line;
    stops the daemon, sends the line, and SIGINT 0.5 s later: its stdout, stderr, exit
    status, and the seconds it took to end after the SIGINT (killed after timeout)."""
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", script, daemon.sock, *args],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env,
                             cwd=os.path.dirname(__file__))
    try:
        assert child.stdout.readline() == "ready\n"
        daemon.proc.send_signal(signal.SIGSTOP)
        child.stdin.write("go\n")
        child.stdin.flush()
        time.sleep(0.5)  # it waits in libsortd now
        child.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            out, err = child.communicate()
        return out, err, child.returncode, time.monotonic() - t0
    finally:
        child.kill()
        daemon.proc.send_signal(signal.SIGCONT)


def test_second_ctrl_c_still_ends_the_call(fresh_daemon):
    """A second SIGINT while the first one's KeyboardInterrupt ends a call with no timeout:
    the call still ends (the connection is shut down) before KeyboardInterrupt goes on, so
    the client and the package's waiter are left free, not blocked on the stopped daemon."""
    out, err, rc, _ = _sigint_child(fresh_daemon, _SECOND_CTRL_C_CHILD)
    assert "the call ended" in out, err
    assert rc == -signal.SIGINT and "KeyboardInterrupt" in err, err


_CONNECT_CTRL_C_CHILD = r"""
import math, os, signal, sys, time
import sortd

def sockets():
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except FileNotFoundError:  # closed since the listing, by the thread ending the connect
            pass
    return n

before = sockets()
print("ready", flush=True)
sys.stdin.readline()  # the daemon is stopped now
try:
    sortd.Client(sys.argv[1], timeout=math.inf)
except KeyboardInterrupt:
    os.kill(int(sys.argv[2]), signal.SIGCONT)  # its Hello is answered: the connection is made
    deadline = time.monotonic() + 3
    while sockets() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sockets() == before, "the connection made after the KeyboardInterrupt stays open"
    print("the connect ended", flush=True)
    raise
"""


def test_ctrl_c_ends_a_connect_with_no_timeout(fresh_daemon):
    """SIGINT to a process making a Client with timeout=math.inf of a daemon that never
    answers its Hello (stopped): KeyboardInterrupt at once, as for a call, and the connection
    made once the daemon answers is closed."""
    out, err, rc, took = _sigint_child(fresh_daemon, _CONNECT_CTRL_C_CHILD,
                                       str(fresh_daemon.proc.pid))
    assert "the connect ended" in out, err
    assert rc == -signal.SIGINT and "KeyboardInterrupt" in err, err
    assert took < 3, f"the child took {took:.1f} s to end after SIGINT"


def test_no_waiter_thread_at_shutdown(daemon, monkeypatch):
    """Python 3.12 refuses to start a thread once the interpreter is shutting down (in an atexit
    handler): a call with no timeout from the main thread then goes straight to libsortd, as
    does the making of a Client, instead of failing with RuntimeError."""
    from sortd import _waiter

    def refuse(self):
        raise RuntimeError("can't create new thread at interpreter shutdown")

    monkeypatch.setattr(_waiter, "_waiter", None)
    monkeypatch.setattr(threading.Thread, "start", refuse)
    a = np.arange(1000, dtype=np.uint32)[::-1].copy()
    with sortd.Client(daemon.sock, timeout=math.inf) as c:
        c.ping()
        c.sort(a)
    np.testing.assert_array_equal(a, np.arange(1000, dtype=np.uint32))
