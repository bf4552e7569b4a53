"""Every dtype x order x payload x path against numpy's stable sort, under totalOrder."""
import numpy as np
import pytest

import sortd

DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.float32,
          np.uint64, np.int64, np.float64]
UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def image(a):
    """The order-preserving unsigned image of a's keys (IEEE totalOrder for floats)."""
    u = UNSIGNED[a.dtype.itemsize]
    bits = a.view(u)
    sign = u(1) << u(8 * a.dtype.itemsize - 1)
    if a.dtype.kind == "u":
        return bits.copy()
    if a.dtype.kind == "i":
        return bits ^ sign
    return np.where(bits & sign, ~bits, bits | sign)


def expected_order(a, descending=False, bits=None):
    img = image(a)
    if bits is not None:
        begin, end = bits
        u = img.dtype.type
        img = (img >> u(begin)) & u((1 << (end - begin)) - 1)
    return np.argsort(~img if descending else img, kind="stable")


def keys(dtype, n, seed):
    """Random bit patterns (NaNs and signed zeros included for floats), with runs of equal
    keys so that stability shows."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, n * np.dtype(dtype).itemsize, dtype=np.uint8).view(dtype)
    a[rng.integers(0, n, n // 4)] = a[rng.integers(0, n, n // 4) % max(n // 64, 1)]
    if a.dtype.kind == "f" and n > 8:
        a[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.5, -1.5]
    return a


@pytest.fixture(params=["inline", "pool", "region"])
def path(request, client):
    """How the array reaches the daemon: make(a) returns the array the client sorts."""
    if request.param == "inline":
        client.inline_max_bytes = 1 << 40
        return lambda a: a.copy()
    client.inline_max_bytes = 0
    if request.param == "pool":
        return lambda a: a.copy()

    def in_region(a):
        r = client.empty(a.size, a.dtype)
        r[:] = a
        return r
    return in_region


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("payload", ["keys", "values32", "values64", "argsort32", "argsort64"])
def test_matrix(client, path, dtype, descending, payload):
    n = 20011
    a = keys(dtype, n, hash((np.dtype(dtype).name, descending, payload)) & 0xffff)
    order = expected_order(a, descending)
    if payload.startswith("argsort"):
        idx_dtype = np.uint32 if payload == "argsort32" else np.uint64
        src = path(a)
        idx = client.argsort(src, descending=descending, index_dtype=idx_dtype)
        assert idx.dtype == idx_dtype
        np.testing.assert_array_equal(idx, order)
        np.testing.assert_array_equal(src.view(np.uint8), a.view(np.uint8))  # untouched
        return
    k = path(a)
    vals = None
    if payload != "keys":
        vdtype = np.int32 if payload == "values32" else np.float64
        v = np.arange(n).astype(vdtype)
        vals = path(v)
    out = client.sort(k, descending=descending, values=vals)
    assert out is k
    np.testing.assert_array_equal(k.view(np.uint8), a[order].view(np.uint8))
    if vals is not None:
        np.testing.assert_array_equal(vals, np.arange(n).astype(vals.dtype)[order])


@pytest.mark.parametrize("dtype", [np.int16, np.uint32, np.float64])
def test_equals_numpy_without_nans(client, dtype):
    """Where numpy and totalOrder agree (no NaNs, no mixed zeros), the results are numpy's."""
    rng = np.random.default_rng(7)
    a = rng.integers(-1000, 1000, 100_000).astype(dtype)
    np.testing.assert_array_equal(client.argsort(a), np.argsort(a, kind="stable"))
    b = a.copy()
    client.sort(b)
    np.testing.assert_array_equal(b, np.sort(a, kind="stable"))


def test_bits(client):
    a = keys(np.uint32, 50_000, 3)
    order = expected_order(a, bits=(4, 12))
    b = a.copy()
    client.sort(b, bits=(4, 12))
    np.testing.assert_array_equal(b, a[order])
    np.testing.assert_array_equal(client.argsort(a, bits=(4, 12), descending=True),
                                  expected_order(a, True, (4, 12)))


