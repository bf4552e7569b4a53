"""Host arrays by DLPack, through a real daemon: numpy's own capsules (behind an object that
offers DLPack only) and a producer made by hand (bfloat16, strides, lanes, other dtypes and
devices). A sort in place lands in the producer's memory; every capsule taken is released by
its deleter once, refused or not."""
import numpy as np
import pytest

import sortd

from dlpack_producer import BFLOAT, COMPLEX, FLOAT, UINT, Producer, Wrapped


@pytest.fixture(params=["inline", "region"])
def path_client(request, client):
    if request.param == "region":
        client.inline_max_bytes = 0
    return client


def test_numpy_capsules(path_client):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(5000).astype(np.float16)
    want = np.sort(a, kind="stable")
    idx = path_client.argsort(Wrapped(a))
    np.testing.assert_array_equal(a[idx], want)
    vals, top = path_client.topk(Wrapped(a), 5)
    np.testing.assert_array_equal(vals, want[::-1][:5])
    w = Wrapped(a)
    assert path_client.sort(w, descending=True) is w
    np.testing.assert_array_equal(a, want[::-1])  # in the producer's memory


def test_numpy_capsules_of_rows_and_128_bit_pairs(client):
    m = np.random.default_rng(2).integers(0, 1 << 20, (30, 100)).astype(np.int32)
    want = np.sort(m, axis=-1)
    out = np.empty_like(m)
    assert client.sort(Wrapped(m), out=out) is out
    np.testing.assert_array_equal(out, want)
    sortd_sorted = client.sort(Wrapped(m))
    np.testing.assert_array_equal(m, want)
    assert isinstance(sortd_sorted, Wrapped)
    pairs = np.array([[5, 1], [7, 0], [0, 1 << 63], [1, 0]], np.uint64)
    np.testing.assert_array_equal(client.argsort(Wrapped(pairs), key_type="i128"),
                                  [2, 3, 1, 0])


def test_bfloat16_by_its_dtype_code(path_client):
    """kDLBfloat, 16 bits, sorts as bf16 with no key_type: as the same bits given as uint16
    with key_type="bf16"; the producer's deleter runs once per capsule."""
    bits = np.random.default_rng(3).permutation(np.arange(1 << 16, dtype=np.uint32)) \
        .astype(np.uint16)
    want = path_client.argsort(bits, key_type="bf16")
    p = Producer(bits, bits.ctypes.data, bits.shape, BFLOAT, 16)
    np.testing.assert_array_equal(path_client.argsort(p), want)
    expect = bits[want]
    assert path_client.sort(p) is p
    np.testing.assert_array_equal(bits, expect)
    assert p.deleted == 2


def test_a_capsule_itself_and_used_twice(client):
    a = np.array([3, 1, 2], np.uint32)
    capsule = a.__dlpack__()
    client.sort(capsule)
    np.testing.assert_array_equal(a, [1, 2, 3])
    with pytest.raises(ValueError, match="capsule was used already"):
        client.sort(capsule)

    class Same:  # hands out one capsule every time
        def __init__(self):
            self.c = np.zeros(3, np.uint8).__dlpack__()

        def __dlpack__(self, stream=None):
            return self.c

    s = Same()
    client.argsort(s)
    with pytest.raises(ValueError, match="used already"):
        client.argsort(s)


@pytest.mark.parametrize("make, exc, hint", [
    (lambda b: Producer(b, b.ctypes.data, (4,), UINT, 32, strides=(2,)), ValueError,
     "not C-contiguous (DLPack strides (2,) elements)"),
    (lambda b: Producer(b, b.ctypes.data, (2, 2), UINT, 32, strides=(1, 2)), ValueError,
     "not C-contiguous"),
    (lambda b: Producer(b, b.ctypes.data, (4,), FLOAT, 32, lanes=2), TypeError,
     "2 lanes"),
    (lambda b: Producer(b, b.ctypes.data, (4,), COMPLEX, 64), TypeError,
     "DLPack dtype complex64, which sortd does not sort"),
    (lambda b: Producer(b, b.ctypes.data, (4,), FLOAT, 8), TypeError, "float8"),
    (lambda b: Producer(b, b.ctypes.data, (4,), UINT, 32, device=7), ValueError,
     "DLPack device type 7"),
])
def test_refused_and_released(client, make, exc, hint):
    buf = np.arange(16, dtype=np.uint32)[::-1].copy()
    p = make(buf)
    for call in (lambda: client.sort(p), lambda: client.argsort(p), lambda: client.topk(p, 2)):
        with pytest.raises(exc) as e:
            call()
        assert hint in str(e.value)
    assert p.deleted == 3
    np.testing.assert_array_equal(buf, np.arange(16)[::-1])  # untouched


