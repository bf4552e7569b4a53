"""Copies between a caller's host arrays and region memory. A large copy is split over a few
threads: region memory is shared memory, without the huge pages numpy's own arrays get, and
one thread copies into or out of it at about half the rate it copies between private arrays
(docs/performance.md); numpy releases the GIL while it copies. The caller's thread copies a
part itself and waits for the others, whatever interrupts it: no copy goes on behind its
caller's back."""
import concurrent.futures
import os
import threading

from . import _arrays

PARALLEL_MIN_BYTES = 8 << 20  # smaller copies take about what handing out parts does
_PART_MIN_BYTES = 4 << 20
_WORKERS = min(4, os.cpu_count() or 1)

_lock = threading.Lock()
_pool = None


def _executor():
    global _pool
    with _lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=_WORKERS - 1, thread_name_prefix="sortd-copy")
        return _pool


def parts(nbytes):
    """How many threads copy nbytes: one below PARALLEL_MIN_BYTES, else one per
    _PART_MIN_BYTES, at most _WORKERS."""
    if nbytes < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(_WORKERS, nbytes // _PART_MIN_BYTES))


def copyto(dst, src):
    """np.copyto(dst, src); split over threads when large and both are C-contiguous arrays
    of one shape and dtype."""
    np = _arrays._np()
    count = parts(dst.nbytes)
    if (count < 2 or dst.shape != src.shape or dst.dtype != src.dtype
            or not dst.flags.c_contiguous or not src.flags.c_contiguous):
        np.copyto(dst, src)
        return
    d, s = dst.reshape(-1), src.reshape(-1)
    cuts = [d.size * i // count for i in range(count + 1)]
    pool = _executor()
    futures = [pool.submit(np.copyto, d[cuts[i]:cuts[i + 1]], s[cuts[i]:cuts[i + 1]])
               for i in range(1, count)]
    try:
        np.copyto(d[:cuts[1]], s[:cuts[1]])
    finally:
        _wait(futures)


def _wait(futures):
    """Every part done before the caller goes on. An exception that comes meanwhile (a
    signal handler's KeyboardInterrupt) is raised once they are; a part's own error after."""
    interrupted = None
    for f in futures:
        while not f.done():
            try:
                concurrent.futures.wait([f])
            except BaseException as e:  # noqa: B036 (re-raised below)
                interrupted = interrupted or e
    if interrupted is not None:
        raise interrupted
    for f in futures:
        f.result()
