"""CUDA arrays (CuPy arrays, PyTorch CUDA tensors, anything with __cuda_array_interface__):
what they are, and the CUDA driver calls that turn one into a region sortd can open.

Nothing here imports CuPy or PyTorch: an array describes itself through the CUDA Array
Interface, and the driver (libcuda, which such an array's library has loaded already) gives
the allocation's base, its IPC handle and the device's UUID. The CUDA IPC handle names a whole
cudaMalloc allocation, of which the caching allocators of CuPy and PyTorch hand out pieces, so
a region is the whole allocation and an array is an offset in it."""
import ctypes
import sys
from dataclasses import dataclass

from . import _arrays

_CU_POINTER_ATTRIBUTE_CONTEXT = 1
_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
# CUDA Array Interface v3 stream values with fixed meanings
_CAI_LEGACY_STREAM, _CAI_PER_THREAD_STREAM = 1, 2


@dataclass
class CudaArray:
    obj: object
    ptr: int
    n: int
    typestr: str
    stream: object  # None: the producer promises no pending work; else a CUstream value
    has_stream: bool  # whether the interface said anything about a stream (v3)
    shape: tuple = ()  # n elements in all, sorted along the last axis
    pairs: bool = False  # 128-bit keys as pairs of 8-byte words: shape and n count keys

    @property
    def module(self):
        return type(self.obj).__module__.split(".")[0]


# Why a CUDA array given to sort() is written, and what to pass instead of a read-only one.
_WRITTEN = {
    "a": "sortd sorts CUDA arrays in place: sort a copy, or argsort it",
    "values": "its elements move with their keys, in place: pass a copy",
}


def describe(a, what, writable=True):
    """A CudaArray for a, None when a is not a CUDA array, or an error saying what to do;
    writable: whether a is sorted in place, which a read-only array cannot be. A CudaArray
    (a DLPack tensor's) is itself."""
    if isinstance(a, CudaArray):
        return a
    try:
        cai = a.__cuda_array_interface__
    except AttributeError:
        return None
    except Exception as e:  # PyTorch: a tensor that requires grad, or a dtype it cannot export
        raise TypeError(f"{what} cannot be passed to sortd: {e}") from e
    if cai.get("mask") is not None:
        # Sorted where it is, its data would move and its mask stay where it was.
        raise TypeError(f"{what} has a mask (CUDA Array Interface), which sortd would not "
                        f"move with its data: sort the unmasked elements, or argsort a "
                        f"filled copy and index data and mask with the result")
    shape = tuple(int(d) for d in cai["shape"])
    if not shape:
        raise ValueError(f"sortd sorts arrays of at least one dimension; {what} is a scalar "
                         f"(shape ()): pass {what}.reshape(1)")
    typestr = cai["typestr"]
    strides = cai.get("strides")
    if strides is not None and not c_contiguous(shape, tuple(strides), int(typestr[2:])):
        raise ValueError(f"{what} is not contiguous (strides {tuple(strides)}): pass "
                         f"cupy.ascontiguousarray({what}) for CuPy or {what}.contiguous() for "
                         f"PyTorch")
    ptr, readonly = cai["data"]
    if readonly and writable:
        raise ValueError(f"{what} is read-only, and "
                         f"{_WRITTEN.get(what, 'sortd sorts CUDA arrays in place')}")
    n = 1
    for d in shape:
        n *= d
    return CudaArray(a, int(ptr or 0), n, typestr, cai.get("stream"), "stream" in cai, shape)


def as_keys(arr, key_type):
    """arr, or for 128-bit keys (key_type "u128" or "i128") given as pairs of 8-byte words
    (its last axis, of 2) the same memory as n // 2 keys of 16 bytes."""
    import numpy as np
    if arr.pairs or not _arrays.wide_pairs(arr.shape, np.dtype(arr.typestr), key_type):
        return arr
    return CudaArray(arr.obj, arr.ptr, arr.n // 2, "|V16", arr.stream, arr.has_stream,
                     arr.shape[:-1], True)


def c_contiguous(shape, strides, itemsize):
    """Whether strides lay shape out in C order; an axis of one element may have any."""
    step = itemsize
    for d, s in zip(reversed(shape), reversed(strides)):
        if d == 0:
            return True
        if d > 1 and s != step:
            return False
        step *= d
    return True


