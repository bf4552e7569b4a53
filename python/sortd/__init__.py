"""sortd: stable radix sorts of numpy arrays, CuPy arrays and PyTorch CUDA tensors by the
sortd daemon, through libsortd.

    import numpy as np, sortd
    a = np.random.randint(0, 1 << 30, 10_000_000, dtype=np.uint32)
    sortd.sort(a)                       # in place, stable
    idx = sortd.argsort(a, descending=True)
    m = a.reshape(1000, -1)
    sortd.sort(m)                       # each row on its own (the last axis), one request
    values, indices = sortd.topk(m, 10) # each row's 10 largest, as torch.topk
    perm = sortd.lexsort((b, a))        # np.lexsort: by a, ties by b
    sortd.sort_by([a, b], descending=[False, True], inplace=True)  # ORDER BY a, b DESC
    with sortd.Client() as c:           # a connection of your own
        b = c.empty(1 << 24, np.float32)  # lives in shared memory: sorted with no copy
        ...
        c.sort(b)

Floats sort in IEEE 754 totalOrder: -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN.
numpy puts every NaN last, whatever its sign, and treats -0.0 and +0.0 as equal; sortd puts
NaNs with the sign bit set first, and -0.0 before +0.0. For arrays without NaNs or mixed zeros
the results are numpy's (np.sort(kind="stable"), np.argsort(kind="stable")).

Keys are u8..u64, i8..i64, float16, float32, float64, bfloat16 (ml_dtypes', or uint16 bits with
key_type="bf16") and 128-bit integers (key_type="u128" or "i128", as (n, 2) uint64 word pairs,
the low word first, or V16). Arrays come as numpy arrays, CUDA arrays (CUDA Array Interface)
or any object with __dlpack__, on the host or a CUDA device; one sorted in place is sorted in
its own memory.

Arrays of several dimensions are sorted along their last axis, each row on its own, as
np.sort(a, axis=-1); another axis is refused with the way to make it the last (np.moveaxis,
then a contiguous copy).
"""
import threading

from ._client import Client, Timings, default_socket
from ._errors import (Busy, CapacityError, ConnectionLost, DeviceError, Error, InvalidRequest,
                      NotRunning, OutOfMemory, PermissionDenied, Timeout, Unsupported)

__all__ = [
    "Client", "Timings", "default_socket", "sort", "argsort", "topk", "lexsort", "sort_by",
    "Error", "InvalidRequest", "CapacityError", "OutOfMemory", "DeviceError", "Unsupported",
    "Busy", "ConnectionLost", "NotRunning", "Timeout", "PermissionDenied",
]
__version__ = "0.1.0"

_default = threading.local()


def _client():
    """This thread's connection to the default socket, made on first use, and made again
    after a failure that broke it (the daemon went away, a timeout, Ctrl-C) or in the child
    of a fork (the parent's stays the parent's)."""
    c = getattr(_default, "client", None)
    if c is not None and (c._forked or c._interrupted):
        c.close()  # lets go of this process's copy only, or of a connection Ctrl-C ended
    if c is None or c._conn is None:
        c = _default.client = Client()
    return c


def _on_default(call, a):
    for again in (False, True):
        c = _client()
        try:
            return call(c)
        except Error as e:
            if c._conn is None or not c._broken():
                raise
            c.close()  # the next call connects again
            # A connection lost before or during the call: the daemon closed it while idle
            # (idle-timeout-ms) or restarted. A failed sort leaves a host array whole (inline
            # and pool sorts work on copies), so it goes once more on a new connection; a CUDA
            # array, sorted where it is, may be half-written, and is not sent again.
            if again or not isinstance(e, ConnectionLost) or \
                    hasattr(a, "__cuda_array_interface__"):
                raise


def sort(a, axis=-1, **kwargs):
    """Client.sort on this thread's default client."""
    return _on_default(lambda c: c.sort(a, axis, **kwargs), a)


def argsort(a, axis=-1, **kwargs):
    """Client.argsort on this thread's default client."""
    return _on_default(lambda c: c.argsort(a, axis, **kwargs), a)


def lexsort(keys, **kwargs):
    """Client.lexsort on this thread's default client: np.lexsort(keys), the last key first."""
    return _on_default(lambda c: c.lexsort(keys, **kwargs), None)


def sort_by(columns, descending=False, inplace=False, **kwargs):
    """Client.sort_by on this thread's default client: the permutation (int64) that sorts
    rows by the columns, the first most significant, or with inplace=True the columns
    reordered in place."""
    return _on_default(lambda c: c.sort_by(columns, descending, inplace, **kwargs), None)


def topk(a, k, largest=True, axis=-1, **kwargs):
    """Client.topk on this thread's default client: (values, indices), as torch.topk."""
    return _on_default(lambda c: c.topk(a, k, largest, axis, **kwargs), a)
