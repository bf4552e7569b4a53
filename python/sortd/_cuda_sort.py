"""How a sortd.Client sorts a CUDA array (_cuda's CudaArray): where it is, in a region the
daemon opens through CUDA IPC, with no copy through the host.

Each function takes the client and the arguments its method has checked already, and takes
the client's call (Client._call) itself. keep: how many CUDA allocations the client keeps
registered, the most recently sorted in (sortd._client.CUDA_KEEP).
"""
import contextlib
import ctypes
import functools

from . import _arrays, _cuda, _dlpack, _lib, _regions, _requests


def sort(client, keys, vals, payload, descending, bits, device, key_type=None, *, keep):
    """Sorts a CUDA array where it is, on device (as _devices.check left it); vals is a
    CUDA array of values or indices; key_type as sort()'s, keys already as_keys'."""
    np = _arrays._np()
    key_type = _arrays.key_type(np.dtype(keys.typestr), key_type)
    opts = _requests.options(descending, bits, key_type)
    vdesc = None
    if vals is not None:
        vdesc = vals if isinstance(vals, _cuda.CudaArray) else _cuda.describe(vals, "values")
        if vdesc is None:
            raise TypeError("values of a CUDA array must be a CUDA array on the same device")
        if vdesc.n != keys.n:
            raise ValueError(f"values has {vdesc.n} elements and a has {keys.n}")
        if vdesc.shape != keys.shape:
            raise ValueError(f"values has shape {vdesc.shape} and a has shape {keys.shape}")
        if payload == _lib.PAYLOAD_NONE:
            payload = _arrays.value_payload(np.dtype(vdesc.typestr))
            if _arrays.values_are_keys(keys.ptr, keys.n * int(keys.typestr[2:]),
                                       vdesc.ptr, vdesc.n * int(vdesc.typestr[2:]), "a"):
                vdesc, payload = None, _lib.PAYLOAD_NONE
    if keys.n == 0:
        return keys.obj
    drv = _cuda.driver()
    for arr in (keys, vdesc):
        if arr is not None:
            drv.synchronize(arr)
    with client._call():
        device = client._device_uuid(device)
        kspan = _span(client, drv, keys, (), keep)
        vspan = _span(client, drv, vdesc, (kspan[0],), keep) if vdesc is not None else None
        _requests.in_regions(client, kspan, vspan, keys.n, key_type, payload, opts, device,
                             _arrays.rows(keys.shape))
    return keys.obj


def argsort(client, keys, index_dtype, payload, descending, bits, device, key_type, *, keep):
    """The permutation that sorts a CUDA array's rows, a new array of its library and
    device: the daemon sorts a copy of keys (already as_keys'), which stay as they were."""
    idx = _cuda.empty_like_indices(keys, index_dtype)
    with contextlib.ExitStack() as held:
        copy = _cuda_of(_cuda.copy_of(keys), "a copy of a", held)
        sort(client, _cuda.as_keys(copy, key_type), idx, payload, descending, bits, device,
             key_type, keep=keep)
    return idx


def topk(client, keys, k, index_dtype, payload, largest, device, key_type=None, *, keep):
    """The top-k of a CUDA array's rows into new arrays of its library and device, all of
    them registered as regions: the keys are only read."""
    np = _arrays._np()
    kt = _arrays.key_type(np.dtype(keys.typestr), key_type)
    opts = _requests.options(largest, None, kt)
    shape = keys.shape[:-1] + (min(k, keys.shape[-1]),)
    vals = _cuda.empty_like(keys, shape)
    idx = _cuda.empty_like_indices(keys, index_dtype, shape)
    if keys.n == 0 or shape[-1] == 0:
        return vals, idx
    with contextlib.ExitStack() as held:
        outs = (_cuda.as_keys(_cuda_of(vals, "values", held), key_type),
                _cuda_of(idx, "indices", held))
        _topk_into(client, keys, k, kt, payload, opts, device, outs, keep)
    return vals, idx


def _topk_into(client, keys, k, kt, payload, opts, device, outs, keep):
    """The top-k of keys' rows into outs, the CudaArrays of its values and indices."""
    drv = _cuda.driver()
    for arr in (keys,) + outs:  # the new arrays' memory may still be read by queued work
        drv.synchronize(arr)
    with client._call():
        device = client._device_uuid(device)
        kspan = _span(client, drv, keys, (), keep)
        vspan = _span(client, drv, outs[0], (kspan[0],), keep)
        ispan = _span(client, drv, outs[1], (kspan[0], vspan[0]), keep)
        _requests.in_regions(client, kspan, None, keys.n, kt, payload, opts, device,
                             _arrays.rows(keys.shape), k, (vspan, ispan))


