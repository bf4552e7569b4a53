"""The Python client's CUDA path end to end, with no GPU: CUDA arrays (the CUDA Array Interface)
whose "device memory" is a memfd this process maps, described to the client by the stand-in
libcuda (tests/python/fake_cuda), registered as CUDA IPC regions with sortd-emulated-cuda (the
daemon on the emulated cuda engine, tests/support/fake_cuda), which opens them and sorts in
place. Every result is numpy's stable sort of the same keys (IEEE totalOrder for floats aside:
these keys have no NaN). meson's test_python_emulated_cuda runs it; elsewhere it is skipped."""
import contextlib
import ctypes
import mmap
import os
import sys
import types

import numpy as np
import pytest

import sortd

from conftest import Daemon, FakeCudaArray

pytestmark = pytest.mark.skipif(os.environ.get("SORTD_EMULATED_CUDA") != "1",
                                reason="needs sortd-emulated-cuda and the stand-in libcuda "
                                       "(meson test test_python_emulated_cuda)")

_SPENT_FDS = []
UUID = b"simt-fake-cuda01"  # the stand-in runtime's device (fake_cuda.cc)
ALLOC = 1 << 20


@pytest.fixture(scope="module")
def gpu_daemon(tmp_root):
    d = Daemon(tmp_root, "--engine", "cuda", "--capacity", "16K", "--cpu-path-keys", "0")
    yield d
    d.stop()


@pytest.fixture
def device(gpu_daemon):
    """A "device allocation": a memfd mapped here, that the daemon opens through its handle."""
    from test_cuda_driver import Fake
    fake = Fake()
    fd = os.memfd_create("device")
    os.ftruncate(fd, ALLOC)
    mm = mmap.mmap(fd, ALLOC)
    mem = np.frombuffer(mm, np.uint8)
    fake.alloc(mem)
    fake.lib.fake_cuda_share.argtypes = [ctypes.c_uint64, ctypes.c_int]
    fake.lib.fake_cuda_set_uuid.argtypes = [ctypes.c_int, ctypes.c_char_p]
    assert fake.lib.fake_cuda_share(mem.ctypes.data, fd) == 0
    assert fake.lib.fake_cuda_set_uuid(0, UUID) == 0
    yield mem
    fake.lib.fake_cuda_reset()
    # Kept open: the stand-in runtime names an allocation by (pid, fd), and the daemon keeps a
    # mapping it opened until the connection's unregister reaches it, after the test's client
    # has closed. A new memfd that took this fd's number could be taken for this one, and the
    # next test's keys sorted in this test's memory.
    _SPENT_FDS.append(fd)


def at(mem, offset, n, dtype):
    """The numpy view of n elements at offset, and the CUDA array over the same bytes."""
    dtype = np.dtype(dtype)
    view = mem[offset:offset + n * dtype.itemsize].view(dtype)
    return view, FakeCudaArray((n,), dtype.str, ptr=mem.ctypes.data + offset, stream=2)