def test_strided_but_contiguous_is_taken(client):
    """Strides that are C order (an axis of one element may have any) are contiguous."""
    buf = np.array([4, 3, 2, 1], np.uint32)
    p = Producer(buf, buf.ctypes.data, (1, 4), UINT, 32, strides=(99, 1))
    client.sort(p)
    np.testing.assert_array_equal(buf, [1, 2, 3, 4])


def test_read_only_numpy_is_refused_by_its_producer(client):
    a = np.zeros(4, np.uint32)
    a.flags.writeable = False
    with pytest.raises(TypeError, match="cannot be passed to sortd by DLPack"):
        client.sort(Wrapped(a))


def test_columns_by_dlpack(client):
    a = np.array([2, 1, 2, 1], np.uint16)
    b = np.array([0.5, 3.0, -1.0, 3.0], np.float32)
    np.testing.assert_array_equal(client.sort_by([Wrapped(a), b], descending=[False, True]),
                                  [1, 3, 0, 2])
    client.sort_by([Wrapped(a), Wrapped(b)], inplace=True)
    np.testing.assert_array_equal(a, [1, 1, 2, 2])
    np.testing.assert_array_equal(b, [3.0, 3.0, -1.0, 0.5])
    bits = np.array([0x3f80, 0xbf80, 0x0000], np.uint16)  # bfloat16 1, -1, 0
    p = Producer(bits, bits.ctypes.data, (3,), BFLOAT, 16)
    np.testing.assert_array_equal(client.lexsort([p]), [1, 2, 0])
    assert p.deleted == 1


def test_cuda_and_host_columns_refused(client):
    from conftest import FakeCudaArray
    """Columns are all on the host or all CUDA arrays: a mix is refused, naming both."""
    with pytest.raises(TypeError, match="column 1 is a CUDA array and column 0 is a host "
                                        "array: the columns are all host arrays"):
        client.sort_by([np.zeros(16, np.uint32), FakeCudaArray()])
    with pytest.raises(TypeError, match="column 2 is a host array and column 0 is a CUDA array"):
        client.lexsort([np.zeros(16, np.uint32), FakeCudaArray(), FakeCudaArray()])


def test_random_descriptors(client):
    """DLPack descriptors drawn at random (type codes, bits, lanes, host and other devices,
    shapes, strides): each is sorted or refused, by the client (TypeError, ValueError) or the
    daemon (Unsupported: rows of 128-bit keys), never anything else, and its deleter runs once
    either way; the memory before the tensor is never written."""
    rng = np.random.default_rng(99)
    buf = np.zeros(64, np.uint64)
    sorted_ = 0
    for _ in range(300):
        buf[:] = rng.integers(0, 1 << 63, 64, dtype=np.uint64)
        ndim = int(rng.integers(1, 3))
        shape = tuple(int(d) for d in rng.integers(0, 4, ndim))
        strides = None if rng.integers(0, 4) else tuple(int(s) for s in rng.integers(0, 5, ndim))
        code = int(rng.choice([0, 1, 2, 0, 1, 2, 3, 4, 5, 6, 9]))
        bits = int(rng.choice([1, 8, 16, 32, 64, 128]))
        lanes = int(rng.choice([1, 1, 1, 2]))
        device = int(rng.choice([1, 1, 1, 3, 7, 13]))
        p = Producer(buf, buf[8:].ctypes.data, shape, code, bits, lanes, strides, device)
        guard = buf[:8].copy()
        try:
            client.argsort(p)
            sorted_ += 1
        except (TypeError, ValueError, sortd.Unsupported):
            pass
        assert p.deleted == 1
        np.testing.assert_array_equal(buf[:8], guard)
    assert sorted_ > 20  # the draw reaches the daemon, not only the refusals
