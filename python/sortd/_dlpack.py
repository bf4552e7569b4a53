"""Arrays by DLPack: any object with __dlpack__ (and __dlpack_device__), or a capsule itself,
on the host (kDLCPU) or a CUDA device (kDLCUDA). The capsule's DLManagedTensor is read with
ctypes; the client then sorts a host tensor as a numpy array over the producer's memory and a
CUDA tensor as a CUDA array (a region over CUDA IPC), so a sort in place lands in the
producer's memory either way.

The capsule is renamed "used_dltensor" as it is taken, as the protocol asks, and its deleter
is called once the call is done with the memory (or has refused the tensor)."""
import contextlib
import ctypes

from . import _arrays, _cuda

KDL_CPU, KDL_CUDA = 1, 2
_LEGACY_STREAM = 1  # __dlpack__(stream=1): ready for CUDA's legacy default stream
_NAME, _USED = b"dltensor", b"used_dltensor"  # module constants: the capsule keeps the pointer


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


# The deleter is called holding the GIL: a producer's may drop Python references (numpy's
# does, and before numpy 1.25 without taking the GIL itself).
_DELETER = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)

_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# (DLPack type code, bits) -> (numpy dtype, the sortd key type it needs named, if any)
_DTYPES = {(0, 8): ("i1", None), (0, 16): ("i2", None), (0, 32): ("i4", None),
           (0, 64): ("i8", None), (0, 128): ("V16", "i128"),
           (1, 8): ("u1", None), (1, 16): ("u2", None), (1, 32): ("u4", None),
           (1, 64): ("u8", None), (1, 128): ("V16", "u128"),
           (2, 16): ("f2", None), (2, 32): ("f4", None), (2, 64): ("f8", None),
           (4, 16): ("u2", "bf16")}
_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque handle", 4: "bfloat", 5: "complex",
               6: "bool"}


class Tensor:
    """A DLPack tensor taken from its capsule: array (a numpy array over its memory, or a
    _cuda.CudaArray), the key type its dtype needs named (bf16, u128, i128) or None."""

    def __init__(self, managed, capsule):
        self._managed, self._capsule = managed, capsule
        self.array, self.key_type = None, None

    @property
    def cuda(self):
        return self.array if isinstance(self.array, _cuda.CudaArray) else None

    def release(self):
        m, self._managed = self._managed, None
        if m is not None:
            deleter = DLManagedTensor.from_address(m).deleter
            if deleter:
                _DELETER(deleter)(m)


def _is_capsule(a):
    return type(a).__name__ == "PyCapsule"


def _has_cai(a):
    """Whether a offers a CUDA Array Interface that works (PyTorch raises for a bfloat16
    tensor, which DLPack carries)."""
    try:
        a.__cuda_array_interface__
    except AttributeError:
        return False
    except Exception:
        return not hasattr(a, "__dlpack__")  # its error is the one to show, unless DLPack works
    return True


def _capsule(a, what):
    try:
        device = a.__dlpack_device__() if hasattr(a, "__dlpack_device__") else (KDL_CPU, 0)
        if int(device[0]) == KDL_CUDA:
            try:
                return a.__dlpack__(stream=_LEGACY_STREAM), True
            except TypeError:  # a producer of DLPack before the stream argument
                return a.__dlpack__(), False
        return a.__dlpack__(), False
    except Exception as e:  # numpy: a read-only array; PyTorch: a tensor that requires grad
        raise TypeError(f"{what} cannot be passed to sortd by DLPack: {e}") from e


@contextlib.contextmanager
def taken(a, what):
    """The Tensor of a, by DLPack, for the length of the with block; None when a is a numpy
    array, an array with a working CUDA Array Interface (both taken as before), or offers no
    DLPack."""
    np = _arrays._np()
    if isinstance(a, np.ndarray) or _has_cai(a):
        yield None
        return
    if _is_capsule(a):
        capsule, streamed = a, False
    elif hasattr(a, "__dlpack__"):
        capsule, streamed = _capsule(a, what)
    else:
        yield None
        return
    t = _take(capsule, what)
    try:
        _describe(t, a, what, streamed)
        yield t
    finally:
        t.release()


def _take(capsule, what):
    if not _is_capsule(capsule):
        raise TypeError(f"{what}.__dlpack__() gave a {type(capsule).__name__}, not a capsule")
    if not _api.PyCapsule_IsValid(capsule, _NAME):
        if _api.PyCapsule_IsValid(capsule, _USED):
            raise ValueError(f"{what}'s DLPack capsule was used already (it is named "
                             f"used_dltensor): a capsule is taken once; pass the array itself, "
                             f"or a new capsule from its __dlpack__()")
        raise TypeError(f"{what} is a capsule but not a DLPack tensor (named dltensor)")
    managed = _api.PyCapsule_GetPointer(capsule, _NAME)
    if _api.PyCapsule_SetName(capsule, _USED) != 0:
        raise RuntimeError("PyCapsule_SetName failed")
    return Tensor(managed, capsule)


def _describe(t, owner, what, streamed):
    """Fills t's array and key type from its DLTensor, or refuses it (t is released)."""
    np = _arrays._np()
    dl = DLManagedTensor.from_address(t._managed).dl_tensor
    code, bits, lanes = dl.dtype.code, dl.dtype.bits, dl.dtype.lanes
    if lanes != 1:
        raise TypeError(f"{what} has DLPack dtype of {lanes} lanes (a vector type): sortd sorts "
                        f"scalar keys, one lane")
    found = _DTYPES.get((code, bits))
    if found is None:
        name = _CODE_NAMES.get(code, f"code {code}")
        raise TypeError(f"{what} has DLPack dtype {name}{bits}, which sortd does not sort: "
                        f"it sorts int and uint of 8 to 64 bits (128 too), float of 16, 32 and "
                        f"64 bits, and bfloat16")
    dtype = np.dtype(found[0])
    t.key_type = found[1]
    shape = tuple(int(dl.shape[i]) for i in range(dl.ndim))
    if dl.strides:
        strides = tuple(int(dl.strides[i]) * dtype.itemsize for i in range(dl.ndim))
        if not _cuda.c_contiguous(shape, strides, dtype.itemsize):
            raise ValueError(f"{what} is not C-contiguous (DLPack strides "
                             f"{tuple(s // dtype.itemsize for s in strides)} elements): pass a "
                             f"contiguous copy (np.ascontiguousarray, tensor.contiguous())")
    ptr = (dl.data or 0) + dl.byte_offset
    n = 1
    for d in shape:
        n *= d
    device = dl.device.device_type
    if device == KDL_CPU:
        t.array = _host_array(ptr, shape, dtype, n)
    elif device == KDL_CUDA:
        t.array = _cuda.CudaArray(owner, ptr, n, dtype.str, _LEGACY_STREAM if streamed else None,
                                  streamed, shape)
    else:
        raise ValueError(f"{what} is on DLPack device type {device}: sortd takes host (kDLCPU, "
                         f"1) and CUDA (kDLCUDA, 2) tensors")


def _host_array(ptr, shape, dtype, n):
    """A numpy array over the producer's memory: writes to it land there."""
    np = _arrays._np()
    if n == 0:
        return np.empty(shape, dtype)
    buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(buf, dtype).reshape(shape)