class _Driver:
    """The few libcuda calls sortd's client needs, each checked."""

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise RuntimeError(f"a CUDA array was passed but the CUDA driver cannot be "
                               f"loaded ({e})") from e
        cu = self.lib
        vp, u64 = ctypes.c_void_p, ctypes.c_uint64
        cu.cuPointerGetAttribute.argtypes = [vp, ctypes.c_int, u64]
        cu.cuMemGetAddressRange_v2.argtypes = [ctypes.POINTER(u64), ctypes.POINTER(ctypes.c_size_t),
                                               u64]
        cu.cuIpcGetMemHandle.argtypes = [ctypes.c_char_p, u64]
        cu.cuDeviceGet.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        self.get_uuid = getattr(cu, "cuDeviceGetUuid_v2", None) or cu.cuDeviceGetUuid
        self.get_uuid.argtypes = [ctypes.c_char_p, ctypes.c_int]
        cu.cuCtxPushCurrent_v2.argtypes = [vp]
        cu.cuCtxPopCurrent_v2.argtypes = [ctypes.POINTER(vp)]
        cu.cuStreamSynchronize.argtypes = [vp]
        cu.cuMemcpyDtoD_v2.argtypes = [u64, u64, ctypes.c_size_t]

    def check(self, what, rc):
        if rc != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(rc, ctypes.byref(name))
            raise RuntimeError(f"CUDA {what} failed: {(name.value or b'?').decode()} ({rc})")

    def synchronize(self, arr):
        """Waits for the work the array's producer has queued (its stream, else everything)."""
        if arr.has_stream and arr.stream is None:
            return
        ctx = self._push(arr.ptr)
        try:
            if arr.has_stream:
                self.check("cuStreamSynchronize", self.lib.cuStreamSynchronize(arr.stream))
            else:
                self.check("cuCtxSynchronize", self.lib.cuCtxSynchronize())
        finally:
            self._pop(ctx)

    def allocation(self, ptr):
        """(base, size, 64-byte IPC handle, 16-byte device UUID) of the allocation holding ptr."""
        ctx = self._push(ptr)
        try:
            base, size = ctypes.c_uint64(), ctypes.c_size_t()
            self.check("cuMemGetAddressRange",
                       self.lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size),
                                                        ptr))
            handle = ctypes.create_string_buffer(64)
            rc = self.lib.cuIpcGetMemHandle(handle, base.value)
            if rc != 0:
                self.check("cuIpcGetMemHandle (memory from cudaMallocAsync pools or "
                           "PyTorch's expandable segments cannot be shared)", rc)
            ordinal, dev = ctypes.c_int(), ctypes.c_int()
            self.check("cuPointerGetAttribute",
                       self.lib.cuPointerGetAttribute(ctypes.byref(ordinal),
                                                      _CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr))
            self.check("cuDeviceGet", self.lib.cuDeviceGet(ctypes.byref(dev), ordinal.value))
            uuid = ctypes.create_string_buffer(16)
            self.check("cuDeviceGetUuid", self.get_uuid(uuid, dev.value))
            return base.value, size.value, handle.raw, uuid.raw
        finally:
            self._pop(ctx)

    def ordinal(self, ptr):
        """The ordinal of the device whose memory ptr is in."""
        ordinal = ctypes.c_int()
        self.check("cuPointerGetAttribute",
                   self.lib.cuPointerGetAttribute(ctypes.byref(ordinal),
                                                  _CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr))
        return ordinal.value

    def copy(self, pieces):
        """Copies each (dst, src, nbytes) of pieces, device memory on one device, and waits for
        them: a copy between device pointers runs on its own, unordered with the host."""
        ctx = self._push(pieces[0][0])
        try:
            for dst, src, nbytes in pieces:
                if nbytes:
                    self.check("cuMemcpyDtoD", self.lib.cuMemcpyDtoD_v2(dst, src, nbytes))
            self.check("cuCtxSynchronize", self.lib.cuCtxSynchronize())
        finally:
            self._pop(ctx)

    def _push(self, ptr):
        ctx = ctypes.c_void_p()
        self.check("cuPointerGetAttribute",
                   self.lib.cuPointerGetAttribute(ctypes.byref(ctx), _CU_POINTER_ATTRIBUTE_CONTEXT,
                                                  ptr))
        self.check("cuCtxPushCurrent", self.lib.cuCtxPushCurrent_v2(ctx))
        return ctx

    def _pop(self, ctx):
        popped = ctypes.c_void_p()
        self.lib.cuCtxPopCurrent_v2(ctypes.byref(popped))


_driver = None


def driver():
    global _driver
    if _driver is None:
        _driver = _Driver()
    return _driver


def copy_of(arr):
    """A new array of the same library holding a copy of arr (queued on its current stream)."""
    if arr.module == "torch":
        return arr.obj.clone()
    return arr.obj.copy()


def empty_like_indices(arr, index_dtype, shape=None):
    """An index array of arr's library and device, of shape (default: arr's) and index_dtype's
    width."""
    import numpy as np
    shape = arr.shape if shape is None else shape
    wide = np.dtype(index_dtype).itemsize == 8
    if arr.module == "torch":
        # torch has no general-purpose uint32/uint64: indices come as int32 or int64, and the
        # daemon's uint32 indices past 2^31 - 1 would read as negative int32s
        if not wide and arr.n > 2**31:
            raise ValueError(f"argsort of a PyTorch tensor of {arr.n} elements (more than "
                             f"2^31) needs index_dtype=np.int64 (or np.uint64): PyTorch "
                             f"has int32 indices, not uint32")
        torch = sys.modules["torch"]
        return torch.empty(shape, dtype=torch.int64 if wide else torch.int32,
                           device=arr.obj.device)
    return empty_like(arr, shape, np.dtype(index_dtype))


def empty_like(arr, shape, dtype=None):
    """A new array of arr's library and device, of shape and dtype (default: arr's; for
    128-bit keys as word pairs, word pairs of them)."""
    import numpy as np
    if arr.pairs and dtype is None:
        shape = tuple(shape) + (2,)  # of the words' dtype, arr.obj's
    if arr.module == "torch":
        torch = sys.modules["torch"]
        return torch.empty(shape, dtype=arr.obj.dtype if dtype is None else _torch_dtype(dtype),
                           device=arr.obj.device)
    if arr.module == "cupy":
        cupy = sys.modules["cupy"]
        with arr.obj.device:
            like = arr.obj.dtype if arr.pairs else arr.typestr
            return cupy.empty(shape, dtype=np.dtype(like if dtype is None else dtype))
    raise TypeError(f"a {type(arr.obj).__name__} is not supported here: sortd makes the "
                    f"arrays it returns with CuPy or PyTorch; sort() works on any CUDA array")


def _torch_dtype(dtype):
    import numpy as np
    torch = sys.modules["torch"]
    return {np.dtype(np.uint8): torch.uint8, np.dtype(np.int32): torch.int32,
            np.dtype(np.int64): torch.int64}[np.dtype(dtype)]
