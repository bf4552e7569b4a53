"""sortd.Client: one connection to sortd, and the ways an array reaches it.

An array reaches the daemon by the cheapest of three paths:
  - in a region already: an array from Client.empty() lives in a shared-memory region of this
    connection, and a CUDA array is opened by the daemon through CUDA IPC, so the sort happens
    where the array is, with no copy;
  - inline, for small arrays (up to inline_max_bytes and the daemon's max-request-bytes):
    libsortd sends a copy through the socket and reads the result back into the copy, which is
    copied into the array once whole;
  - through the pool: a larger ordinary array is copied once into a region the client keeps
    for reuse, sorted there, and copied back.

A Client holds the connection and checks its methods' arguments; the paths are _host's (numpy
arrays) and _cuda_sort's (CUDA arrays), each request built by _requests.
"""
import contextlib
import ctypes
import errno
import functools
import math
import operator
import os
import threading
import time
import weakref
from collections import namedtuple

from . import (_arrays, _columns, _cuda, _cuda_sort, _devices, _dlpack, _errors, _host, _lib,
               _regions, _requests, _waiter)

Timings = namedtuple("Timings", "queued transfer sort")
Timings.__doc__ = "The daemon's account of the last sort, in seconds."

INLINE_MAX_BYTES = 1 << 20
# CUDA allocations a client keeps registered, the most recently sorted in. Each one holds an IPC
# mapping in the daemon, which keeps the allocation's device memory alive after the array's
# library frees it, and counts against the connection's max-regions.
CUDA_KEEP = 8
REGION_MAX_BYTES = 2**63 - 1  # libsortd's limit (sortd_region_create)

# Every connected Client, so that the child of a fork can disown the parent's (see _disown).
_clients = weakref.WeakSet()


def _after_fork_in_child():
    # Only a flag: a lock another thread of the parent held stays held in the child for good.
    for c in list(_clients):
        c._forked = True


os.register_at_fork(after_in_child=_after_fork_in_child)


def default_socket():
    """The socket libsortd connects to when none is named."""
    env = os.environ.get("SORTD_SOCKET")
    if env:
        return env
    run = os.environ.get("XDG_RUNTIME_DIR")
    if os.geteuid() == 0 or not run:
        return "/run/sortd/sortd.sock"
    return os.path.join(run, "sortd.sock")


def _by_dlpack(returns_a):
    """A sorting method that also takes, as a, an object with __dlpack__ (or its capsule):
    it gets the tensor's memory as a numpy array (host) or a CUDA array, and the key type its
    dtype needs (bfloat16, 128-bit); returns_a: the method returns a, sorted in place, for
    which it returns the object it was given."""
    def wrap(method):
        @functools.wraps(method)
        def call(self, a, *args, **kwargs):
            with _dlpack.taken(a, "a") as t:
                if t is None:
                    return method(self, a, *args, **kwargs)
                if kwargs.get("key_type") is None and t.key_type is not None:
                    kwargs["key_type"] = t.key_type
                out = method(self, t.array, *args, **kwargs)
                return a if returns_a and kwargs.get("out") is None else out
        return call
    return wrap


def _unreachable(path, status, err):
    """The connect failure as an exception that says what to do."""
    if status == _lib.E_IO and not os.path.exists(path):
        return _errors.NotRunning(
            f"sortd is not running at {path}: start it with systemctl start sortd.socket (or "
            f"sortd --socket {path}), or pass socket= or set SORTD_SOCKET", status)
    if status == _lib.E_IO and not os.access(path, os.W_OK):
        return _errors.NotRunning(
            f"no permission to connect to {path}: join its group (usermod -aG sortd $USER, "
            f"then log in again)", status)
    if status == _lib.E_IO and os.strerror(errno.ECONNREFUSED) in err:
        return _errors.NotRunning(
            f"nothing listens on {path} (sortd stopped and left its socket): start it with "
            f"systemctl start sortd.socket", status)
    return _errors.from_status(status, f"cannot reach sortd at {path}: {err}")


