"""The waiter: the main thread's libsortd calls with no timeout, on a thread of the package's,
so that Ctrl-C can end them (see _Waiter)."""
import ctypes
import os
import queue
import threading

from . import _lib


class _Job:
    __slots__ = ("fn", "args", "result", "error", "running", "cancelled", "done")

    def __init__(self, fn, args):
        self.fn, self.args, self.result, self.error = fn, args, None, None
        self.running = self.cancelled = False
        self.done = threading.Event()


class _Waiter:
    """Runs the main thread's libsortd calls that have no timeout on a thread of its own
    while the main thread waits for them in Python. A thread waiting inside a C call runs no
    signal handler, and libsortd's waits go on through signals: Ctrl-C would wait for the
    daemon's answer for ever. Here the handlers run in the waiting main thread; one that
    raises (KeyboardInterrupt) has sortd_interrupt end the call, which breaks the connection,
    and its exception goes on once the call has returned. A handler that does not raise
    changes nothing. Only the main thread runs handlers: other threads call libsortd directly."""

    def __init__(self):
        self._jobs = queue.SimpleQueue()
        self._mutex = threading.Lock()  # a job's running and cancelled
        threading.Thread(target=self._serve, name="sortd-waiter", daemon=True).start()

    def _serve(self):
        while True:
            job = self._jobs.get()
            with self._mutex:
                if job.cancelled:
                    job.done.set()
                    continue
                job.running = True
            try:
                job.result = job.fn(*job.args)
            except BaseException as e:  # a ctypes argument error: the caller's to see
                job.error = e
            finally:
                job.done.set()

    def call(self, client, fn, args):
        """fn(client's connection, *args), on the waiter's thread."""
        job = _Job(fn, (client._conn,) + args)
        try:
            self._jobs.put(job)
            job.done.wait()
        except BaseException:
            # Until the job has ended the connection is in use there: the exception must not
            # go on before (the caller could close the connection, or make a call that waits
            # behind the job for good). Another signal's exception on the way, wherever it
            # comes, only has it all done again; the first one is raised.
            while True:
                try:
                    self._end(client, job)
                    break
                except BaseException:
                    pass
            raise
        if job.error is not None:
            raise job.error
        return job.result

    def _end(self, client, job):
        """Ends job: the waiter skips it if it has not begun it, else sortd_interrupt ends its
        wait at once. Done again if a signal's exception cuts it short."""
        with self._mutex:
            job.cancelled = True
            running = job.running
        if running and not job.done.is_set():
            client._interrupted = True
            client._lib.sortd_interrupt(client._conn)
        job.done.wait()


_waiter = None


def main_waiter():
    """The waiter, made on first use; None when no thread can be started for it (Python 3.12
    refuses new threads once the interpreter is shutting down, in atexit handlers): the
    caller then calls libsortd itself, and Ctrl-C waits for the call."""
    global _waiter
    if _waiter is None:
        try:
            _waiter = _Waiter()
        except RuntimeError:
            return None
    return _waiter


def _after_fork_in_child():
    global _waiter
    _waiter = None  # its thread stayed in the parent


os.register_at_fork(after_in_child=_after_fork_in_child)


def connect(lib, path, opts, conn, err):
    """sortd_connect(path, opts, conn, err, len(err)); conn gets the connection. On the main
    thread with no timeout it runs on a thread of its own while the main thread waits in
    Python, as the waiter's calls do. There is no connection to interrupt yet: a signal
    handler's exception goes on at once, and the connection that thread may still make (a
    stalled daemon's Hello may never end) is closed there as it is made."""
    args = (path, ctypes.byref(opts), ctypes.byref(conn), err, len(err))
    if opts.timeout_ms != -1 or threading.current_thread() is not threading.main_thread():
        return lib.sortd_connect(*args)
    state = {}  # "status" once sortd_connect has returned; "abandoned", "closed"
    lock = threading.Lock()
    done = threading.Event()

    def run():
        status = lib.sortd_connect(*args)
        with lock:
            state["status"] = status
            if state.get("abandoned") and status == _lib.OK:
                state["closed"] = True
                lib.sortd_close(conn)
        done.set()

    try:
        threading.Thread(target=run, name="sortd-connect", daemon=True).start()
    except RuntimeError:  # shutting down (see main_waiter)
        return lib.sortd_connect(*args)
    try:
        done.wait()
    except BaseException:
        while True:  # done again if another signal's exception cuts it short
            try:
                with lock:
                    state["abandoned"] = True
                    if state.get("status") == _lib.OK and not state.get("closed"):
                        state["closed"] = True
                        lib.sortd_close(conn)
                break
            except BaseException:
                pass
        raise
    return state["status"]
