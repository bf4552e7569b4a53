"""Arrays of several dimensions, sorted along their last axis (each row on its own, one
request), and top-k, against numpy's stable sort under totalOrder: every dtype x order x
payload x path, ties, NaNs and signed zeros, empty rows, and Client.empty arrays reshaped to
rows, sorted where they lie."""
import numpy as np
import pytest

import sortd

from conftest import LibHooks
from test_sort import DTYPES, image, keys

SHAPES = [(23, 877), (3, 5, 311)]


def row_order(a, descending=False):
    """np.argsort(axis=-1, kind="stable") of a's keys under totalOrder."""
    img = image(a)
    return np.argsort(~img if descending else img, axis=-1, kind="stable")


def same_bits(x, y):
    assert x.shape == y.shape and x.dtype == y.dtype
    np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))


def row_keys(dtype, shape, seed):
    """keys() laid out in rows: NaNs and signed zeros in the first, runs of equal keys."""
    return keys(dtype, int(np.prod(shape)), seed).reshape(shape)


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
        r = client.empty(a.size, a.dtype).reshape(a.shape)
        r[...] = a
        return r
    return in_region


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("payload", ["keys", "values32", "values64", "argsort32", "argsort64"])
def test_rows_matrix(client, path, shape, dtype, descending, payload):
    a = row_keys(dtype, shape, hash((np.dtype(dtype).name, descending, payload, shape)) & 0xffff)
    order = row_order(a, descending)
    if payload.startswith("argsort"):
        idx_dtype = np.uint32 if payload == "argsort32" else np.uint64
        src = path(a)
        idx = client.argsort(src, descending=descending, index_dtype=idx_dtype)
        assert idx.dtype == idx_dtype and idx.shape == a.shape
        np.testing.assert_array_equal(idx, order)
        same_bits(src, a)  # untouched
        return
    k = path(a)
    vals = None
    if payload != "keys":
        vdtype = np.int32 if payload == "values32" else np.float64
        v = np.arange(a.size).astype(vdtype).reshape(shape)
        vals = path(v)
    assert client.sort(k, descending=descending, values=vals) is k
    same_bits(k, np.take_along_axis(a, order, -1))
    if vals is not None:
        v = np.arange(a.size).astype(vals.dtype).reshape(shape)
        np.testing.assert_array_equal(vals, np.take_along_axis(v, order, -1))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
def test_topk_matrix(client, path, dtype, largest):
    """The first k of the stable order of each row, values and indices, for k below, at and
    past the row's length; the input left as it was."""
    a = row_keys(dtype, (19, 301), hash((np.dtype(dtype).name, largest)) & 0xffff)
    order = row_order(a, largest)
    src = path(a)
    for k in (1, 7, 301, 400):
        vals, idx = client.topk(src, k, largest)
        m = min(k, 301)
        assert vals.shape == idx.shape == (19, m)
        assert vals.dtype == a.dtype and idx.dtype == np.int64
        np.testing.assert_array_equal(idx, order[:, :m])
        same_bits(vals, np.take_along_axis(a, order[:, :m], -1))
        same_bits(src, a)


@pytest.mark.parametrize("index_dtype", [np.uint32, np.uint64, np.int64])
def test_topk_one_array_and_index_dtypes(client, index_dtype):
    """A 1-D array is one row; 3-D arrays give (..., k); every index width."""
    a = keys(np.int32, 5000, 11)
    vals, idx = client.topk(a, 10, index_dtype=index_dtype)
    assert idx.dtype == index_dtype and vals.shape == (10,)
    np.testing.assert_array_equal(idx, row_order(a, True)[:10])
    b = row_keys(np.float32, (2, 3, 50), 12)
    vals, idx = client.topk(b, 4, largest=False, index_dtype=index_dtype)
    assert vals.shape == (2, 3, 4)
    np.testing.assert_array_equal(idx, row_order(b)[..., :4])


@pytest.mark.parametrize("dtype", [np.int16, np.uint32, np.float64])
def test_equals_numpy_without_nans(client, dtype):
    """Where numpy and totalOrder agree (no NaNs, no mixed zeros), the results are numpy's,
    and top-k's are the first of np.argsort(kind="stable"): ties by index."""
    rng = np.random.default_rng(13)
    a = rng.integers(-50, 50, (64, 1000)).astype(dtype)
    b = a.copy()
    client.sort(b)
    np.testing.assert_array_equal(b, np.sort(a, axis=-1, kind="stable"))
    np.testing.assert_array_equal(client.argsort(a), np.argsort(a, axis=-1, kind="stable"))
    order = np.argsort(-a.astype(np.float64), axis=-1, kind="stable")  # largest first
    vals, idx = client.topk(a, 20)
    np.testing.assert_array_equal(idx, order[:, :20])
    np.testing.assert_array_equal(vals, np.take_along_axis(a, order[:, :20], -1))
    vals, idx = client.topk(a, 20, largest=False)
    np.testing.assert_array_equal(idx, np.argsort(a, axis=-1, kind="stable")[:, :20])


