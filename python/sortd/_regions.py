"""The regions of one sortd.Client: those of its arrays from Client.empty(), the free ones its
copy path keeps for reuse, and the CUDA allocations it keeps registered.

A Client owns one Regions. The calls that reach the daemon take the Client's io (a libsortd
call under the deadline of the call in progress) and, to make a region, its way of making one:
passed at each call, not kept, because a Regions that held them would hold the Client, whose
__del__ closes the connection only once nothing else does.
"""
import contextlib
import ctypes
import threading

from . import _arrays, _errors

POOL_MIN_BYTES = 1 << 20
POOL_KEEP = 4  # free regions a client keeps for the copy path


class Region:
    """A registered region: its libsortd handle and, for shared memory, where it is mapped."""

    __slots__ = ("handle", "addr", "size", "bytes")

    def __init__(self, handle, addr, size):
        self.handle, self.addr, self.size, self.bytes = handle, addr, size, None

    def view(self, offset, dtype, n):
        """n elements of dtype at offset in the region's memory, as a numpy array."""
        np = _arrays._np()
        if self.bytes is None:
            buf = (ctypes.c_char * self.size).from_address(self.addr)
            self.bytes = np.frombuffer(buf, dtype=np.uint8)
        return self.bytes[offset:offset + n * np.dtype(dtype).itemsize].view(dtype)


class Regions:
    """What a client keeps of its regions. The Client's lock guards the pool and the CUDA
    cache: their methods are called in a call, or as the connection closes. The arrays'
    regions have a lock of their own, as finalizers reach them."""

    def __init__(self):
        # _live, _dead, _closed. Finalizers take it, and the collector may run one on a thread
        # that holds it already: hence re-entrant, and nothing iterates _live while holding it.
        self._lock = threading.RLock()
        self._live = {}  # id -> Region of each array from empty() still alive
        self._dead = []  # regions whose arrays died, destroyed at the next call
        self._closed = False  # set once sortd_close has orphaned the regions
        self._pool = []  # free regions of the copy path
        self._cuda = {}  # (device uuid, allocation base) -> (IPC handle, Region)

    # ---- the arrays from empty() ----

    def add_live(self, region):
        """region now holds an array from empty()."""
        with self._lock:
            self._live[id(region)] = region

    def died(self, region):
        """region's array is gone (from a finalizer, whenever the collector decides): queues
        region for the next call and returns False, or, once sortd_close has orphaned it,
        returns True: the caller unmaps it."""
        with self._lock:
            self._live.pop(id(region), None)
            if not self._closed:
                self._dead.append(region)
                return False
        return True

    def span(self, a):
        """(region, offset) when a's memory lies in a live region of this client, else None."""
        if a is None:
            return None
        addr, size = a.ctypes.data, a.nbytes
        with self._lock:
            live = list(self._live.values())
        for region in live:
            if region.addr <= addr and addr + size <= region.addr + region.size:
                offset = addr - region.addr
                # libsortd takes element-aligned offsets only: a misaligned view is copied
                return (region, offset) if offset % a.itemsize == 0 else None
        return None

    @contextlib.contextmanager
    def made(self, handle):
        """Around a region's registration into handle: an exception (a signal handler's, as
        the call returns: with a timeout, that is where Ctrl-C during it is raised) that comes
        once libsortd has made the region leaves it to be destroyed at the next call, as a
        dead array's, rather than registered in the daemon and mapped here for good."""
        try:
            yield
        except BaseException:
            if handle.value:
                with self._lock:
                    self._dead.append(Region(handle.value, 0, 0))
            raise

    def release_dead(self, io):
        """Destroys the regions whose arrays died since the last call. Called in a call."""
        # sortd_region_destroy only fails when the daemon refuses the unregister, and then the
        # region is gone here all the same: none is kept for a retry.
        # One at a time, so that an exception from a signal handler loses none of the others.
        while True:
            with self._lock:
                if not self._dead:
                    return
                region = self._dead.pop()
            io("sortd_region_destroy", region.handle)

    def orphaned(self):
        """Once sortd_close has orphaned every region: the ones to unmap now, those of dead
        arrays and the cached ones. A live array's region is unmapped when the array dies."""
        with self._lock:
            self._closed = True
            gone, self._dead = self._dead, []
        return gone + self.take_cached()

    def take_cached(self):
        """The regions of the pool and the CUDA cache, which are emptied."""
        gone = self._pool + [region for _, region in self._cuda.values()]
        self._pool, self._cuda = [], {}
        return gone

    def drop_cached(self, io):
        """Destroys the regions of the pool and the CUDA cache, to make room for a new one
        (the connection's region limit, or memory); whether there were any."""
        if not (self._pool or self._cuda):
            return False
        for region in self._pool:
            io("sortd_region_destroy", region.handle)
        self._pool = []
        self.forget_cuda(io, (), 0)
        return True

    # ---- the pool of the copy path ----

    def lease(self, size, create):
        """A free region of at least size bytes from the pool, or a new one, create(size)'s.
        Called in a call."""
        fits = [r for r in self._pool if r.size >= size]
        if fits:
            region = min(fits, key=lambda r: r.size)
            self._pool.remove(region)
            return region
        try:
            return create(max(POOL_MIN_BYTES, 1 << (size - 1).bit_length()))
        except (_errors.Busy, _errors.OutOfMemory):
            # Rounded up for reuse, a region can pass max-region-bytes (or memory) where one
            # of the size needed fits.
            return create(size)

    def give_back(self, io, region):
        self._pool.append(region)
        if len(self._pool) > POOL_KEEP:
            smallest = min(self._pool, key=lambda r: r.size)
            self._pool.remove(smallest)
            io("sortd_region_destroy", smallest.handle)

    def pool_usage(self):
        """How many regions the pool keeps, and their bytes."""
        return len(self._pool), sum(r.size for r in self._pool)

    # ---- the CUDA cache ----

    def cuda_span(self, io, drv, arr, busy, keep, register):
        """The region of arr's allocation and arr's offset in it. A region is registered once,
        by register(handle, size, uuid, busy), and kept while its handle holds, keep at most;
        busy: regions this call uses."""
        base, size, handle, uuid = drv.allocation(arr.ptr)
        key = (uuid, base)
        cached = self._cuda.pop(key, None)
        if cached is not None and cached[0] == handle:
            self._cuda[key] = cached  # now the most recently used
            return cached[1], arr.ptr - base
        if cached is not None:  # freed and reallocated at the same address
            io("sortd_region_destroy", cached[1].handle)
        region = register(handle, size, uuid, busy)
        self._cuda[key] = (handle, region)
        self.forget_cuda(io, busy + (region,), keep)
        return region, arr.ptr - base

    def forget_cuda(self, io, busy, keep):
        """Unregisters the least recently used CUDA regions but those in busy until keep are
        left; whether any went."""
        idle = [k for k, (_, r) in self._cuda.items() if r not in busy]
        gone = idle[:max(0, len(self._cuda) - keep)]
        for k in gone:
            io("sortd_region_destroy", self._cuda.pop(k)[1].handle)
        return bool(gone)
