"""A fork's child (a data loader's worker, say) and the clients its parent made: the child
gets an error from them, or a connection of its own from sortd.sort, and nothing it does
reaches the parent's connection or regions."""
import os
import traceback

import numpy as np

import sortd


def _in_child(check):
    """Runs check() in a forked child; its exit status is 0 when check returned True."""
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            ok = check()
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_child_does_not_touch_the_parents_connection(daemon, monkeypatch, request):
    monkeypatch.setenv("SORTD_SOCKET", daemon.sock)
    rng = np.random.default_rng(9)
    big = rng.integers(0, 1 << 63, 1 << 18, dtype=np.uint64)
    c = sortd.Client(daemon.sock, timeout=60)
    request.addfinalizer(c.close)
    c.sort(big.copy())  # the pool now holds a region of this connection
    zero = c.empty(1000, np.uint32)
    sortd.sort(np.arange(10, dtype=np.uint32))  # and the default client exists
    before = c.status()

    def child():
        try:
            c.ping()
            return False
        except sortd.Error as e:
            if "before a fork: make a new one" not in str(e):
                return False
        a = rng.integers(0, 1000, 5000, dtype=np.uint32)
        want = np.sort(a, kind="stable")
        sortd.sort(a)  # the default client: a new connection, the parent's left alone
        c.close()  # lets go of the parent's without a word
        return bool((a == want).all())

    assert _in_child(child) == 0
    after = c.status()
    assert after["protocol_errors"] == before["protocol_errors"]
    assert after["regions"] == before["regions"]  # the parent's pool and empty() region
    b = big.copy()
    c.sort(b)  # through the same pooled region
    np.testing.assert_array_equal(b, np.sort(big, kind="stable"))
    zero[:] = np.arange(1000, dtype=np.uint32)[::-1]
    c.sort(zero)
    assert zero[0] == 0
    assert c.pool_regions()[0] == 1
    c.close()


def test_empty_arrays_are_shared_with_the_child(client):
    """An empty() array is shared memory: a child's writes reach the parent's array, where an
    ordinary array's pages are copied on write."""
    shared = client.empty(100, np.int64)
    plain = np.zeros(100, np.int64)

    def child():
        shared[:] = 7
        plain[:] = 7
        return True

    assert _in_child(child) == 0
    assert (shared == 7).all()
    assert not plain.any()
