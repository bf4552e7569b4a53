"""The copies between the caller's arrays and region memory (sortd/_copies.py): large ones
split over threads, each part landing where it belongs, and the sorts that use them."""
import os

import numpy as np

from sortd import _copies


def test_parts():
    big = _copies.PARALLEL_MIN_BYTES
    assert _copies.parts(big - 1) == 1
    assert _copies.parts(0) == 1
    if (os.cpu_count() or 1) >= 2:
        assert _copies.parts(big) >= 2
        assert _copies.parts(1 << 40) == min(4, os.cpu_count())


def test_copyto_every_part_in_place():
    """Sizes about the threshold and odd ones, 1- to 8-byte elements, 1-D and rows: each
    element where np.copyto puts it, nothing past the end written."""
    rng = np.random.default_rng(7)
    big = _copies.PARALLEL_MIN_BYTES
    for dtype in (np.uint8, np.uint16, np.float32, np.int64):
        size = np.dtype(dtype).itemsize
        for nbytes in (big - size, big, big + 3 * size, 3 * big + 5 * size):
            n = nbytes // size
            src = rng.integers(0, 100, n).astype(dtype)
            dst = np.zeros(n + 16, dtype)
            _copies.copyto(dst[:n], src)
            np.testing.assert_array_equal(dst[:n], src)
            assert not dst[n:].any()
    rows = rng.integers(0, 1 << 32, (3001, 1024), dtype=np.uint32)
    out = np.empty_like(rows)
    _copies.copyto(out, rows)
    np.testing.assert_array_equal(out, rows)


def test_copyto_strided_and_mixed_falls_back():
    """A strided source, or one of another dtype, is np.copyto's to do whole."""
    a = np.arange(2 * _copies.PARALLEL_MIN_BYTES // 4, dtype=np.uint32)
    dst = np.empty(a.size // 2, np.uint32)
    _copies.copyto(dst, a[::2])
    np.testing.assert_array_equal(dst, a[::2])
    wide = np.empty(a.size, np.uint64)
    _copies.copyto(wide, a)
    np.testing.assert_array_equal(wide, a)


def test_large_sorts_through_the_pool(client):
    """Keys, rows with out=, argsort and top-k large enough for split copies, through a
    lease: each against numpy."""
    client.inline_max_bytes = 0
    rng = np.random.default_rng(11)
    n = 3 * _copies.PARALLEL_MIN_BYTES // 16 + 5  # 1.5 x the threshold of 8-byte keys
    a = rng.integers(0, 1 << 64, n, dtype=np.uint64)
    want = np.sort(a, kind="stable")
    b = a.copy()
    client.sort(b)
    np.testing.assert_array_equal(b, want)
    rows = a[: n - n % 1024].reshape(-1, 1024)
    out = np.empty_like(rows)
    assert client.sort(rows, axis=-1, out=out) is out
    np.testing.assert_array_equal(out, np.sort(rows, axis=-1))
    np.testing.assert_array_equal(client.argsort(a), np.argsort(a, kind="stable"))
    vals, idx = client.topk(a, 10, largest=False)
    np.testing.assert_array_equal(vals, want[:10])
    np.testing.assert_array_equal(a[idx], want[:10])