def columns(client, cols, inplace, device, *, keep):
    """Sorts by key columns that are CUDA arrays on one device (cols, a _columns.Columns):
    copied into one buffer laid out as sortd_columns_offset says, a new array of column 0's
    library on their device, which the daemon sorts where it is. Returns the permutation
    (int64), a new array of that library, or with inplace copies the sorted columns back into
    theirs and returns None."""
    np = _arrays._np()
    first = cols.arrays[0]
    idx = None if inplace else _cuda.empty_like_indices(first, np.int64, (cols.n,))
    if not cols.n:
        return idx
    at = [client._lib.sortd_columns_offset(cols.desc, cols.count, cols.n, j)
          for j in range(cols.count + 1)]
    # 15 bytes over, so that the buffer starts on 16 bytes (the widest key) whatever the
    # allocator's alignment
    buf = _cuda.empty_like(first, (at[-1] + 15,), np.uint8)
    with contextlib.ExitStack() as held:
        bdesc = _cuda_of(buf, "the key columns' buffer", held)
        start = bdesc.ptr + (-bdesc.ptr) % 16
        keys = _cuda.CudaArray(buf, start, at[-1], "|u1", None, True)
        vals = _cuda_of(idx, "indices", held) if idx is not None else None
        drv = _cuda.driver()
        # the columns' producers' work, and any still queued on the new arrays' memory
        for arr in cols.arrays + [bdesc] + ([vals] if vals is not None else []):
            drv.synchronize(arr)
        pieces = [(start + at[j], a.ptr, a.n * _itemsize(a)) for j, a in enumerate(cols.arrays)]
        drv.copy(pieces)
        back = [(dst, src, nbytes) for src, dst, nbytes in pieces]
        payload = _lib.PAYLOAD_NONE if inplace else _lib.PAYLOAD_ARGSORT64
        sorted_ = False
        try:
            with client._call():
                uuid = client._device_uuid(device)
                kspan = _span(client, drv, keys, (), keep)
                vspan = _span(client, drv, vals, (kspan[0],), keep) if vals is not None else None
                rs = _lib.RegionSort(kspan[0].handle, kspan[1],
                                     vspan[0].handle if vspan else None,
                                     vspan[1] if vspan else 0, cols.n, 0, payload,
                                     _lib.SortOptions(),
                                     (ctypes.c_uint8 * _lib.DEVICE_UUID_BYTES).from_buffer_copy(
                                         uuid))
                rs.columns, rs.column_count = cols.desc, cols.count
                client._check(client._io("sortd_sort_in_region", ctypes.byref(rs)))
                sorted_ = True
                client._record(rs.timings)
            if inplace:
                drv.copy(back)
        except BaseException:
            # sorted, then interrupted (a signal handler's exception): the columns are left
            # whole, all sorted
            if sorted_ and inplace:
                drv.copy(back)
            raise
    return idx


def _itemsize(arr):
    """The bytes of one element of a CudaArray (a 128-bit key's 16 for word pairs)."""
    return int(arr.typestr[2:])


def _span(client, drv, arr, busy, keep):
    """The region of arr's allocation and arr's offset in it, from the cache of
    registered allocations (keep at most); busy: regions this call uses."""
    return client._regions.cuda_span(client._io, drv, arr, busy, keep,
                                      functools.partial(_register, client))


def _register(client, handle, size, uuid, busy):
    """A new region of the CUDA allocation of IPC handle handle (size bytes, on the device
    of uuid); busy: regions this call uses, which the cache must not give up for it."""
    out = ctypes.c_void_p()
    with client._regions.made(out):
        status = client._io("sortd_region_register_cuda", handle, 0, size, uuid,
                            ctypes.byref(out))
        if status == _lib.E_BUSY and client._regions.forget_cuda(client._io, busy, 0):
            # the connection's region limit: the cached ones gave way, so try again
            status = client._io("sortd_region_register_cuda", handle, 0, size, uuid,
                                ctypes.byref(out))
    client._check(status)
    return _regions.Region(out.value, 0, size)


def _cuda_of(obj, what, held):
    """The CudaArray of an array the client made (a copy, results), by its CUDA Array
    Interface or, where that fails (PyTorch's bfloat16), by DLPack, held open in held (an
    ExitStack) until the sort is done."""
    t = held.enter_context(_dlpack.taken(obj, what))
    return t.array if t is not None else _cuda.describe(obj, what)