@pytest.mark.parametrize("dtype", ["u1", "i2", "u4", "f4", "i8", "f8"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_in_device_memory(gpu_daemon, device, dtype, descending):
    rng = np.random.default_rng(7)
    n = 5001
    view, arr = at(device, 4096, n, dtype)
    view[:] = rng.integers(-100, 100, n).astype(dtype) if dtype[0] != "f" else \
        rng.standard_normal(n).astype(dtype)
    want = np.sort(view, kind="stable")
    if descending:
        want = want[::-1]
    with sortd.Client(gpu_daemon.sock, timeout=120) as c:
        assert c.status()["engine"] == "cuda"
        c.sort(arr, descending=descending)
    np.testing.assert_array_equal(view, want)


def test_values_move_with_their_keys(gpu_daemon, device):
    rng = np.random.default_rng(8)
    n = 3000
    keys, karr = at(device, 256, n, "u4")
    vals, varr = at(device, 65536, n, "u8")
    keys[:] = rng.integers(0, 50, n, dtype=np.uint32)
    vals[:] = np.arange(n, dtype=np.uint64) * 7
    order = np.argsort(keys, kind="stable")
    want_k, want_v = keys[order], vals[order]
    with sortd.Client(gpu_daemon.sock, timeout=120) as c:
        c.sort(karr, values=varr)
        # The allocation's region is registered once, and serves both spans.
        assert c.status()["regions"] == 1
    np.testing.assert_array_equal(keys, want_k)
    np.testing.assert_array_equal(vals, want_v)


def test_values_that_are_the_keys(gpu_daemon, device):
    """sort(a, values=a) moves the keys' own bytes with them, which is sorting the keys: so
    it does for a CUDA array as for a numpy array, where libsortd would refuse the region
    sort's overlapping spans."""
    n = 3000
    keys, karr = at(device, 512, n, "u4")
    keys[:] = np.random.default_rng(9).integers(0, 1 << 32, n, dtype=np.uint32)
    want = np.sort(keys, kind="stable")
    _, same = at(device, 512, n, "f4")  # the same bytes, described again as another type
    with sortd.Client(gpu_daemon.sock, timeout=120) as c:
        c.sort(karr, values=same)
    np.testing.assert_array_equal(keys, want)


class FakeCupyArray:
    """Enough of a CuPy array for the client to make the arrays it returns (argsort's indices,
    top-k's results) and copies: device memory of the test's allocation, as a numpy view."""

    __module__ = "cupy"  # what the client tells CuPy's arrays by

    def __init__(self, cupy, offset, shape, dtype):
        dtype = np.dtype(dtype)
        n = int(np.prod(shape))
        self.cupy, self.shape, self.dtype = cupy, tuple(shape), dtype
        self.view = cupy.mem[offset:offset + n * dtype.itemsize].view(dtype).reshape(shape)
        self.device = contextlib.nullcontext()
        self.__cuda_array_interface__ = {
            "shape": self.shape, "typestr": dtype.str, "strides": None, "version": 3,
            "data": (cupy.mem.ctypes.data + offset, False), "stream": 2}

    def copy(self):
        c = self.cupy.empty(self.shape, self.dtype)
        c.view[...] = self.view
        return c


class FakeCupy(types.ModuleType):
    """The module the client takes for CuPy's: empty() cuts arrays from the allocation, one
    after another, 256-byte aligned as CUDA's allocators align them."""

    def __init__(self, mem, start):
        super().__init__("cupy")
        self.mem, self.at = mem, start

    def empty(self, shape, dtype):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        offset = (self.at + 255) // 256 * 256
        self.at = offset + int(np.prod(shape)) * np.dtype(dtype).itemsize
        assert self.at <= self.mem.size, "the test's allocation is full"
        return FakeCupyArray(self, offset, shape, dtype)


@pytest.fixture
def cupy(device, monkeypatch):
    fake = FakeCupy(device, 256 << 10)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    return fake


def test_rows_argsort_and_topk_in_device_memory(gpu_daemon, cupy):
    """A 2-D CUDA array: its rows sorted where they lie, argsorted and top-k'd into new arrays
    of its library in the same device memory, the keys only read by both."""
    rng = np.random.default_rng(10)
    keys = cupy.empty((40, 300), np.float32)
    keys.view[...] = rng.standard_normal((40, 300)).astype(np.float32)
    a = keys.view.copy()
    with sortd.Client(gpu_daemon.sock, timeout=120) as c:
        idx = c.argsort(keys)
        assert isinstance(idx, FakeCupyArray) and idx.dtype == np.uint32
        np.testing.assert_array_equal(idx.view, np.argsort(a, axis=-1, kind="stable"))
        for largest in (True, False):
            vals, where = c.topk(keys, 7, largest)
            assert vals.shape == where.shape == (40, 7) and where.dtype == np.int64
            order = np.argsort(-a if largest else a, axis=-1, kind="stable")[:, :7]
            np.testing.assert_array_equal(where.view, order)
            np.testing.assert_array_equal(vals.view, np.take_along_axis(a, order, -1))
        np.testing.assert_array_equal(keys.view, a)
        c.sort(keys, descending=True)
    np.testing.assert_array_equal(keys.view, -np.sort(-a, axis=-1))


def _total_order(bits):
    """The stable ascending order of 16-bit float patterns in IEEE totalOrder."""
    sign = bits >> 15 == 1
    return np.argsort(np.where(sign, ~bits, bits | 0x8000).astype(np.uint16), kind="stable")


@pytest.mark.parametrize("code", ["f16", "bf16"])
def test_dlpack_cuda_tensor_sorted_in_place(gpu_daemon, device, code):
    """A CUDA tensor by DLPack (kDLCUDA over the stand-in's device memory), float16 or
    bfloat16 (dtype code kDLBfloat): sorted where it is, as a CUDA array is, and its capsule
    released."""
    from dlpack_producer import BFLOAT, FLOAT, KDL_CUDA, Producer
    n = 5000
    bits = np.random.default_rng(11).permutation(1 << 16)[:n].astype(np.uint16)
    view, _ = at(device, 8192, n, np.uint16)
    view[:] = bits
    p = Producer(view, view.ctypes.data, (n,), FLOAT if code == "f16" else BFLOAT, 16,
                 device=KDL_CUDA)
    with sortd.Client(gpu_daemon.sock, timeout=120) as c:
        assert c.sort(p) is p
    np.testing.assert_array_equal(view, bits[_total_order(bits)])
    assert p.deleted == 1


def _u128_order(words, kt):
    """numpy's stable ascending order of 128-bit keys as (n, 2) word pairs, the low word
    first: by the high word (signed for i128), ties by the low one."""
    hi = words[:, 1].view(np.int64) if kt == "i128" else words[:, 1]
    return np.lexsort((words[:, 0], hi))


@pytest.mark.parametrize("kt", ["u128", "i128"])
def test_128_bit_word_pairs_in_device_memory(gpu_daemon, cupy, kt):
    """128-bit keys as (n, 2) uint64 word pairs of a CUDA array reach the daemon as n keys of
    16 bytes, sorted on the device: argsorted into a new array of its library, then sorted in
    place, against numpy's order of the words. Few words of each, so that the low ones decide
    too and many keys tie (the argsort is stable); the signed high words of i128 have
    negatives among them."""
    rng = np.random.default_rng(12)
    n = 4000
    keys = cupy.empty((n, 2), np.uint64)
    keys.view[:, 0] = rng.choice(np.array([0, 1, 1 << 63, (1 << 64) - 1], np.uint64), n)
    keys.view[:, 1] = (rng.integers(-3, 3, n, dtype=np.int64)).view(np.uint64)
    a = keys.view.copy()
    order = _u128_order(a, kt)
    with sortd.Client(gpu_daemon.sock, timeout=120) as c:
        idx = c.argsort(keys, key_type=kt)
        assert isinstance(idx, FakeCupyArray) and idx.shape == (n,)
        np.testing.assert_array_equal(idx.view, order)
        np.testing.assert_array_equal(keys.view, a)
        c.sort(keys, key_type=kt, descending=True)
    # equal keys are equal words: the descending keys are the ascending order's reversed
    np.testing.assert_array_equal(keys.view, a[order[::-1]])


def _columns(cupy, rng, n):
    """Three CUDA columns of few values each (so that ties go on to the next column): uint32,
    float64 and 128-bit word pairs; and numpy copies of them."""
    c0, c1, c2 = (cupy.empty((n,), np.uint32), cupy.empty((n,), np.float64),
                  cupy.empty((n, 2), np.uint64))
    c0.view[...] = rng.integers(0, 4, n, dtype=np.uint32)
    c1.view[...] = rng.integers(-2, 2, n) * 0.5
    c2.view[...] = rng.integers(0, 3, (n, 2), dtype=np.uint64)
    return (c0, c1, c2), tuple(c.view.copy() for c in (c0, c1, c2))


def test_sort_by_in_device_memory(gpu_daemon, cupy):
    """Key columns of CUDA arrays (uint32, float64 descending, u128 word pairs): argsorted on
    the device into a new int64 array of their library, the columns only read; then reordered
    in place, each column in its own memory; both against np.lexsort."""
    n = 4000
    cols, want = _columns(cupy, np.random.default_rng(14), n)
    order = np.lexsort((want[2][:, 0], want[2][:, 1], -want[1], want[0]))
    with sortd.Client(gpu_daemon.sock, timeout=120) as c:
        idx = c.sort_by(cols, descending=[False, True, False], key_types=[None, None, "u128"])
        assert isinstance(idx, FakeCupyArray) and idx.dtype == np.int64 and idx.shape == (n,)
        np.testing.assert_array_equal(idx.view, order)
        for col, w in zip(cols, want):
            np.testing.assert_array_equal(col.view, w)
        assert c.sort_by(cols, descending=[False, True, False], inplace=True,
                         key_types=[None, None, "u128"]) is None
    for col, w in zip(cols, want):
        np.testing.assert_array_equal(col.view, w[order])


def test_lexsort_in_device_memory(gpu_daemon, cupy):
    """lexsort of CUDA arrays, the last key first (np.lexsort's order): an int16 key, a CUDA
    DLPack tensor of bfloat16 bits, and a uint8 key."""
    from dlpack_producer import BFLOAT, KDL_CUDA, Producer
    rng = np.random.default_rng(15)
    n = 3000
    a, b, k = (cupy.empty((n,), np.int16), cupy.empty((n,), np.uint16),
               cupy.empty((n,), np.uint8))
    a.view[...] = rng.integers(-3, 3, n, dtype=np.int16)
    b.view[...] = rng.choice(np.array([0x3f80, 0xbf80, 0x0000, 0x4000], np.uint16), n)
    k.view[...] = rng.integers(0, 3, n, dtype=np.uint8)
    bf16 = Producer(b, b.__cuda_array_interface__["data"][0], (n,), BFLOAT, 16,
                    device=KDL_CUDA)
    # bfloat16 1, -1, 0, 2 in order: -1 < 0 < 1 < 2
    rank = {0x3f80: 2, 0xbf80: 0, 0x0000: 1, 0x4000: 3}
    want = np.lexsort((a.view, np.vectorize(rank.get)(b.view), k.view))
    with sortd.Client(gpu_daemon.sock, timeout=120) as c:
        idx = c.lexsort([a, bf16, k])
    np.testing.assert_array_equal(idx.view, want)
    assert bf16.deleted == 1


def test_columns_refused_before_the_daemon(gpu_daemon, cupy, device):
    """CUDA columns mixed with a host one, on two devices, or of unequal lengths: refused by
    the client, saying why, with no request sent."""
    other = np.zeros(4096, np.uint8)
    lib = ctypes.CDLL("libcuda.so.1")  # the stand-in: Fake() would forget the device's memory
    lib.fake_cuda_alloc.argtypes = [ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    # a second device's memory, not shared with the daemon
    assert lib.fake_cuda_alloc(other.ctypes.data, other.nbytes, 1, 1) == 0
    a = cupy.empty((100,), np.uint32)
    with sortd.Client(gpu_daemon.sock, timeout=120) as c:
        before = c.status()["requests_total"]
        with pytest.raises(TypeError, match="column 1 is a host array and column 0 is a CUDA "
                                            "array"):
            c.sort_by([a, np.zeros(100, np.uint32)])
        with pytest.raises(ValueError, match="column 1 is on CUDA device 1 and column 0 on "
                                             "device 0"):
            c.sort_by([a, FakeCudaArray((100,), "<u4", ptr=other.ctypes.data, stream=2)])
        with pytest.raises(ValueError, match="column 1 has 50 rows and column 0 has 100"):
            c.sort_by([a, cupy.empty((50,), np.uint32)])
        assert c.status()["requests_total"] == before + 1  # the status call alone


class BF16Only:
    """A bfloat16 CUDA array as PyTorch has them: its CUDA Array Interface refuses the dtype,
    and DLPack (kDLBfloat) carries it. Made by BF16Cupy for uint16, over a FakeCupyArray."""

    __module__ = "cupy"

    def __init__(self, arr):
        from dlpack_producer import BFLOAT, KDL_CUDA, Producer
        self.arr, self.cupy, self.shape, self.dtype = arr, arr.cupy, arr.shape, arr.dtype
        self.view, self.device = arr.view, arr.device
        ptr = arr.__cuda_array_interface__["data"][0]
        self.producer = Producer(self, ptr, self.shape, BFLOAT, 16, device=KDL_CUDA)

    @property
    def __cuda_array_interface__(self):
        raise TypeError("bfloat16 is not supported by the CUDA Array Interface")

    def __dlpack__(self, stream=None):
        return self.producer.capsule()

    def __dlpack_device__(self):
        return self.producer.__dlpack_device__()

    def copy(self):
        c = self.cupy.empty(self.shape, self.dtype)
        c.view[...] = self.view
        return c


class BF16Cupy(FakeCupy):
    def empty(self, shape, dtype):
        arr = super().empty(shape, dtype)
        return BF16Only(arr) if np.dtype(dtype) == np.uint16 else arr


def test_bfloat16_by_dlpack_only(gpu_daemon, device, monkeypatch):
    """A CUDA array whose CUDA Array Interface fails (PyTorch's bfloat16) goes by DLPack:
    argsorted through a copy and top-k'd into new arrays of its library, which go by DLPack
    too, and sorted in place; every capsule released."""
    cupy = BF16Cupy(device, 256 << 10)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    n = 3000
    bits = np.random.default_rng(13).permutation(1 << 16)[:n].astype(np.uint16)
    keys = cupy.empty((n,), np.uint16)
    keys.view[...] = bits
    want = _total_order(bits)
    with sortd.Client(gpu_daemon.sock, timeout=120) as c:
        idx = c.argsort(keys)
        np.testing.assert_array_equal(idx.view, want)
        vals, where = c.topk(keys, 6, largest=False)
        assert isinstance(vals, BF16Only)
        np.testing.assert_array_equal(where.view, want[:6])
        np.testing.assert_array_equal(vals.view, bits[want[:6]])
        c.sort(keys)
    np.testing.assert_array_equal(keys.view, bits[want])
    assert keys.producer.deleted == 3 and vals.producer.deleted == 1
