"""Zero-copy arrays from Client.empty, and the pool of regions behind ordinary arrays."""
import gc
import os

import numpy as np
import pytest

import sortd
from conftest import settled_regions


def test_empty_sorts_in_place_without_copies(client):
    n = 1 << 20
    e = client.empty(n, np.uint32)
    assert e.shape == (n,) and e.dtype == np.uint32 and not e.any()  # zero-filled
    rng = np.random.default_rng(1)
    e[:] = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    want = np.sort(e, kind="stable")
    before = client.status()
    client.sort(e)
    after = client.status()
    np.testing.assert_array_equal(e, want)
    # Nothing crossed the socket but the messages, and no pool region was made.
    assert after["bytes_in"] - before["bytes_in"] < 4096
    assert after["bytes_out"] - before["bytes_out"] < 4096
    assert client.pool_regions() == (0, 0)


def test_empty_checks_n_and_dtype(client):
    """n is an integer count (a numpy one too) whose bytes a region can hold, and the dtype
    one whose elements can live in shared memory: anything else is refused before a region
    is made, where ctypes would wrap the size to a smaller one."""
    from conftest import LibHooks
    made = []
    client._lib = LibHooks(client._lib,
                           sortd_region_create=lambda real, *args: made.append(1) or real(*args))
    for n, exc, hint in [(2**61, ValueError, "more than a region holds"),  # 2^64 bytes
                         (2**61 + 1, ValueError, "more than a region holds"),
                         (2**64 + 1, ValueError, "more than a region holds"),
                         (10**30, ValueError, "more than a region holds"),
                         (-1, ValueError, ">= 0"),
                         (2.5, TypeError, "integer"), ("3", TypeError, "integer"),
                         (None, TypeError, "integer")]:
        with pytest.raises(exc, match=hint):
            client.empty(n, np.uint64)
    for dtype in (object, [("x", "O")], "V0"):
        with pytest.raises(TypeError, match="fixed-size"):
            client.empty(3, dtype)
    assert not made
    for n in (np.int64(3), np.uint8(3)):
        assert client.empty(n, np.uint64).shape == (3,)


def test_slices_and_values_in_regions(client):
    e = client.empty(100_000, np.float64)
    v = client.empty(100_000, np.int64)
    e[:] = np.random.default_rng(2).standard_normal(e.size)
    v[:] = np.arange(v.size)
    part, vpart = e[1000:51000], v[1000:51000]
    want = np.argsort(part, kind="stable")
    ref = part.copy()
    client.inline_max_bytes = 0
    client.sort(part, descending=False, values=vpart)
    np.testing.assert_array_equal(part, ref[want])
    np.testing.assert_array_equal(vpart, 1000 + want)
    assert client.pool_regions() == (0, 0)
    # Keys in a region, values not: only the values go through the pool.
    plain = np.arange(100_000, dtype=np.int32)
    e[:] = -np.arange(100_000)
    client.sort(e, values=plain)
    np.testing.assert_array_equal(plain, np.arange(100_000)[::-1])
    assert client.pool_regions()[0] == 1


def test_values_on_the_keys(client):
    """sort(a, values=a) (or values=out) moves the keys' own bytes with them, which is
    sorting the keys: it does so on every path, an array from empty() too, which libsortd
    cannot sort with overlapping spans. values overlapping the keys in part are refused on
    every path, before anything is written."""
    n = 5000
    data = np.random.default_rng(3).integers(0, 1000, n + 1, dtype=np.uint32)
    want = np.sort(data[:n], kind="stable")

    def ordinary(inline):
        def make():
            client.inline_max_bytes = sortd.Client.inline_max_bytes if inline else 0
            return data.copy()
        return make

    def in_region():
        client.inline_max_bytes = sortd.Client.inline_max_bytes
        e = client.empty(n + 1, np.uint32)
        e[:] = data
        return e

    for make in (ordinary(True), ordinary(False), in_region):
        a = make()[:n]
        client.sort(a, values=a)
        np.testing.assert_array_equal(a, want)
        a = make()[:n]
        client.sort(a, values=a.view(np.float32))  # the same bytes as another type
        np.testing.assert_array_equal(a, want)
        out = make()[:n]
        client.sort(data[:n], out=out, values=out)
        np.testing.assert_array_equal(out, want)
        buf = make()
        with pytest.raises(ValueError, match=r"values overlaps a .*values\.copy\(\)"):
            client.sort(buf[:n], values=buf[1:])
        with pytest.raises(ValueError, match="values overlaps out"):
            client.sort(data[:n], out=buf[1:], values=buf[:n])
        np.testing.assert_array_equal(buf, data)


