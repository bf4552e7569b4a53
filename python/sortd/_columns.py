"""Sorts by several key columns (Client.sort_by, Client.lexsort): the columns checked and
described for libsortd, and sent inline or laid out in one region as sortd_columns_offset
says (sortd_types.h). Columns that are CUDA arrays are laid out so in device memory and
sorted there (_cuda_sort.columns)."""
import ctypes
import operator

from . import _arrays, _copies, _cuda, _cuda_sort, _dlpack, _lib, _requests


class Columns:
    """The checked key columns of one sort: arrays (numpy, 1-D keys of n rows: 128-bit word
    pairs as their V16 view; or, all of them, _cuda.CudaArrays of n keys on one device, when
    cuda is set), and libsortd's sortd_column array."""

    def __init__(self, columns, descending, key_types, bits, writable, held):
        """held: an ExitStack that keeps the DLPack tensors among the columns open."""
        np = _arrays._np()
        if isinstance(columns, np.ndarray) and columns.ndim == 2:
            columns = list(columns)  # as np.lexsort: each row a key
        try:
            columns = list(columns)
        except TypeError:
            raise TypeError(f"columns must be a sequence of arrays, not "
                            f"{type(columns).__name__}") from None
        count = len(columns)
        if not 1 <= count <= _lib.MAX_COLUMNS:
            raise ValueError(f"{count} key columns: sortd sorts by 1 to {_lib.MAX_COLUMNS}")
        orders = _per_column(descending, count, "descending", bool)
        types = _per_column(key_types, count, "key_types", lambda t: t)
        ranges = _per_column(bits, count, "bits", lambda b: b)
        self.arrays, self.n, self.cuda = [], None, None
        self.desc = (_lib.Column * count)()
        for j, a in enumerate(columns):
            what = f"column {j}"
            a = _taken(a, what, types, j, held, writable)
            self._same_memory(a, what)
            try:
                keys, kt, shape = _keys(a, types[j], what, writable)
                begin, end = _arrays.bit_range(ranges[j], _arrays.key_bits(kt))
            except (TypeError, ValueError) as e:
                raise type(e)(f"{what}: {e}") from None
            if len(shape) != 1:
                raise ValueError(f"{what} has shape {a.shape}: each column is one key a row "
                                 f"(1-D; 128-bit keys as (n, 2) word pairs)")
            rows = shape[0]
            if self.n is None:
                self.n = rows
            elif rows != self.n:
                raise ValueError(f"{what} has {rows} rows and column 0 has {self.n}: the "
                                 f"columns must be of equal length")
            order = _lib.DESCENDING if orders[j] else _lib.ASCENDING
            self.desc[j] = _lib.Column(kt, order, begin, end)
            self.arrays.append(keys)
        if self.cuda and self.n:
            _one_device(self.arrays)

    def _same_memory(self, a, what):
        """Column 0 says where the columns are: on the host or on a CUDA device."""
        cuda = isinstance(a, _cuda.CudaArray)
        if self.cuda is None:
            self.cuda = cuda
        elif cuda != self.cuda:
            kinds = ("a host array", "a CUDA array")
            raise TypeError(f"{what} is {kinds[cuda]} and column 0 is {kinds[self.cuda]}: the "
                            f"columns are all host arrays (numpy arrays, host DLPack tensors) "
                            f"or all CUDA arrays on one device")

    @property
    def count(self):
        return len(self.arrays)

    @property
    def nbytes(self):
        return sum(a.nbytes for a in self.arrays)


def _taken(a, what, types, j, held, writable):
    """Column j as a numpy array (itself, or a host DLPack tensor's memory) or a
    _cuda.CudaArray (a CUDA array, or a CUDA DLPack tensor's memory); types[j] becomes the key
    type a DLPack tensor's dtype names, unless one was given."""
    t = held.enter_context(_dlpack.taken(a, what))
    if t is not None:
        if types[j] is None:
            types[j] = t.key_type
        return t.array
    cuda = _cuda.describe(a, what, writable)
    return a if cuda is None else cuda


def _keys(a, key_type, what, writable):
    """The keys of column a (numpy array or CudaArray) for key_type, their sortd key type and
    their shape: 128-bit word pairs as one key each."""
    np = _arrays._np()
    if isinstance(a, _cuda.CudaArray):
        keys = _cuda.as_keys(a, key_type)
        return keys, _arrays.key_type(np.dtype(keys.typestr), key_type), keys.shape
    _arrays.check_array(a, what, writable)
    keys, kt = _arrays.keys_of(a, key_type)
    return keys, kt, keys.shape