def test_out_leaves_input(client):
    """Inline, and through a lease (a read into the lease, out written once from it)."""
    for inline_max in (client.inline_max_bytes, 0):
        client.inline_max_bytes = inline_max
        a = keys(np.float32, 3000, 4)
        before = a.copy()
        out = np.full_like(a, 7.0)
        assert client.sort(a, out=out) is out
        np.testing.assert_array_equal(a.view(np.uint32), before.view(np.uint32))
        np.testing.assert_array_equal(out.view(np.uint32),
                                      a[expected_order(a)].view(np.uint32))


def test_empty_and_one(client):
    for n in (0, 1):
        a = np.arange(n, dtype=np.int64)
        assert client.sort(a) is a
        assert client.argsort(a).size == n


def test_module_level(daemon, monkeypatch):
    monkeypatch.setenv("SORTD_SOCKET", daemon.sock)
    a = keys(np.int64, 300_000, 5)
    b = a.copy()
    sortd.sort(b, descending=True)
    np.testing.assert_array_equal(b, a[expected_order(a, True)])
    np.testing.assert_array_equal(sortd.argsort(a, index_dtype=np.int64), expected_order(a))


def test_timings(client):
    client.sort(keys(np.uint32, 100_000, 6))
    t = client.last_timings
    assert t.sort > 0 and t.queued >= 0 and t.transfer >= 0


def test_threads_share_a_client(client):
    import threading
    errors = []

    def work(seed):
        try:
            for i in range(5):
                a = keys(np.uint16, 50_000 + seed * 100 + i, seed * 10 + i)
                b = a.copy()
                client.sort(b)
                np.testing.assert_array_equal(b, a[expected_order(a)])
        except Exception as e:  # reported below, on the test's thread
            errors.append(e)
    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def unaligned(a):
    """A writable copy of a whose elements start one byte past an aligned address."""
    buf = bytearray(a.nbytes + 1)
    out = np.frombuffer(buf, dtype=a.dtype, offset=1)
    out[:] = a
    assert not out.flags.aligned
    return out


@pytest.mark.parametrize("inline_max_bytes", [1 << 40, 0], ids=["inline", "pool"])
def test_unaligned_arrays(client, inline_max_bytes):
    """Arrays whose elements are not aligned to their size, which libsortd takes neither
    inline nor in a region, go through copies."""
    client.inline_max_bytes = inline_max_bytes
    a = keys(np.uint32, 20011, 8)
    k, v = unaligned(a), unaligned(np.arange(a.size, dtype=np.float64))
    client.sort(k, values=v)
    np.testing.assert_array_equal(k, np.sort(a, kind="stable"))
    np.testing.assert_array_equal(v, np.argsort(a, kind="stable"))
    np.testing.assert_array_equal(client.argsort(unaligned(a)), np.argsort(a, kind="stable"))


@pytest.mark.parametrize("inline_max_bytes", [1 << 40, 0], ids=["inline", "pool"])
@pytest.mark.parametrize("misaligned", ["keys", "values"])
def test_misaligned_views_of_regions(client, inline_max_bytes, misaligned):
    """Views of an empty() array at offsets that are not a multiple of their element size,
    which libsortd refuses in a region sort: such a view is copied, the other sorted where it
    is."""
    client.inline_max_bytes = inline_max_bytes
    a = keys(np.int64, 5000, 9)
    raw = client.empty(a.nbytes * 2 + 16, np.uint8)
    at = {"keys": (4, a.nbytes + 8), "values": (0, a.nbytes + 10)}[misaligned]
    k = raw[at[0]:at[0] + a.nbytes].view(np.int64)
    v = raw[at[1]:at[1] + a.nbytes].view(np.int64)
    k[:] = a
    v[:] = np.arange(a.size)
    client.sort(k, values=v)
    np.testing.assert_array_equal(k, np.sort(a, kind="stable"))
    np.testing.assert_array_equal(v, np.argsort(a, kind="stable"))
    k[:] = a
    np.testing.assert_array_equal(client.argsort(k), np.argsort(a, kind="stable"))