def test_regions_released_with_their_arrays(client):
    base = settled_regions(client)
    arrays = [client.empty(1000, np.uint8) for _ in range(5)]
    assert client.status()["regions"] == base + 5
    view = arrays[0][10:20]
    del arrays
    gc.collect()
    client.ping()  # the next call unregisters what the collector freed
    assert client.status()["regions"] == base + 1  # the view keeps its region
    del view
    gc.collect()
    client.ping()
    assert client.status()["regions"] == base


def test_array_outlives_its_client(daemon):
    with sortd.Client(daemon.sock) as c:
        e = c.empty(1000, np.int16)
        e[:] = np.arange(1000)[::-1]
        c.sort(e)
    np.testing.assert_array_equal(e, np.arange(1000))  # still mapped after close
    e[:] = 0
    del e
    gc.collect()


def test_array_outlives_its_client_until_exit(daemon):
    """An atexit handler registered before the first empty() runs after weakref.finalize's
    own: the array it reads, whose client closed, is still mapped then."""
    import subprocess
    import sys
    import textwrap
    script = textwrap.dedent(f"""
        import atexit, numpy as np, sortd
        keep = {{}}
        atexit.register(lambda: print("sum", int(keep["e"].sum())))
        with sortd.Client({daemon.sock!r}) as c:
            keep["e"] = c.empty(1 << 20, np.uint32)
            keep["e"][:] = 1
    """)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(sortd.__file__)))
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=60)
    assert (r.returncode, r.stdout) == (0, f"sum {1 << 20}\n"), r.stderr


def test_pool_is_reused(client):
    rng = np.random.default_rng(3)
    client.inline_max_bytes = 1 << 16
    a = rng.integers(0, 1 << 63, 1 << 18, dtype=np.uint64)
    client.sort(a.copy())
    pooled = client.pool_regions()
    assert pooled[0] == 1 and pooled[1] >= a.nbytes
    client.argsort(a)  # keys and indices: a larger region joins the pool
    regions = settled_regions(client)
    pooled = client.pool_regions()
    assert pooled[0] == 2
    for seed in range(4):
        b = rng.integers(0, 1 << 63, (1 << 18) - seed * 1000, dtype=np.uint64)
        want = np.sort(b, kind="stable")
        client.sort(b)
        np.testing.assert_array_equal(b, want)
        idx = client.argsort(b[::-1].copy())
        assert idx.size == b.size
    assert client.pool_regions() == pooled
    assert client.status()["regions"] == regions


def test_small_arrays_go_inline(client):
    before = client.status()
    a = np.arange(1000, dtype=np.uint32)[::-1].copy()
    client.sort(a)
    after = client.status()
    assert after["bytes_in"] - before["bytes_in"] >= a.nbytes
    assert client.pool_regions() == (0, 0)


def test_inline_sorts_send_the_sort_alone(client):
    """Whether a sort goes inline depends on the daemon's max-request-bytes, which the client
    reads from the Hello of its connect: an inline sort or argsort is one request to the
    daemon, with no Hello sent again to learn the limit."""
    before = client.status()["requests_total"]
    a = np.arange(1000, dtype=np.uint32)[::-1].copy()
    np.testing.assert_array_equal(client.argsort(a), np.arange(1000)[::-1])
    client.sort(a)
    assert client.status()["requests_total"] - before == 3  # argsort, sort, this status
    assert client.pool_regions() == (0, 0)


