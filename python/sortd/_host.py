"""The ways a host (numpy) array reaches sortd, for a sortd.Client's sort, argsort and topk,
the cheapest that fits:
  - in a region already (an array from Client.empty(), or a view of one): sorted where it is;
  - inline, for small arrays (up to the client's inline_max_bytes and the daemon's
    max-request-bytes): a copy through the socket, read back into the copy, which is copied
    into the array once whole;
  - through the pool: copied once into a region the client leases, sorted there, and copied
    back.

Each function takes the client and the arguments its method has checked already, and takes
the client's call (Client._call) itself.
"""
from . import _arrays, _copies, _requests

_ALIGN = 64  # where a second array starts in a lease


def sort(client, keys, key_type, vals, payload, opts, device, seg, source=None):
    """Sorts keys, and vals with them, in place; seg: the rows (None: one array). source
    (keys' shape and type): the keys to sort into keys (out=), read straight into the copy
    that is sorted, so keys is written once and no copy of source is made first."""
    source = keys if source is None else source
    with client._call():
        device = client._device_uuid(device)
        kspan, vspan = client._regions.span(keys), client._regions.span(vals)
        if kspan and (vals is None or vspan):
            if source is not keys:
                _copies.copyto(keys, source)
            _requests.in_regions(client, kspan, vspan, keys.size, key_type, payload, opts,
                                 device, seg)
            return
        vbytes = vals.nbytes if vals is not None else 0
        if _requests.fits_inline(client, keys.nbytes + vbytes):
            # Into copies, which reach the caller's arrays only whole: a reply cut short
            # (connection lost, timeout) leaves its buffers half-written. At this size a
            # copy is cheap, and it is aligned as libsortd wants whatever the array is.
            kbuf = source.copy()
            vbuf = vals.copy() if vals is not None else None
            copies = [(keys, kbuf)] + ([(vals, vbuf)] if vals is not None else [])
            _requests.sort_copies(
                client, lambda: _requests.inline(client, kbuf, vbuf, key_type, payload, opts,
                                                 device, seg),
                copies)
            return
        # Copy what is not in a region already into one lease: keys first, values after.
        size = (0 if kspan else _round_up(keys.nbytes)) + (0 if vspan else vbytes)
        lease = client._regions.lease(size, client._create_region)
        try:
            copied = []
            at = 0
            spans = []
            for arr, src, span in ((keys, source, kspan), (vals, vals, vspan)):
                if arr is None or span:
                    if span and src is not arr:
                        _copies.copyto(arr, src)
                    spans.append(span)
                    continue
                view = lease.view(at, arr.dtype, arr.size).reshape(arr.shape)
                _copies.copyto(view, src)
                copied.append((arr, view))
                spans.append((lease, at))
                at += _round_up(arr.nbytes)
            _requests.sort_copies(
                client, lambda: _requests.in_regions(client, spans[0], spans[1], keys.size,
                                                     key_type, payload, opts, device, seg),
                copied)
        finally:
            client._regions.give_back(client._io, lease)


def argsort(client, a, idx, key_type, payload, opts, device):
    """The permutation that sorts a's rows into idx, a new array of a's shape; a, not empty,
    is left as it was."""
    seg = _arrays.rows(a.shape)
    with client._call():
        device = client._device_uuid(device)
        if _requests.fits_inline(client, a.nbytes + idx.nbytes):
            keys = a.copy()  # the daemon sorts the keys it is sent; a stays as it was
            _requests.inline(client, keys, idx, key_type, payload, opts, device, seg)
            return
        at = _round_up(a.nbytes)
        lease = client._regions.lease(at + idx.nbytes, client._create_region)
        try:
            _copies.copyto(lease.view(0, a.dtype, a.size), a.reshape(-1))
            _requests.in_regions(client, (lease, 0), (lease, at), a.size, key_type, payload,
                                 opts, device, seg)
            _copies.copyto(idx.reshape(-1), lease.view(at, idx.dtype, a.size))
        finally:
            client._regions.give_back(client._io, lease)


def topk(client, a, k, key_type, results, payload, opts, device):
    """The top-k of a's rows into results, (values, indices): inline, or through regions
    (a where it lies in one already, else a copy of it; the results through a lease)."""
    vals, idx = results
    seg = _arrays.rows(a.shape)
    with client._call():
        device = client._device_uuid(device)
        kspan = client._regions.span(a)
        if kspan is None and _requests.fits_inline(client, a.nbytes + a.size * idx.itemsize):
            keys = a if a.flags.aligned else a.copy()  # only read
            _requests.inline(client, keys, None, key_type, payload, opts, device, seg, k,
                             results)
            return
        at = 0 if kspan else _round_up(a.nbytes)
        iat = at + _round_up(vals.nbytes)
        lease = client._regions.lease(iat + idx.nbytes, client._create_region)
        try:
            if kspan is None:
                _copies.copyto(lease.view(0, a.dtype, a.size), a.reshape(-1))
                kspan = (lease, 0)
            _requests.in_regions(client, kspan, None, a.size, key_type, payload, opts, device,
                                 seg, k, ((lease, at), (lease, iat)))
            _copies.copyto(vals.reshape(-1), lease.view(at, vals.dtype, vals.size))
            _copies.copyto(idx.reshape(-1), lease.view(iat, idx.dtype, idx.size))
        finally:
            client._regions.give_back(client._io, lease)


def _round_up(nbytes):
    return (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
