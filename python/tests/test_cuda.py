"""CUDA arrays: what is refused before any CUDA call (here, without a GPU), and the real
thing with CuPy and PyTorch against a GPU daemon (cuda_checks.py; scripts/gpu-check, where
either is installed; skipped elsewhere)."""
import os
import sys

import numpy as np
import pytest

import cuda_checks
from conftest import FakeCudaArray
import sortd


@pytest.mark.parametrize("arr, exc, hint", [
    (FakeCudaArray(shape=()), ValueError, "at least one dimension"),
    (FakeCudaArray(shape=(4, 4), strides=(4, 16)), ValueError, "contiguous"),
    (FakeCudaArray(strides=(8,)), ValueError, "contiguous"),
    (FakeCudaArray(readonly=True), ValueError, "read-only"),
    (FakeCudaArray(typestr="<c8"), TypeError, "complex64"),
    (FakeCudaArray(typestr="|V16"), TypeError, "key_type='u128'"),
    (FakeCudaArray(typestr=">u4"), ValueError, "byte order"),
])
def test_refused_before_cuda(client, arr, exc, hint):
    with pytest.raises(exc) as e:
        client.sort(arr)
    assert hint in str(e.value)


def test_other_axes_refused_before_cuda(client):
    """A CUDA array is sorted along its last axis too: another is refused, with the way to
    make it the last, before any CUDA call; a C-contiguous layout with an axis of one element
    (any stride there) is contiguous."""
    arr = FakeCudaArray(shape=(4, 4))
    for call in (lambda: client.sort(arr, axis=0), lambda: client.argsort(arr, axis=0),
                 lambda: client.topk(arr, 2, axis=0)):
        with pytest.raises(ValueError, match=r"np.moveaxis\(a, 0, -1\)"):
            call()
    with pytest.raises(ValueError, match="values has shape"):
        client.sort(FakeCudaArray(shape=(2, 8)), values=FakeCudaArray(shape=(16,)))
    client.sort(FakeCudaArray(shape=(1, 0)))  # nothing to sort: no CUDA call
    assert sortd._cuda.describe(FakeCudaArray(shape=(1, 4), strides=(99, 4)), "a").shape == \
        (1, 4)


def test_masked_arrays_refused(client):
    """A CUDA array with a mask (itself a CUDA array) would be sorted with its mask left
    behind: refused as keys of sort and argsort, and as values."""
    masked = FakeCudaArray(mask=FakeCudaArray(typestr="|b1"))
    for call in (lambda: client.sort(masked), lambda: client.argsort(masked),
                 lambda: client.sort(FakeCudaArray(), values=masked)):
        with pytest.raises(TypeError, match="has a mask"):
            call()
    unmasked = FakeCudaArray(shape=(0,))
    unmasked.__cuda_array_interface__["mask"] = None  # the interface's way to say no mask
    client.sort(unmasked)


def test_values_overlapping_the_keys_refused(client):
    """values over part of the keys' memory cannot be sorted in place: refused before any
    CUDA call."""
    keys = FakeCudaArray(ptr=0x7f0000000000)
    for ptr in (0x7f0000000000 + 4, 0x7f0000000000 - 4):
        with pytest.raises(ValueError, match="values overlaps a"):
            client.sort(keys, values=FakeCudaArray(ptr=ptr))
    with pytest.raises(ValueError, match="values overlaps a"):  # same start, 8-byte values
        client.sort(keys, values=FakeCudaArray(ptr=0x7f0000000000, typestr="<u8"))


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


def _run(check, dtype):
    """A check of cuda_checks.py under pytest: its Skip becomes pytest's."""
    sock = _gpu_daemon_socket()
    try:
        check(sock, dtype)
    except cuda_checks.Skip as e:
        pytest.skip(str(e))


@pytest.mark.parametrize("dtype", cuda_checks.CUPY_DTYPES)
def test_cupy(dtype):
    _run(cuda_checks.check_cupy, dtype)


@pytest.mark.parametrize("dtype", cuda_checks.TORCH_DTYPES)
def test_torch(dtype):
    _run(cuda_checks.check_torch, dtype)


@pytest.mark.parametrize("dtype", cuda_checks.CUPY_DTYPES)
def test_cupy_rows(dtype):
    _run(cuda_checks.check_cupy_rows, dtype)


@pytest.mark.parametrize("dtype", cuda_checks.TORCH_DTYPES)
def test_torch_rows(dtype):
    _run(cuda_checks.check_torch_rows, dtype)


def test_argsort_refuses_before_allocating(client):
    with pytest.raises(TypeError, match="complex64"):
        client.argsort(FakeCudaArray(typestr="<c8"))
    with pytest.raises(ValueError, match="last axis must be 2"):
        client.argsort(FakeCudaArray(shape=(4, 3), typestr="<u8"), key_type="u128")
    with pytest.raises(TypeError, match="CuPy or PyTorch"):
        client.argsort(FakeCudaArray())  # no library to make the index array with


def test_plain_runner(monkeypatch, capsys):
    """cuda_checks.py as a script (a GPU machine without pytest): a line a check, the totals,
    and exit 1 when one failed."""
    def ok(sock, dtype):
        assert sock == "S" and dtype == "d"

    def skip(sock, dtype):
        raise cuda_checks.Skip("no such library")

    def bad(sock, dtype):
        assert False, "wrong order"

    monkeypatch.setattr(cuda_checks, "CHECKS", [("ok", ok, "d"), ("skip", skip, "d"),
                                                ("bad", bad, "d")])
    assert cuda_checks.main(["cuda_checks.py", "S"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "PASS ok" and out[1] == "SKIP skip: no such library"
    assert out[2] == "FAIL bad:" and "wrong order" in "\n".join(out)
    assert out[-1] == "1 passed, 1 failed, 1 skipped"
    monkeypatch.setattr(cuda_checks, "CHECKS", [("ok", ok, "d")])
    assert cuda_checks.main(["cuda_checks.py", "S"]) == 0
    assert cuda_checks.main(["cuda_checks.py"]) == 2


def test_argsort_takes_read_only_arrays(client):
    """argsort sorts a copy, so a read-only array is fine: this one gets as far as making the
    index array, which needs CuPy or PyTorch."""
    with pytest.raises(TypeError, match="CuPy or PyTorch"):
        client.argsort(FakeCudaArray(readonly=True))


class FakeTorchTensor(FakeCudaArray):
    __module__ = "torch"
    device = "cuda:0"


def test_torch_int32_indices_only_up_to_2_31(monkeypatch):
    """PyTorch has int32 indices, not uint32: past 2^31 elements they would wrap negative."""
    import types
    from sortd import _cuda
    made = []
    torch = types.SimpleNamespace(int32="int32", int64="int64",
                                  empty=lambda n, dtype, device: made.append((n, dtype)))
    monkeypatch.setitem(sys.modules, "torch", torch)
    for n, index_dtype in [(2**31, np.uint32), (2**31 + 1, np.int64), (2**32, np.uint64)]:
        _cuda.empty_like_indices(_cuda.describe(FakeTorchTensor((n,)), "a"), index_dtype)
    assert made == [((2**31,), "int32"), ((2**31 + 1,), "int64"), ((2**32,), "int64")]
    with pytest.raises(ValueError, match="index_dtype=np.int64"):
        _cuda.empty_like_indices(_cuda.describe(FakeTorchTensor((2**31 + 1,)), "a"), np.uint32)