def test_pool_keeps_the_largest(fresh_daemon):
    """Each larger array needs a new region; past POOL_KEEP free ones, the smallest goes."""
    from sortd._regions import POOL_KEEP, POOL_MIN_BYTES
    rng = np.random.default_rng(5)
    with sortd.Client(fresh_daemon.sock, timeout=60) as c:
        c.inline_max_bytes = 0
        sizes = [POOL_MIN_BYTES << k for k in range(POOL_KEEP + 2)]
        for size in sizes:
            a = rng.integers(0, 1 << 63, size // 8, dtype=np.uint64)
            want = np.sort(a, kind="stable")
            c.sort(a)
            np.testing.assert_array_equal(a, want)
        assert c.pool_regions() == (POOL_KEEP, sum(sizes[-POOL_KEEP:]))
        assert c.status()["regions"] == POOL_KEEP  # the daemon unmapped the two smallest


def test_pool_gives_way_at_the_region_limit(tmp_root):
    """At the connection's region limit, the free regions the pool keeps are released so that
    a new one can be made, and the sort goes on."""
    from conftest import Daemon
    d = Daemon(tmp_root, "--max-regions", "2")
    rng = np.random.default_rng(6)
    try:
        with sortd.Client(d.sock, timeout=60) as c:
            c.inline_max_bytes = 0
            c.sort(rng.integers(0, 100, 1000, dtype=np.uint32))
            c.argsort(rng.integers(0, 100, 1 << 18, dtype=np.uint64))
            assert c.pool_regions()[0] == 2
            z = c.empty(1000, np.uint32)  # a third region: only after the pool gives way
            z[:] = np.arange(1000, dtype=np.uint32)[::-1]
            c.sort(z)
            np.testing.assert_array_equal(z, np.arange(1000, dtype=np.uint32))
            assert c.pool_regions() == (0, 0)
    finally:
        d.stop()


def test_pool_region_fits_max_region_bytes(tmp_root):
    """The pool rounds a new region up to a power of two for reuse; where that would pass the
    daemon's max-region-bytes, a region of the size needed does the sort."""
    from conftest import Daemon
    d = Daemon(tmp_root, "--max-region-bytes", "3M")
    rng = np.random.default_rng(7)
    try:
        with sortd.Client(d.sock, timeout=60) as c:
            c.inline_max_bytes = 0
            a = rng.integers(0, 1 << 32, 640 << 10, dtype=np.uint32)  # 2.5 MiB: 4 MiB rounded
            b = a.copy()
            c.sort(b)
            np.testing.assert_array_equal(b, np.sort(a, kind="stable"))
            np.testing.assert_array_equal(c.argsort(a[:300_000]),
                                          np.argsort(a[:300_000], kind="stable"))
            assert c.pool_regions()[1] <= 3 << 20
    finally:
        d.stop()


def test_info(client):
    info = client.info()
    assert info["engine"] == "cpu"
    assert info["capacity"] == 1 << 22
    assert info["protocol_version"] >= 1
    assert info["max_regions"] == 64
    assert isinstance(info["server_version"], str) and info["server_version"]


def _region_fds():
    """This process's open memfds of regions (libsortd keeps one for each mapping)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:sortd-region")
        except OSError:
            pass  # closed meanwhile
    return count


def test_array_dying_while_its_client_closes(daemon):
    """The last view of an empty() array dropped while close() runs, before sortd_close (the
    collector runs finalizers whenever it likes): its region is unmapped all the same."""
    from conftest import LibHooks
    c = sortd.Client(daemon.sock, timeout=60)
    arrays = [c.empty(1000, np.uint32)]
    before = _region_fds()

    def close(real, conn):
        arrays.clear()
        gc.collect()
        real(conn)

    c._lib = LibHooks(c._lib, sortd_close=close)
    c.close()
    assert not arrays
    assert _region_fds() == before - 1
