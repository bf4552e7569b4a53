"""The key types f16, bf16, u128 and i128, and sorts by several key columns (lexsort,
sort_by), through a real daemon on the cpu engine, inline and in regions; each result is
checked exactly against a reference that numpy or Python ints compute from the keys' IEEE
totalOrder or integer order."""
import itertools

import numpy as np
import pytest

import sortd

PATHS = ["inline", "region"]


@pytest.fixture(params=PATHS)
def path_client(request, client):
    """The client, sending arrays inline or (inline_max_bytes 0) through a region."""
    if request.param == "region":
        client.inline_max_bytes = 0
    return client


def order_image(bits, width):
    """The order-preserving unsigned image of float bit patterns (IEEE totalOrder)."""
    sign = np.uint64(1) << np.uint64(width - 1)
    bits = bits.astype(np.uint64)
    full = np.uint64((1 << width) - 1)
    return np.where(bits & sign, ~bits & full, bits | sign)


def stable_order(image, descending):
    """The stable permutation of an unsigned image (a stable descending sort keeps equal
    keys in their input order too)."""
    return np.argsort(~image if descending else image, kind="stable")


# ---- 16-bit floats: every bit pattern ----

@pytest.fixture(scope="module")
def patterns():
    return np.random.default_rng(16).permutation(np.arange(1 << 16, dtype=np.uint32)) \
        .astype(np.uint16)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_every_16_bit_float(path_client, patterns, kind, descending):
    """All 65,536 patterns, NaNs and zeros of both signs included, shuffled: sort and argsort
    put them in totalOrder (a float16 array as itself, bfloat16 bits as uint16 with
    key_type="bf16")."""
    want = stable_order(order_image(patterns, 16), descending)
    a = patterns.copy().view(np.float16) if kind == "f16" else patterns.copy()
    kt = None if kind == "f16" else "bf16"
    idx = path_client.argsort(a, descending=descending, key_type=kt)
    np.testing.assert_array_equal(idx, want)
    path_client.sort(a, descending=descending, key_type=kt)
    np.testing.assert_array_equal(a.view(np.uint16), patterns[want])


def test_16_bit_float_bit_range_and_topk(client, patterns):
    """bits=(8, 16) orders by the top byte of the totalOrder image only, stably; topk's
    largest are the last of the order."""
    image = order_image(patterns, 16)
    a = patterns.copy()
    idx = client.argsort(a, bits=(8, 16), key_type="bf16")
    np.testing.assert_array_equal(idx, np.argsort(image >> np.uint64(8), kind="stable"))
    vals, top = client.topk(patterns.view(np.float16), 10)
    want = stable_order(image, True)[:10]
    np.testing.assert_array_equal(top, want)
    np.testing.assert_array_equal(vals.view(np.uint16), patterns[want])


def test_16_bit_float_rows(client):
    """Rows of float16 (no NaN, no -0.0: numpy's order then is totalOrder), each sorted on
    its own in one request, and their top-k."""
    m = np.random.default_rng(17).standard_normal((50, 300)).astype(np.float16)
    m[m == 0] = 1
    want = np.sort(m, axis=-1)
    vals, idx = client.topk(m, 3)
    np.testing.assert_array_equal(vals, want[:, ::-1][:, :3])
    np.testing.assert_array_equal(np.take_along_axis(m, idx, -1), vals)
    client.sort(m)
    np.testing.assert_array_equal(m, want)


# ---- 128-bit integers ----

M64 = (1 << 64) - 1


def wide_keys(n, signed, seed):
    """n 128-bit keys as Python ints: random, many sharing their high 64 bits (so the low
    word decides), and the extremes and carries."""
    rng = np.random.default_rng(seed)
    highs = [int(h) for h in rng.integers(0, 1 << 64, 5, dtype=np.uint64)]
    keys = []
    for i in range(n):
        low = int(rng.integers(0, 1 << 64, dtype=np.uint64))
        high = highs[i % 5] if i % 3 else int(rng.integers(0, 1 << 64, dtype=np.uint64))
        keys.append(high << 64 | low)
    keys += [0, 1, M64, M64 + 1, (1 << 127) - 1, 1 << 127, (1 << 128) - 1, 0, 1 << 127]
    order = rng.permutation(len(keys))
    keys = [keys[i] for i in order]
    return [k - (1 << 128) if signed and k >> 127 else k for k in keys]


def as_pairs(keys):
    """(n, 2) uint64, the low word first, of Python ints (two's complement for negatives)."""
    return np.array([[k & M64, (k >> 64) & M64] for k in keys], dtype=np.uint64) \
        .reshape(len(keys), 2)


def from_pairs(a, signed):
    out = [int(lo) | int(hi) << 64 for lo, hi in a]
    return [k - (1 << 128) if signed and k >> 127 else k for k in out]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("kt", ["u128", "i128"])