DEFAULT_TIMEOUT = 60.0  # libsortd's
_MAX_TIMEOUT_MS = 2**31 - 1  # what libsortd's int holds


def _timeout_seconds(timeout):
    """The seconds of a call's timeout: math.inf for none."""
    if timeout is None:
        return DEFAULT_TIMEOUT
    if timeout == math.inf:
        return math.inf
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or math.inf, "
                         f"not {timeout!r}")
    # Longer than libsortd's int holds (about 24.8 days) is no limit: as math.inf, Ctrl-C
    # ends it, which it would not for a wait cut to 24.8 days.
    return timeout if timeout * 1000 <= _MAX_TIMEOUT_MS else math.inf


def _ms(seconds):
    """seconds as libsortd's timeout: at least 1 ms (0 would be its default), -1 for none."""
    return -1 if seconds == math.inf else max(1, min(math.ceil(seconds * 1000), _MAX_TIMEOUT_MS))


class Client:
    """A connection to sortd. Use it as a context manager, or call close().

    socket: the daemon's socket (default: $SORTD_SOCKET, else /run/sortd/sortd.sock as root,
    else $XDG_RUNTIME_DIR/sortd.sock). timeout: seconds a call may wait for the daemon, all its
    exchanges together (a sort through the pool registers a region, then sorts in it); None:
    60 s; math.inf: no limit. A client may be shared by threads: its calls take turns, and a
    call's timeout starts at its turn.
    """

    inline_max_bytes = INLINE_MAX_BYTES

    def __init__(self, socket=None, timeout=None, *, name="python"):
        self._lib = _lib.load()
        self._conn = None
        self._pid, self._forked = os.getpid(), False
        self._lock = threading.Lock()  # one call at a time on the connection
        self._regions = _regions.Regions()
        self._info = _lib.Info()  # the last Hello's, read in a call (32 KiB: kept, not remade)
        self.last_timings = None
        self.socket = socket if socket is not None else default_socket()
        self._timeout = _timeout_seconds(timeout)
        self._interrupted = False  # a signal handler's exception ended a call: broken
        self._deadline = math.inf  # of the call in progress (time.monotonic())
        opts = _lib.ConnectOptions(name.encode(), _ms(self._timeout))
        conn = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        status = _waiter.connect(self._lib, os.fsencode(self.socket), opts, conn, err)
        if status != _lib.OK:
            raise _unreachable(self.socket, status, err.value.decode(errors="replace"))
        self._conn = conn
        _clients.add(self)

    # ---- the connection ----

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_conn", None) is not None:
            self.close()

    def close(self):
        """Closes the connection. Arrays from empty() stay usable as ordinary memory."""
        if self._forked:
            self._disown()
            return
        with self._lock:
            if self._conn is None:
                return
            conn, self._conn = self._conn, None
            # Orphans every region: the daemon drops them with the connection, and the live
            # ones stay mapped here. Until it has run, a finalizer must leave its region to
            # this call (libsortd only unmaps a region that is orphaned).
            self._lib.sortd_close(conn)
            self._unmap(self._regions.orphaned())

    def _disown(self):
        """In the child of a fork: the connection and its regions are the parent's, so this
        process lets go of its copies of the socket and the pool's mappings without a word to
        the daemon, which would take it as the parent's."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        self._lib.sortd_close(conn)  # orphans the regions and closes this process's fd
        self._unmap(self._regions.take_cached())

    def _unmap(self, regions):
        for region in regions:
            self._lib.sortd_region_destroy(None, region.handle)  # orphaned: only unmaps

    def _check(self, status):
        if status != _lib.OK:
            msg = self._lib.sortd_error_message(self._conn) or self._lib.sortd_strerror(status)
            msg = msg.decode(errors="replace")
            if status == _lib.E_TIMEOUT:  # libsortd's "within" is what was left of it
                msg += f" (the rest of this call's timeout of {self._timeout:g} s)"
            raise _errors.from_status(status, msg)

    def _io(self, name, *args):
        """libsortd's call name on the connection, under what remains of the timeout of the
        call in progress, so that one deadline bounds all its exchanges. Called in a call."""
        self._lib.sortd_set_timeout(self._conn, _ms(self._deadline - time.monotonic()))
        fn = getattr(self._lib, name)
        # Only a wait with no end needs the waiter: with a timeout, Ctrl-C takes effect when
        # the call ends, and the hand-off would cost every call (a 1000-key sort, 70 us from
        # another thread: 205-410 us through the waiter on the 2-core development VM).
        if self._deadline != math.inf or threading.current_thread() != threading.main_thread():
            return fn(self._conn, *args)
        waiter = _waiter.main_waiter()
        return waiter.call(self, fn, args) if waiter else fn(self._conn, *args)

    class _Call:
        def __init__(self, client):
            self.client = client

        def __enter__(self):
            c = self.client
            if c._forked:
                raise _errors.Error(f"this sortd.Client was made in process {c._pid}, before a "
                                    f"fork: make a new one in this process")
            c._lock.acquire()
            try:
                if c._conn is None:
                    raise _errors.Error("this sortd.Client is closed")
                c._deadline = time.monotonic() + c._timeout
                c._regions.release_dead(c._io)
            except BaseException:  # a signal handler's exception too: the lock must not stay held
                self.__exit__()
                raise

        def __exit__(self, *exc):
            c = self.client
            try:
                c._deadline = math.inf
                if c._conn is not None:  # the connection's own timeout, between calls
                    c._lib.sortd_set_timeout(c._conn, _ms(c._timeout))
            finally:
                c._lock.release()

    def _call(self):
        return Client._Call(self)

    def _broken(self):
        """Whether the connection is broken for good, after a timeout, a lost or garbled
        stream, or the daemon's last word before it hung up: libsortd then fails every call
        at once, as it does this ping."""
        try:
            self.ping()
        except _errors.Error:
            return True
        return False

    def info(self):
        """The daemon's version, engine, device and limits, as a dict; "devices" lists the
        GPUs it serves or was asked to serve (none on the cpu engine), each a dict with the
        keys of sortctl status --json's rows (the uuid as GPU-...) and uuid_bytes."""
        info = _lib.Info()
        with self._call():
            self._check(self._io("sortd_hello", ctypes.byref(info)))
        return self._as_dict(info)

    def status(self):
        """The daemon's counters (requests, sorts, bytes, regions, ...), as a dict, with its
        devices as info() lists them and their counters now."""
        st = _lib.ServerStatus()
        with self._call():
            self._check(self._io("sortd_query_status", ctypes.byref(st)))
        return self._as_dict(st)

    def _as_dict(self, holder):
        out = {name: _plain(getattr(holder, name)) for name, _ in holder._fields_
               if name not in ("device_count", "devices")}
        out["devices"] = _devices.rows(self._lib, holder)
        return out

    def ping(self):
        """A round trip to the daemon; returns its time in seconds."""
        with self._call():
            start = time.perf_counter()
            self._check(self._io("sortd_ping"))
            return time.perf_counter() - start

    # ---- regions ----

    def empty(self, n, dtype=float):
        """A new 1-D array of n elements (zero-filled) in a shared-memory region of this
        connection: sort() sorts it where it is, with no copy. Its memory stays valid after
        close(); the region is released when the array (and every view of it) is gone. It is
        shared memory: after os.fork(), parent and child see each other's writes to it, where
        an ordinary array's pages would be copied on write."""
        np = _arrays._np()
        try:
            n = operator.index(n)  # as np.empty: 2.5 or "3" is not a count
        except TypeError:
            raise TypeError(f"n must be an integer, not {type(n).__name__}") from None
        if n < 0:
            raise ValueError(f"n must be >= 0, not {n}")
        dtype = np.dtype(dtype)
        if dtype.hasobject or dtype.itemsize == 0:
            raise TypeError(f"empty() makes arrays of fixed-size data in shared memory, "
                            f"not of {dtype}")
        # libsortd takes a size_t, which ctypes would silently wrap to a smaller size.
        if n * dtype.itemsize > REGION_MAX_BYTES:
            raise ValueError(f"{n} elements of {dtype} are {n * dtype.itemsize} bytes, more "
                             f"than a region holds (2^63 - 1)")
        with self._call():
            region = self._create_region(max(n * dtype.itemsize, 1))
        buf = (ctypes.c_char * region.size).from_address(region.addr)
        self._regions.add_live(region)
        # Not at exit: once the client has closed, the finalizer unmaps the memory, and an
        # atexit handler registered before it (they run last to first) may still read the array.
        weakref.finalize(buf, self._array_died, region).atexit = False
        return np.frombuffer(buf, dtype=dtype, count=n)

    def _create_region(self, size):
        """A new region of size bytes. Called in a call."""
        handle = ctypes.c_void_p()
        with self._regions.made(handle):
            status = self._io("sortd_region_create", size, ctypes.byref(handle))
            if status in (_lib.E_BUSY, _lib.E_NOMEM) and self._regions.drop_cached(self._io):
                # the connection's region limit, or memory: the cached ones were freed
                status = self._io("sortd_region_create", size, ctypes.byref(handle))
        self._check(status)
        return _regions.Region(handle.value, self._lib.sortd_region_data(handle),
                               self._lib.sortd_region_size(handle))

    def _array_died(self, region):
        """A finalizer, run whenever the collector decides: it only queues the region, or
        unmaps it once sortd_close has orphaned it."""
        if self._forked:
            return  # the parent's region; this process's mapping goes with the process
        if self._regions.died(region):
            self._unmap([region])

    def pool_regions(self):
        """How many regions the copy path keeps for reuse, and their bytes."""
        with self._lock:
            return self._regions.pool_usage()

    # ---- sorting ----

    @_by_dlpack(returns_a=True)
    def sort(self, a, axis=-1, *, descending=False, bits=None, values=None, out=None,
             device=None, key_type=None):
        """Sorts a in place (stable) and returns it; with out, a is left as it was and the
        sorted keys go to out. An array of several dimensions has each row of its last axis
        sorted on its own, as np.sort(a, axis=-1), in one request: axis must name the last
        axis (np.moveaxis and a contiguous copy make any axis the last). values (a's shape,
        4- or 8-byte elements) are moved with their keys, in place. bits=(begin, end) sorts by
        those bits of the key only. a may be a numpy array, a CuPy array or a PyTorch CUDA
        tensor, C-contiguous. device asks for the GPU to sort on: its UUID ("GPU-..." as
        info() lists it, or its 16 bytes) or its ordinal in info()'s devices; a device the
        daemon does not serve is refused (InvalidRequest). None: the daemon chooses.

        Keys are a's dtype (float16 sorts as f16; ml_dtypes' bfloat16 as bf16), or key_type
        says what a's elements are: "bf16" for a uint16 array of bfloat16 bits, "u128" or
        "i128" for 128-bit integers, given as an (..., 2) uint64 or int64 array (the low
        word first; the last axis is the key's two words, not a row) or a V16 array; any
        sortd key type as wide as a's elements reads their bytes as such keys.

        a may also be any object with __dlpack__ (a PyTorch tensor, a JAX array, ...) or a
        DLPack capsule, on the host or a CUDA device: sorted in place, its keys land in the
        producer's memory, as a CUDA array's do (the capsule is used up); a bfloat16 tensor
        sorts as bf16."""
        device = _devices.check(self._lib, device)
        cuda = _cuda.describe(a, "a")
        if cuda is not None:
            cuda = _cuda.as_keys(cuda, key_type)
            _arrays.last_axis(cuda.shape, axis, "a")
            if out is not None:
                raise ValueError("out= is for numpy arrays: to keep a CUDA array, sort a copy "
                                 "(a.copy() for CuPy, a.clone() for PyTorch)")
            _cuda_sort.sort(self, cuda, values, _lib.PAYLOAD_NONE, descending, bits, device,
                            key_type, keep=CUDA_KEEP)
            return a
        _arrays.check_array(a, "a", writable=out is None)
        keys, kt = _arrays.keys_of(a, key_type)
        _arrays.last_axis(keys.shape, axis, "a")
        opts = _requests.options(descending, bits, kt)
        payload = _lib.PAYLOAD_NONE
        if values is not None:
            _arrays.check_array(values, "values", writable=True)
            _same_shape(keys, values, "values")
            payload = _arrays.value_payload(values.dtype)
        target = a
        if out is not None:
            _arrays.check_array(out, "out", writable=True)
            if out.dtype != a.dtype or out.shape != a.shape:
                raise ValueError(f"out must be {a.dtype} of shape {a.shape}, "
                                 f"not {out.dtype} of shape {out.shape}")
            target = out
        tkeys = _arrays.keys_of(target, key_type)[0]
        if values is not None and _arrays.values_are_keys(
                tkeys.ctypes.data, tkeys.nbytes, values.ctypes.data, values.nbytes,
                "a" if out is None else "out"):
            values, payload = None, _lib.PAYLOAD_NONE
        if tkeys.size:
            _host.sort(self, tkeys, kt, values, payload, opts, device, _arrays.rows(keys.shape),
                       source=keys if out is not None else None)
        return target

    @_by_dlpack(returns_a=False)
    def argsort(self, a, axis=-1, *, descending=False, bits=None, index_dtype=None,
                device=None, key_type=None):
        """The stable permutation that sorts a: a new array of a's shape and index_dtype
        (np.uint32, the default, for n up to 2^32; np.uint64 or np.int64), with idx[i] the
        position in a of the i-th key in order; of several dimensions, each row of the last
        axis on its own, its indices within the row, as np.argsort(a, axis=-1,
        kind="stable"). a is left as it was. axis, device, key_type: as for sort() (for
        128-bit keys as word pairs, idx has a's shape without its last axis). a may be a DLPack
        tensor (see sort()), left as it was: idx is a numpy array for a host tensor, an array of
        the tensor's library for a CUDA one."""
        np = _arrays._np()
        device = _devices.check(self._lib, device)
        index_dtype = np.dtype(np.uint32 if index_dtype is None else index_dtype)
        payload = _arrays.index_payload(index_dtype)
        cuda = _cuda.describe(a, "a", writable=False)  # the daemon sorts a copy of a
        if cuda is not None:
            cuda = _cuda.as_keys(cuda, key_type)
            _arrays.last_axis(cuda.shape, axis, "a")
            # refused before anything is allocated
            _arrays.key_type(np.dtype(cuda.typestr), key_type)
            return _cuda_sort.argsort(self, cuda, index_dtype, payload, descending, bits,
                                      device, key_type, keep=CUDA_KEEP)
        _arrays.check_array(a, "a", writable=False)
        a, key_type = _arrays.keys_of(a, key_type)
        _arrays.last_axis(a.shape, axis, "a")
        opts = _requests.options(descending, bits, key_type)
        idx = np.empty(a.shape, dtype=index_dtype)
        if a.size:
            _host.argsort(self, a, idx, key_type, payload, opts, device)
        return idx

    @_by_dlpack(returns_a=False)
    def topk(self, a, k, largest=True, axis=-1, *, index_dtype=None, device=None,
             key_type=None):
        """The k largest keys of each row of a's last axis (largest=False: the smallest), as
        torch.topk gives them: (values, indices), both of shape a.shape[:-1] + (min(k, a's
        last dimension),), values in order (the largest first, or the smallest), equal keys
        by their index, indices within the row (index_dtype: np.int64, the default, np.uint32
        or np.uint64). Floats compare in totalOrder, so +NaN is the largest and -NaN the
        smallest. a is left as it was; it may be a numpy array, a CuPy array or a PyTorch CUDA
        tensor, and the results are arrays of its kind. axis, device, key_type: as for sort()
        (128-bit keys as word pairs come back as word pairs). a may be a DLPack tensor (see
        sort()), left as it was."""
        np = _arrays._np()
        device = _devices.check(self._lib, device)
        k = _arrays.check_k(k)
        index_dtype = np.dtype(np.int64 if index_dtype is None else index_dtype)
        payload = _arrays.index_payload(index_dtype)
        cuda = _cuda.describe(a, "a", writable=False)  # only read
        if cuda is not None:
            cuda = _cuda.as_keys(cuda, key_type)
            _arrays.last_axis(cuda.shape, axis, "a")
            return _cuda_sort.topk(self, cuda, k, index_dtype, payload, largest, device,
                                   key_type, keep=CUDA_KEEP)
        _arrays.check_array(a, "a", writable=False)
        keys, kt = _arrays.keys_of(a, key_type)
        _arrays.last_axis(keys.shape, axis, "a")
        shape = keys.shape[:-1] + (min(k, keys.shape[-1]),)
        vals, idx = np.empty(shape, keys.dtype), np.empty(shape, index_dtype)
        if vals.size:
            _host.topk(self, keys, k, kt, (vals, idx), payload,
                       _requests.options(largest, None, kt), device)
        if keys is not a:  # word pairs, as they came
            vals = vals.view(a.dtype).reshape(shape + (2,))
        return vals, idx

    def sort_by(self, columns, descending=False, inplace=False, *, key_types=None, bits=None,
                device=None):
        """Sorts rows by several key columns, column 0 most significant (ORDER BY c0, c1 DESC,
        ...), stably: returns the permutation (int64, as np.lexsort's) and leaves the columns
        as they are, or with inplace=True reorders every column in place and returns None.
        columns: 1 to 8 arrays of n rows each, of any key dtype (128-bit keys as (n, 2) word
        pairs or V16, with key_types), either all on the host (numpy arrays, host DLPack
        tensors, reordered in their producer's memory) or all CUDA arrays on one device (CuPy
        arrays, PyTorch CUDA tensors, CUDA DLPack tensors): these are copied into one buffer
        on their device and sorted there, the permutation a new array of column 0's library
        on that device. descending, key_types (see sort()'s key_type) and bits ((begin, end)
        of the key's bits) are one value for every column or a list of one a column."""
        device = _devices.check(self._lib, device)
        with contextlib.ExitStack() as held:
            cols = _columns.Columns(columns, descending, key_types, bits, inplace, held)
            return _columns.sort(self, cols, inplace, device, keep=CUDA_KEEP)

    def lexsort(self, keys, *, key_types=None, device=None):
        """np.lexsort(keys): the stable permutation (int64) that sorts by the last key, ties
        by the one before it, and so on; keys is a sequence of 1 to 8 arrays of equal length
        (host arrays, or CUDA arrays on one device, as sort_by's columns), or a 2-D array
        whose rows are the keys. key_types: as sort_by's, in keys' order."""
        keys = list(keys)
        if isinstance(key_types, (list, tuple)):
            key_types = list(reversed(key_types))
        return self.sort_by(keys[::-1], key_types=key_types, device=device)

    # ---- what the data paths (_host, _cuda_sort, _columns) use, in a call ----

    def _last_hello(self):
        """The last Hello's answer, kept by libsortd: no round trip. Called in a call."""
        self._lib.sortd_get_info(self._conn, ctypes.byref(self._info))
        return self._info

    def _device_uuid(self, device):
        """device= (as _devices.check left it) as libsortd's device_uuid. Called in a
        call."""
        if isinstance(device, int):
            return _devices.resolve(self._lib, self._last_hello(), device)
        return _devices.resolve(self._lib, None, device)

    def _record(self, t):
        """The timings t of the sort just done (libsortd's), as last_timings."""
        self.last_timings = Timings(t.queued_ns / 1e9, t.transfer_ns / 1e9, t.sort_ns / 1e9)


def _same_shape(a, b, what):
    if b.size != a.size:
        raise ValueError(f"{what} has {b.size} elements and a has {a.size}")
    if b.shape != a.shape:
        raise ValueError(f"{what} has shape {b.shape} and a has shape {a.shape}")


def _plain(v):
    return v.decode(errors="replace") if isinstance(v, bytes) else v
