"""One sort request of a sortd.Client: its options, and the two ways it reaches the daemon,
inline through the socket or in regions the daemon has mapped (shared memory or CUDA
allocations). The host and CUDA paths (_host, _cuda_sort) build on these.

Each function takes the client and is called in a call (Client._call), which holds the
connection and sets the deadline its exchanges share.
"""
import ctypes

from . import _arrays, _copies, _lib


def options(descending, bits, key_type):
    """The SortOptions of a sort's order and bit range, for keys of key_type."""
    # Only what a C unsigned cannot carry is refused here; libsortd and the daemon refuse a
    # range past the key's own width (InvalidRequest, saying so).
    begin, end = _arrays.bit_range(bits, max(64, _arrays.key_bits(key_type)))
    return _lib.SortOptions(_lib.DESCENDING if descending else _lib.ASCENDING, begin, end)


def fits_inline(client, nbytes):
    """Whether a sort of nbytes (keys and values or indices) goes inline. The daemon
    refuses an inline request above its max-request-bytes, which a region sort is not
    held to."""
    if nbytes > client.inline_max_bytes:
        return False
    info = client._last_hello()
    return not info.max_request_bytes or nbytes <= info.max_request_bytes  # 0: no limit


def sort_copies(client, sort, copies):
    """sort(), one exchange that sorts the client's copies of the caller's arrays (and
    maybe arrays in regions, in place), then each (array, copy) of copies back into the
    caller's array. A signal handler's exception (KeyboardInterrupt) may come anywhere on
    the way: the arrays are still left whole, all sorted or none. Once the daemon has
    sorted, every copy goes back before the exception does: copying back a copy that
    still holds its input changes nothing, and the way to tell a sort that failed, whose
    copies must not reach the caller, is libsortd's message, "" unless the last exchange
    failed."""
    try:
        sort()
        for arr, copy in copies:
            _copies.copyto(arr, copy)
    except BaseException:
        if not client._lib.sortd_error_message(client._conn):
            for arr, copy in copies:
                _copies.copyto(arr, copy)
        raise


def inline(client, keys, vals, key_type, payload, opts, device, seg=None, k=0,
           results=None):
    """Sorts keys and vals, the client's own buffers (a failure may leave them
    half-written), through the socket, on device (libsortd's device_uuid), in the
    segments seg (None: one array); with k, only reads them and writes the top-k into
    results, (values, indices)."""
    req = _lib.Request(keys.ctypes.data, vals.ctypes.data if vals is not None else None,
                       keys.size, key_type, payload, opts, _uuid_array(device))
    if seg is not None:
        req.segments = ctypes.pointer(seg)
    if k:
        req.k, req.out_keys, req.out_vals = k, results[0].ctypes.data, results[1].ctypes.data
    # One call, for one deadline over sending and waiting (sortd_submit and sortd_receive
    # have one each: twice the timeout), and for no moment between them where a signal
    # handler's exception would leave the request outstanding. It reports the timings,
    # which sortd_sort and its kin do not.
    client._check(client._io("sortd_sort_request", ctypes.byref(req)))
    client._record(req.timings)


def in_regions(client, kspan, vspan, n, key_type, payload, opts, device, seg=None, k=0,
               results=None):
    """A sort in regions, spans (region, offset) of keys and values; in the segments
    seg (None: one array); with k, a top-k into results, the spans of its values and
    indices."""
    rs = _lib.RegionSort(kspan[0].handle, kspan[1], vspan[0].handle if vspan else None,
                         vspan[1] if vspan else 0, n, key_type, payload, opts,
                         _uuid_array(device))
    if seg is not None:
        rs.segments = ctypes.pointer(seg)
    if k:
        (okeys, ooff), (ovals, voff) = results
        rs.k = k
        rs.out_keys, rs.out_keys_offset = okeys.handle, ooff
        rs.out_vals, rs.out_vals_offset = ovals.handle, voff
    client._check(client._io("sortd_sort_in_region", ctypes.byref(rs)))
    client._record(rs.timings)


def _uuid_array(uuid):
    return (ctypes.c_uint8 * _lib.DEVICE_UUID_BYTES).from_buffer_copy(uuid)
