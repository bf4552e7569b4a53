"""CUDA arrays: what is refused before any CUDA call (here, without a GPU), and the real
thing with CuPy and PyTorch against a GPU daemon (scripts/gpu-check, where both are
installed; skipped elsewhere)."""
import os
import sys

import numpy as np
import pytest

import sortd


class FakeCudaArray:
    """Something that speaks the CUDA Array Interface, with no memory behind it."""

    def __init__(self, shape=(16,), typestr="<u4", strides=None, readonly=False):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "strides": strides,
            "data": (0x7f0000000000, readonly), "version": 3, "stream": None}


@pytest.mark.parametrize("arr, exc, hint", [
    (FakeCudaArray(shape=(4, 4)), ValueError, "1-D"),
    (FakeCudaArray(strides=(8,)), ValueError, "contiguous"),
    (FakeCudaArray(readonly=True), ValueError, "read-only"),
    (FakeCudaArray(typestr="<f2"), TypeError, "float16"),
    (FakeCudaArray(typestr=">u4"), ValueError, "byte order"),
])
def test_refused_before_cuda(client, arr, exc, hint):
    with pytest.raises(exc) as e:
        client.sort(arr)
    assert hint in str(e.value)


def test_out_is_for_numpy(client):
    with pytest.raises(ValueError, match="out= is for numpy"):
        client.sort(FakeCudaArray(), out=np.zeros(16, np.uint32))


def test_libraries_not_imported(client):
    client.sort(np.arange(10, dtype=np.uint8))
    client.argsort(np.arange(10, dtype=np.uint8))
    assert "cupy" not in sys.modules and "torch" not in sys.modules


def _gpu_daemon_socket():
    sock = os.environ.get("SORTD_GPU_SOCKET")
    if not sock:
        pytest.skip("no GPU daemon (scripts/gpu-check sets SORTD_GPU_SOCKET on a GPU machine)")
    return sock


DTYPES = ["uint8", "int16", "uint32", "int32", "float32", "int64", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_cupy(dtype):
    sock = _gpu_daemon_socket()
    cupy = pytest.importorskip("cupy")
    rng = cupy.random.default_rng(1)
    a = (rng.integers(0, 1 << 30, 1 << 20) - (1 << 29)).astype(dtype)
    with sortd.Client(sock) as c:
        want = cupy.sort(a)  # no NaNs: cupy's order is totalOrder's
        b = a.copy()
        c.sort(b)
        assert bool((b == want).all())
        idx = c.argsort(a)
        assert bool((a[idx.astype(cupy.int64)] == want).all())
        d = a.copy()
        c.sort(d, descending=True)
        assert bool((d == want[::-1]).all())


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32", "float32", "int64", "float64"])
def test_torch(dtype):
    sock = _gpu_daemon_socket()
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    t = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randint(-100, 100, (1 << 20,), device="cuda", generator=g).to(t)
    with sortd.Client(sock) as c:
        want, want_idx = torch.sort(a, stable=True)
        b = a.clone()
        c.sort(b)
        assert torch.equal(b, want)
        idx = c.argsort(a, index_dtype=np.int64)
        assert torch.equal(idx, want_idx)
        vals = torch.arange(a.numel(), device="cuda", dtype=torch.int64)
        k = a.clone()
        c.sort(k, values=vals)
        assert torch.equal(vals, want_idx)


def test_argsort_refuses_before_allocating(client):
    with pytest.raises(TypeError, match="float16"):
        client.argsort(FakeCudaArray(typestr="<f2"))
    with pytest.raises(TypeError, match="CuPy or PyTorch"):
        client.argsort(FakeCudaArray())  # no library to make the index array with
