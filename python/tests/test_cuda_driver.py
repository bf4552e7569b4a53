"""The client's CUDA driver calls (sortd/_cuda.py) with no GPU: against a stand-in
libcuda.so.1 (tests/python/fake_cuda) that takes host memory for device allocations, and a CPU
daemon, which refuses CUDA regions. What runs: which driver calls, with what; every context
pushed is popped, errors included; driver errors name the CUDA error; and a CUDA array sent to
a CPU daemon gets its refusal as a Python exception. meson's test_python_fake_cuda runs it
(SORTD_FAKE_CUDA=1); anywhere else libcuda.so.1 may be the real driver, so it is skipped."""
import ctypes
import importlib
import os
import struct

import numpy as np
import pytest

import sortd
from sortd import _cuda

from conftest import NO_STREAM, FakeCudaArray

pytestmark = pytest.mark.skipif(os.environ.get("SORTD_FAKE_CUDA") != "1",
                                reason="needs the stand-in libcuda (meson test "
                                       "test_python_fake_cuda)")


class Stats(ctypes.Structure):
    _fields_ = [("depth", ctypes.c_int), ("ctx_syncs", ctypes.c_int),
                ("stream_syncs", ctypes.c_int), ("last_stream", ctypes.c_uint64),
                ("handles", ctypes.c_int), ("copies", ctypes.c_int)]


