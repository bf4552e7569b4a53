"""The Python client's CUDA path end to end, with no GPU: CUDA arrays (the CUDA Array Interface)
whose "device memory" is a memfd this process maps, described to the client by the stand-in
libcuda (tests/python/fake_cuda), registered as CUDA IPC regions with sortd-emulated-cuda (the
daemon on the emulated cuda engine, tests/support/fake_cuda), which opens them and sorts in
place. Every result is numpy's stable sort of the same keys (IEEE totalOrder for floats aside:
these keys have no NaN). meson's test_python_emulated_cuda runs it; elsewhere it is skipped."""
import ctypes
import mmap
import os

import numpy as np
import pytest

import sortd

from conftest import Daemon, FakeCudaArray

pytestmark = pytest.mark.skipif(os.environ.get("SORTD_EMULATED_CUDA") != "1",
                                reason="needs sortd-emulated-cuda and the stand-in libcuda "
                                       "(meson test test_python_emulated_cuda)")

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
    os.close(fd)  # the mapping goes with the last view of it


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
