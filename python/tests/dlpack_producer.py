"""A DLPack producer made by hand with ctypes, for what numpy's own __dlpack__ cannot make:
bfloat16, strides, vector lanes, other dtypes and devices, CUDA tensors over the stand-in
libcuda's memory. It counts its deleter's calls."""
import ctypes

from sortd._dlpack import DLManagedTensor, DLTensor

KDL_CPU, KDL_CUDA = 1, 2
INT, UINT, FLOAT, BFLOAT, COMPLEX = 0, 1, 2, 4, 5

_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_new = ctypes.pythonapi.PyCapsule_New
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class Producer:
    """A tensor of shape over the memory at ptr (a numpy array's, kept alive by owner),
    of DLPack dtype (code, bits, lanes); strides in elements or None (C order)."""

    def __init__(self, owner, ptr, shape, code, bits, lanes=1, strides=None, device=KDL_CPU,
                 module=None):
        self.owner, self.ptr, self.shape, self.strides = owner, ptr, shape, strides
        self.dtype, self.device = (code, bits, lanes), device
        self.deleted = 0
        self.given = []  # what each capsule points at, kept while the test runs
        self._deleter = _DELETER(self._delete)
        if module is not None:
            self.__module__ = module

    def _delete(self, managed):
        self.deleted += 1

    def capsule(self):
        ndim = len(self.shape)
        shape = (ctypes.c_int64 * ndim)(*self.shape)
        strides = (ctypes.c_int64 * ndim)(*self.strides) if self.strides else None
        t = DLTensor(self.ptr, (self.device, 0), ndim, self.dtype, shape, strides, 0)
        m = DLManagedTensor(t, None, ctypes.cast(self._deleter, ctypes.c_void_p).value)
        self.given.append((m, shape, strides))
        return _new(ctypes.addressof(m), b"dltensor", None)

    def __dlpack__(self, stream=None):
        return self.capsule()

    def __dlpack_device__(self):
        return (self.device, 0)


class Wrapped:
    """An array that offers only DLPack (not the buffer protocol, not a numpy array):
    numpy's own capsules of a."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()