class Fake:
    """The stand-in driver's own calls."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        assert hasattr(self.lib, "fake_cuda_alloc"), "libcuda.so.1 is not the stand-in"
        self.lib.fake_cuda_alloc.argtypes = [ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int,
                                             ctypes.c_int]
        self.lib.fake_cuda_reset()

    def alloc(self, mem, ordinal=0, shareable=True):
        assert self.lib.fake_cuda_alloc(mem.ctypes.data, mem.nbytes, ordinal, shareable) == 0

    def stats(self):
        s = Stats()
        self.lib.fake_cuda_stats(ctypes.byref(s))
        return s


@pytest.fixture
def fake():
    f = Fake()
    yield f
    f.lib.fake_cuda_reset()


def device_array(mem, offset, n, typestr="<u4", stream=None):
    """A CUDA array at offset bytes into mem, as CuPy or PyTorch would describe one."""
    return FakeCudaArray((n,), typestr, ptr=mem.ctypes.data + offset, stream=stream)


def test_allocation_is_the_whole_allocation(fake):
    mem = np.zeros(1 << 16, np.uint8)
    fake.alloc(mem, ordinal=2)
    arr = _cuda.describe(device_array(mem, 4096, 100), "a")
    base, size, handle, uuid = _cuda.driver().allocation(arr.ptr)
    assert (base, size) == (mem.ctypes.data, mem.nbytes)
    assert len(handle) == 64 and struct.unpack_from("<QQ", handle) == (base, size)
    assert uuid == bytes([0xd2]) * 16  # the stand-in's device 2
    s = fake.stats()
    assert (s.depth, s.handles) == (0, 1)


@pytest.mark.parametrize("stream, ctx_syncs, stream_syncs", [
    (None, 0, 0),  # v3, no stream: the producer says nothing is pending
    (2, 0, 1),  # v3, the per-thread default stream
    (0x7f12345600, 0, 1),  # v3, a stream of its own
    (NO_STREAM, 1, 0),  # v2: nothing said about streams, so the whole context is waited on
])
def test_synchronize_waits_as_the_interface_says(fake, stream, ctx_syncs, stream_syncs):
    mem = np.zeros(4096, np.uint8)
    fake.alloc(mem)
    _cuda.driver().synchronize(_cuda.describe(device_array(mem, 0, 16, stream=stream), "a"))
    s = fake.stats()
    assert (s.ctx_syncs, s.stream_syncs, s.depth) == (ctx_syncs, stream_syncs, 0)
    if stream_syncs:
        assert s.last_stream == stream


def test_driver_errors_are_named(fake):
    mem = np.zeros(4096, np.uint8)
    fake.alloc(mem, shareable=False)
    unknown = np.zeros(16, np.uint32)
    with pytest.raises(RuntimeError, match=r"CUDA cuPointerGetAttribute failed: "
                                           r"CUDA_ERROR_INVALID_VALUE \(1\)"):
        _cuda.driver().allocation(unknown.ctypes.data)
    with pytest.raises(RuntimeError, match=r"cudaMallocAsync pools .* cannot be shared\) failed: "
                                           r"CUDA_ERROR_NOT_SUPPORTED \(801\)"):
        _cuda.driver().allocation(mem.ctypes.data + 64)
    assert fake.stats().depth == 0  # popped on the way out of each error


def test_copies_on_the_device(fake):
    """The copies sort_by makes of CUDA columns: device to device, empty ones skipped, then
    waited for; a copy the driver refuses names its error, and every context is popped."""
    mem, other = np.zeros(4096, np.uint8), np.zeros(64, np.uint8)
    fake.alloc(mem)
    fake.alloc(other, ordinal=1)
    mem[:16] = np.arange(16)
    base = mem.ctypes.data
    _cuda.driver().copy([(base + 1024, base, 16), (base + 2048, base + 4, 0)])
    np.testing.assert_array_equal(mem[1024:1040], np.arange(16))
    s = fake.stats()
    assert (s.copies, s.ctx_syncs, s.depth) == (1, 1, 0)
    assert (_cuda.driver().ordinal(base), _cuda.driver().ordinal(other.ctypes.data)) == (0, 1)
    with pytest.raises(RuntimeError, match=r"CUDA cuMemcpyDtoD failed: "
                                           r"CUDA_ERROR_INVALID_VALUE \(1\)"):
        _cuda.driver().copy([(base, other.ctypes.data, 8)])
    assert fake.stats().depth == 0


def test_columns_on_two_devices_refused(client, fake):
    """CUDA key columns are sorted on one device: columns on two are refused before any
    request, naming both."""
    a, b = np.zeros(4096, np.uint8), np.zeros(4096, np.uint8)
    fake.alloc(a)
    fake.alloc(b, ordinal=2)
    before = client.status()["requests_total"]
    with pytest.raises(ValueError, match="column 1 is on CUDA device 2 and column 0 on device "
                                         "0: the columns are sorted on one device"):
        client.sort_by([device_array(a, 0, 100), device_array(b, 0, 100)])
    assert client.status()["requests_total"] == before + 1  # only the status call itself
    assert fake.stats().depth == 0


def test_cpu_daemon_refuses_cuda_arrays(client, fake):
    mem = np.zeros(1 << 16, np.uint8)
    fake.alloc(mem)
    keys = device_array(mem, 1024, 1000, stream=2)
    with pytest.raises(sortd.Unsupported, match="CUDA IPC regions need a GPU engine"):
        client.sort(keys)
    vals = device_array(mem, 8192, 1000, typestr="<u8", stream=2)
    with pytest.raises(sortd.Unsupported, match="CUDA IPC regions need a GPU engine"):
        client.sort(keys, values=vals)
    s = fake.stats()
    assert (s.stream_syncs, s.depth) == (3, 0)  # keys, then keys and values, each waited on
    client.ping()  # a refusal leaves the connection serving


def test_unshareable_memory_is_refused_before_the_daemon(client, fake):
    mem = np.zeros(4096, np.uint8)
    fake.alloc(mem, shareable=False)
    before = client.status()["requests_total"]
    with pytest.raises(RuntimeError, match="cannot be shared"):
        client.sort(device_array(mem, 0, 100))
    assert client.status()["requests_total"] == before + 1  # only the status call itself
    assert fake.stats().depth == 0


class GpuDaemonRegions:
    """libsortd as a client of a GPU daemon sees it, for the CUDA region calls only: each
    registration gets a region (up to the connection's limit, then E_BUSY), and sorts in them
    are recorded, not sent. Every other call goes to the real library."""

    def __init__(self, lib, limit):
        self._lib, self.limit = lib, limit
        self.live = {}  # region handle -> IPC handle bytes
        self.registrations = 0
        self.sorts = []  # (keys region's IPC handle, keys offset, values region's, offset)
        self._next = 0x5000

    def __getattr__(self, name):
        return getattr(self._lib, name)

    def sortd_region_register_cuda(self, conn, handle, offset, size, uuid, out):
        assert (offset, len(handle), len(uuid)) == (0, 64, 16)
        if len(self.live) >= self.limit:
            return sortd._lib.E_BUSY
        self._next += 1
        self.live[self._next] = bytes(handle)
        self.registrations += 1
        out._obj.value = self._next
        return sortd._lib.OK

    def sortd_region_destroy(self, conn, region):
        if region in self.live:
            del self.live[region]
            return sortd._lib.OK
        return self._lib.sortd_region_destroy(conn, region)

    def sortd_sort_in_region(self, conn, rs):
        rs = rs._obj
        vals = self.live[rs.vals] if rs.vals else None
        self.sorts.append((self.live[rs.keys], rs.keys_offset, vals, rs.vals_offset))
        return sortd._lib.OK


@pytest.fixture
def gpu_client(daemon):
    """A client whose CUDA region calls meet GpuDaemonRegions (limit 5)."""
    c = sortd.Client(daemon.sock, timeout=60)
    c._lib = GpuDaemonRegions(c._lib, 5)
    yield c
    c.close()  # while the stand-in still answers for its regions


def allocations(fake, count, size=4096):
    mems = [np.zeros(size, np.uint8) for _ in range(count)]
    for m in mems:
        fake.alloc(m)
    return mems


def test_allocation_registered_once(fake, gpu_client):
    regions = gpu_client._lib
    mem, = allocations(fake, 1)
    for offset in (0, 1024, 2048):
        gpu_client.sort(device_array(mem, offset, 100))
    assert regions.registrations == 1
    assert [s[1] for s in regions.sorts] == [0, 1024, 2048]
    assert all(s[0][:8] == struct.pack("<Q", mem.ctypes.data) for s in regions.sorts)


def test_cache_keeps_the_most_recent(fake, gpu_client, monkeypatch):
    monkeypatch.setattr(importlib.import_module("sortd._client"), "CUDA_KEEP", 3)
    regions = gpu_client._lib
    mems = allocations(fake, 4)
    for m in mems:
        gpu_client.sort(device_array(m, 0, 10))
    assert (regions.registrations, len(regions.live)) == (4, 3)  # the first went
    gpu_client.sort(device_array(mems[3], 0, 10))  # cached
    gpu_client.sort(device_array(mems[1], 0, 10))  # cached, now the most recent
    assert regions.registrations == 4
    gpu_client.sort(device_array(mems[0], 0, 10))  # again: mems[2] is the least recent now
    assert (regions.registrations, len(regions.live)) == (5, 3)
    gpu_client.sort(device_array(mems[1], 0, 10))
    gpu_client.sort(device_array(mems[3], 0, 10))
    assert regions.registrations == 5


def test_region_limit_gives_way(fake, gpu_client):
    """More allocations than the connection may register (5 here, max-regions on a daemon):
    the cached ones give way, but never one the same call uses."""
    regions = gpu_client._lib
    mems = allocations(fake, 7)
    for i, m in enumerate(mems[:-1]):
        gpu_client.sort(device_array(m, 0, 10), values=device_array(mems[i + 1], 0, 10, "<u8"))
        assert regions.sorts[-1][0] != regions.sorts[-1][2]
        assert len(regions.live) <= 5
    assert len(regions.sorts) == 6


def test_reallocated_address_registers_anew(fake, gpu_client):
    regions = gpu_client._lib
    mem = np.zeros(8192, np.uint8)
    fake.alloc(mem[:4096])
    gpu_client.sort(device_array(mem, 0, 10))
    fake.lib.fake_cuda_reset()  # freed; a larger allocation at the same address
    fake.alloc(mem)
    gpu_client.sort(device_array(mem, 0, 10))
    assert regions.registrations == 2 and len(regions.live) == 1
    assert regions.sorts[0][0] != regions.sorts[1][0]