def test_ties_nans_and_zeros(client):
    """Equal keys keep their order (so top-k takes the lower indices), -0.0 sorts before
    +0.0, and NaNs by their sign: +NaN the largest, -NaN the smallest."""
    row = np.array([1.0, np.nan, -0.0, 0.0, -np.nan, 1.0, -np.inf, 0.0, -0.0, 1.0], np.float64)
    a = np.stack([row, row[::-1].copy(), np.full(10, 2.0)])
    vals, idx = client.topk(a, 4)
    np.testing.assert_array_equal(idx[0], [1, 0, 5, 9])
    np.testing.assert_array_equal(idx[2], [0, 1, 2, 3])
    vals, idx = client.topk(a, 4, largest=False)
    np.testing.assert_array_equal(idx[0], [4, 6, 2, 8])
    assert np.signbit(vals[0, 2]) and np.signbit(vals[0, 3])
    b = a.copy()
    client.sort(b)
    same_bits(b, np.take_along_axis(a, row_order(a), -1))
    assert np.signbit(b[0, 2]) and np.isnan(b[0, 0]) and np.isnan(b[0, -1])


def test_empty_rows_and_k_zero(client):
    for shape in ((0, 5), (5, 0), (2, 0, 3)):
        a = np.zeros(shape, np.uint32)
        assert client.sort(a) is a
        assert client.argsort(a).shape == shape
        vals, idx = client.topk(a, 3)
        assert vals.shape == shape[:-1] + (min(3, shape[-1]),) == idx.shape
    vals, idx = client.topk(np.arange(12, dtype=np.int64).reshape(3, 4), 0)
    assert vals.shape == idx.shape == (3, 0)


def test_out_and_one_column(client):
    a = row_keys(np.uint16, (300, 1), 14)
    out = np.empty_like(a)
    assert client.sort(a, out=out) is out
    same_bits(out, a)  # rows of one key are sorted already
    b = row_keys(np.int64, (40, 25), 15)
    out = np.empty_like(b)
    client.sort(b, out=out, descending=True)
    same_bits(out, np.take_along_axis(b, row_order(b, True), -1))


def spy(client, name):
    """Every call of libsortd's name on client, its last argument (the request) as seen."""
    seen = []

    def hook(real, conn, ref):
        seen.append(ref._obj)  # ctypes.byref's object
        return real(conn, ref)
    client._lib = LibHooks(client._lib, **{name: hook})
    return seen


def test_region_rows_with_no_copy(client):
    """An empty() array reshaped to rows is sorted, argsorted and top-k'd where it lies: the
    region sort names its region and offset, and its segments are the rows."""
    client.inline_max_bytes = 0
    seen = spy(client, "sortd_sort_in_region")
    a = row_keys(np.float32, (50, 400), 16)
    r = client.empty(a.size + 16, np.float32)[16:].reshape(a.shape)
    r[...] = a
    region, offset = client._regions.span(r)
    assert offset == 64
    pool = client.pool_regions()
    client.sort(r)
    same_bits(r, np.take_along_axis(a, row_order(a), -1))
    assert client.pool_regions() == pool  # nothing was copied into the pool
    rs = seen[-1]
    assert (rs.keys, rs.keys_offset, rs.n) == (region.handle, 64, a.size)
    assert (rs.segments.contents.count, rs.segments.contents.row_len) == (50, 400)
    assert not rs.segments.contents.offsets and rs.k == 0
    r[...] = a
    vals, idx = client.topk(r, 5)
    rs = seen[-1]
    assert (rs.keys, rs.keys_offset, rs.k) == (region.handle, 64, 5)
    np.testing.assert_array_equal(idx, row_order(a, True)[:, :5])
    same_bits(vals, np.take_along_axis(a, idx, -1))


def test_one_dimension_sends_no_segments(client):
    """A 1-D array is one sort, as before segments: its request names none."""
    client.inline_max_bytes = 1 << 40
    seen = spy(client, "sortd_sort_request")
    client.sort(keys(np.uint32, 1000, 17))
    assert not seen[-1].segments and seen[-1].k == 0
    client.sort(row_keys(np.uint32, (10, 100), 17))
    assert seen[-1].segments.contents.count == 10


def test_module_level(daemon, monkeypatch):
    monkeypatch.setenv("SORTD_SOCKET", daemon.sock)
    a = row_keys(np.int64, (100, 3000), 18)
    b = a.copy()
    sortd.sort(b, descending=True)
    same_bits(b, np.take_along_axis(a, row_order(a, True), -1))
    np.testing.assert_array_equal(sortd.argsort(a, -1, index_dtype=np.int64), row_order(a))
    vals, idx = sortd.topk(a, 3, largest=False)
    np.testing.assert_array_equal(idx, row_order(a)[:, :3])