def test_128_bit_keys(path_client, kt, descending):
    keys = wide_keys(3000, kt == "i128", seed=len(kt) + descending)
    want = sorted(range(len(keys)), key=lambda i: -keys[i] if descending else keys[i])
    a = as_pairs(keys)
    idx = path_client.argsort(a, descending=descending, key_type=kt, index_dtype=np.int64)
    np.testing.assert_array_equal(idx, want)
    vals = np.arange(len(keys), dtype=np.uint64)
    v16 = a.copy().view("V16").reshape(-1)  # the same keys as 16-byte elements
    path_client.sort(a, descending=descending, key_type=kt, values=vals)
    assert from_pairs(a, kt == "i128") == [keys[i] for i in want]
    np.testing.assert_array_equal(vals, want)
    path_client.sort(v16, descending=descending, key_type=kt)
    np.testing.assert_array_equal(v16.view(np.uint64).reshape(-1, 2), a)


def test_128_bit_bit_range(client):
    """A bit range across the words' boundary, of the sign-flipped image for i128."""
    keys = wide_keys(2000, True, seed=5)
    image = [(k + (1 << 128)) % (1 << 128) ^ (1 << 127) for k in keys]
    want = sorted(range(len(keys)), key=lambda i: (image[i] >> 60) & 0xFFF)
    idx = client.argsort(as_pairs(keys), bits=(60, 72), key_type="i128")
    np.testing.assert_array_equal(idx, want)


@pytest.mark.parametrize("kt", ["u128", "i128"])
def test_128_bit_rows_and_topk(path_client, kt):
    """Rows of 128-bit keys sorted along the last axis, and the top-k of each row and of
    the whole, both ways: against Python's stable sort of the keys as ints."""
    signed = kt == "i128"
    keys = wide_keys(1200, signed, seed=7)[:1200]
    rows = as_pairs(keys).reshape(40, 30, 2)
    got = path_client.sort(rows.copy(), axis=-1, key_type=kt)
    idx = path_client.argsort(rows, axis=-1, key_type=kt, index_dtype=np.int64)
    for r in range(40):
        row = keys[30 * r:30 * r + 30]
        want = sorted(range(30), key=lambda i: row[i])
        np.testing.assert_array_equal(idx[r], want)
        assert from_pairs(got[r], signed) == [row[i] for i in want]
    for largest in (False, True):
        vals, where = path_client.topk(rows, 4, largest=largest, key_type=kt)
        for r in range(40):
            row = keys[30 * r:30 * r + 30]
            want = sorted(range(30), key=lambda i: -row[i] if largest else row[i])[:4]
            np.testing.assert_array_equal(where[r], want)
            assert from_pairs(vals[r], signed) == [row[i] for i in want]
        vals, where = path_client.topk(as_pairs(keys), 9, largest=largest, key_type=kt)
        want = sorted(range(len(keys)), key=lambda i: -keys[i] if largest else keys[i])[:9]
        np.testing.assert_array_equal(where, want)
        assert from_pairs(vals, signed) == [keys[i] for i in want]


# ---- several key columns ----

def column(kind, n, rng):
    """n keys of kind, few distinct (ties reach the next column), with the special floats;
    and its sortd key_type name (None: the dtype's)."""
    if kind in ("f16", "f32", "f64"):
        pool = np.array([-np.inf, -1.5, -0.0, 0.0, 2.0, np.inf, np.nan, -np.nan],
                        dtype={"f16": np.float16, "f32": np.float32, "f64": np.float64}[kind])
        return pool[rng.integers(0, len(pool), n)], None
    if kind == "bf16":
        pool = np.array([0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc0, 0x4000],
                        np.uint16)
        return pool[rng.integers(0, len(pool), n)], "bf16"
    if kind in ("u128", "i128"):
        words = rng.integers(0, 3, (n, 2), dtype=np.uint64)
        words[:, 1] |= np.where(rng.integers(0, 2, n) == 1, np.uint64(1) << np.uint64(63),
                                np.uint64(0))
        return words, kind
    dtype = np.dtype({"u8": "u1", "i16": "i2", "u32": "u4", "i64": "i8"}[kind])
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.max, 0, 1, info.max // 2], dtype)
    return pool[rng.integers(0, len(pool), n)], None


def image_of(a, kt):
    """The columns' unsigned order images (uint64 words, most significant first) for
    np.lexsort."""
    if kt in ("u128", "i128"):
        hi = a[:, 1] ^ (np.uint64(1) << np.uint64(63)) if kt == "i128" else a[:, 1]
        return [hi, a[:, 0]]
    if kt == "bf16" or a.dtype.kind == "f":
        bits = a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
        return [order_image(bits, 8 * a.dtype.itemsize)]
    width = 8 * a.dtype.itemsize
    u = a.view(f"u{a.dtype.itemsize}").astype(np.uint64)
    return [u ^ (np.uint64(1) << np.uint64(width - 1)) if a.dtype.kind == "i" else u]


def reference(cols, kts, descending):
    """np.lexsort of the columns' images: column 0 most significant."""
    words = []
    for a, kt, d in zip(cols, kts, descending):
        words += [~w if d else w for w in image_of(a, kt)]
    return np.lexsort(words[::-1])