def _one_device(arrays):
    """The CUDA columns are on one device, where their buffer is made and sorted."""
    drv = _cuda.driver()
    first = drv.ordinal(arrays[0].ptr)
    for j, a in enumerate(arrays[1:], 1):
        ordinal = drv.ordinal(a.ptr)
        if ordinal != first:
            raise ValueError(f"column {j} is on CUDA device {ordinal} and column 0 on device "
                             f"{first}: the columns are sorted on one device, so they must all "
                             f"be on it")


def _per_column(arg, count, what, conv):
    """A per-column argument: one value for every column (None too), or a list of count."""
    if arg is None or isinstance(arg, (bool, str)) or (what == "bits" and _is_pair(arg)):
        return [conv(arg) if arg is not None else None] * count
    try:
        values = list(arg)
    except TypeError:
        return [conv(arg)] * count
    if len(values) != count:
        raise ValueError(f"{what} has {len(values)} entries for {count} columns")
    return [conv(v) if v is not None else None for v in values]


def _is_pair(bits):
    try:
        return len(bits) == 2 and all(isinstance(operator.index(b), int) for b in bits)
    except TypeError:
        return False


def sort(client, cols, inplace, device, *, keep):
    """Sorts by cols (Columns): returns the permutation (int64; for CUDA columns an array of
    column 0's library on their device), or with inplace reorders the columns (their arrays)
    and returns None. keep: as _cuda_sort's."""
    np = _arrays._np()
    if cols.cuda:
        return _cuda_sort.columns(client, cols, inplace, device, keep=keep)
    idx = None if inplace else np.empty(cols.n, np.int64)
    if not cols.n:
        return idx
    payload = _lib.PAYLOAD_NONE if inplace else _lib.PAYLOAD_ARGSORT64
    with client._call():
        uuid = (ctypes.c_uint8 * _lib.DEVICE_UUID_BYTES).from_buffer_copy(
            client._device_uuid(device))
        if _requests.fits_inline(client, cols.nbytes + (idx.nbytes if idx is not None else 0)):
            _inline(client, cols, idx, payload, uuid)
        else:
            _in_region(client, cols, idx, payload, uuid)
    return idx


def _inline(client, cols, idx, payload, uuid):
    """Through the socket, from copies: the columns come back whole or not at all."""
    copies = [a.copy() for a in cols.arrays]
    keys = (ctypes.c_void_p * cols.count)(*(c.ctypes.data for c in copies))
    req = _lib.Request(None, idx.ctypes.data if idx is not None else None, cols.n, 0, payload,
                       _lib.SortOptions(), uuid)
    req.columns, req.column_count, req.column_keys = cols.desc, cols.count, keys

    def run():
        client._check(client._io("sortd_sort_request", ctypes.byref(req)))
        client._record(req.timings)

    back = list(zip(cols.arrays, copies)) if idx is None else []
    _requests.sort_copies(client, run, back)


def _in_region(client, cols, idx, payload, uuid):
    """Laid out in a leased region, column after column as libsortd's sortd_columns_offset
    places them, the permutation after them."""
    lib = client._lib
    at = [lib.sortd_columns_offset(cols.desc, cols.count, cols.n, j)
          for j in range(cols.count + 1)]
    vat = (at[-1] + 63) // 64 * 64
    size = vat + (idx.nbytes if idx is not None else 0)
    lease = client._regions.lease(size, client._create_region)
    try:
        views = []
        for j, a in enumerate(cols.arrays):
            view = lease.view(at[j], a.dtype, cols.n)
            _copies.copyto(view, a)
            views.append((a, view))
        rs = _lib.RegionSort(lease.handle, 0, lease.handle if idx is not None else None,
                             vat, cols.n, 0, payload, _lib.SortOptions(), uuid)
        rs.columns, rs.column_count = cols.desc, cols.count

        def run():
            client._check(client._io("sortd_sort_in_region", ctypes.byref(rs)))
            client._record(rs.timings)

        if idx is None:
            _requests.sort_copies(client, run, views)
        else:
            run()
            _copies.copyto(idx, lease.view(vat, idx.dtype, cols.n))
    finally:
        client._regions.give_back(client._io, lease)