KINDS = ["u8", "i16", "u32", "i64", "f16", "bf16", "f32", "f64", "u128", "i128"]


@pytest.mark.parametrize("pair", list(itertools.product(KINDS, KINDS)), ids="-".join)
def test_two_columns(client, pair):
    rng = np.random.default_rng(KINDS.index(pair[0]) * 16 + KINDS.index(pair[1]))
    n = 500
    cols, kts = zip(*(column(k, n, rng) for k in pair))
    for descending in ([False, False], [True, False], [False, True]):
        perm = client.sort_by(cols, descending=descending, key_types=list(kts))
        np.testing.assert_array_equal(perm, reference(cols, kts, descending))
        assert perm.dtype == np.int64


@pytest.mark.parametrize("count", [3, 8])
def test_many_columns_in_place(path_client, count):
    """3 and 8 columns of mixed types and orders, reordered in place: each column is its
    input permuted by the reference order."""
    rng = np.random.default_rng(count)
    kinds = (KINDS * 2)[count:count + count]
    n = 20011  # not a multiple of 16: the region's columns start at rounded-up offsets
    cols, kts = map(list, zip(*(column(k, n, rng) for k in kinds)))
    descending = [bool(j % 2) for j in range(count)]
    want = reference(cols, kts, descending)
    copies = [c.copy() for c in cols]
    assert path_client.sort_by(copies, descending, inplace=True, key_types=kts) is None
    for c, a in zip(copies, cols):
        np.testing.assert_array_equal(c.view(np.uint8), a[want].view(np.uint8))


def test_lexsort_as_numpy(client, daemon, monkeypatch):
    """sortd.lexsort is np.lexsort: the last key primary, a 2-D array's rows as keys."""
    rng = np.random.default_rng(3)
    keys = [rng.integers(0, 4, 5000).astype(t) for t in (np.uint32, np.int8, np.float64)]
    np.testing.assert_array_equal(client.lexsort(keys), np.lexsort(keys))
    m = rng.integers(0, 3, (4, 3000), dtype=np.int64)
    np.testing.assert_array_equal(client.lexsort(m), np.lexsort(m))
    monkeypatch.setenv("SORTD_SOCKET", daemon.sock)
    np.testing.assert_array_equal(sortd.lexsort(keys), np.lexsort(keys))
    assert client.lexsort([np.zeros(0, np.uint8)]).shape == (0,)


def test_sort_by_on_the_module(daemon, monkeypatch):
    monkeypatch.setenv("SORTD_SOCKET", daemon.sock)
    a = np.array([2, 1, 2, 1], np.uint16)
    b = np.array([0.5, 3.0, -1.0, 3.0], np.float32)
    np.testing.assert_array_equal(sortd.sort_by([a, b], descending=[False, True]),
                                  [1, 3, 0, 2])
    sortd.sort_by([a, b], inplace=True)
    np.testing.assert_array_equal(a, [1, 1, 2, 2])
    np.testing.assert_array_equal(b, [3.0, 3.0, -1.0, 0.5])


@pytest.mark.parametrize("call, exc, hint", [
    (lambda c: c.sort_by([np.zeros(3, np.uint8), np.zeros(4, np.uint8)]), ValueError,
     "column 1 has 4 rows and column 0 has 3"),
    (lambda c: c.sort_by([np.zeros(3, np.uint8)] * 9), ValueError, "9 key columns"),
    (lambda c: c.sort_by([]), ValueError, "0 key columns"),
    (lambda c: c.sort_by([np.zeros(3, complex)]), TypeError, "column 0: sortd cannot sort"),
    (lambda c: c.sort_by([np.zeros(3, np.uint8)], key_types="f128"), ValueError,
     "'f128' is not a sortd key type"),
    (lambda c: c.sort_by([np.zeros(3, np.uint8)] * 2, bits=[None, (0, 9)]), ValueError,
     "column 1: bits (0, 9): need 0 <= begin_bit < end_bit <= the key's width"),
    (lambda c: c.sort_by([np.zeros((3, 3), np.uint64)], key_types="u128"), ValueError,
     "last axis must be 2"),
    (lambda c: c.sort_by([np.zeros((3, 2), np.uint64)]), ValueError, "1-D"),
    (lambda c: c.sort_by([np.zeros(3, np.uint8)], descending=[True, False]), ValueError,
     "descending has 2 entries for 1 columns"),
    (lambda c: c.sort_by([np.zeros(3, np.uint8)[::-1]]), ValueError, "contiguous"),
    (lambda c: c.sort_by([np.zeros(3, np.uint32)], key_types="u128"), TypeError,
     "key_type='u128' sorts 16-byte keys"),
    (lambda c: c.argsort(np.zeros(4, np.float32), key_type="bf16"), TypeError,
     "key_type='bf16' sorts 2-byte keys"),
])
def test_column_refusals(client, call, exc, hint):
    with pytest.raises(exc) as e:
        call(client)
    assert hint in str(e.value)
