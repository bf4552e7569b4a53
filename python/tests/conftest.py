"""Fixtures: a real sortd on the CPU engine on a private socket, and clients of it.

Run under meson test (SORTD_BIN, SORTD_LIBRARY and SORTD_ABI_DUMP point into the build), or
by hand with those variables set."""
import functools
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

SORTD = os.environ.get("SORTD_BIN")
CAPACITY = 1 << 22


class Daemon:
    def __init__(self, tmp, *extra, sock=None):
        self.sock = sock or os.path.join(tmp, f"sortd-{len(os.listdir(tmp))}.sock")
        self.log = open(self.sock + ".log", "w")
        self.proc = subprocess.Popen(
            [SORTD, "--socket", self.sock, "--engine", "cpu", "--capacity", str(CAPACITY),
             "--threads", "2", "--log-level", "warning", *extra], stderr=self.log)
        # A GPU engine self-checks first; an emulated one under a sanitizer takes minutes.
        deadline = time.monotonic() + int(os.environ.get("SORTD_TEST_START_SECONDS", "30"))
        while time.monotonic() < deadline:
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(self.sock)
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"sortd exited during start-up: see {self.sock}.log")
                time.sleep(0.01)
        self.proc.kill()
        self.proc.wait()
        raise RuntimeError("sortd did not come up")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            assert self.proc.wait(60) == 0
        self.log.close()


class Proxy:
    """A socket that passes each connection's bytes through to the daemon's and back, until
    cut(n) or stall(n): then the daemon's next n bytes reach the client, and after them the
    connection is closed (cut) or nothing more arrives (stall). hold(seconds): the client's
    next bytes are taken only after that long, as by a daemon slow to read a request."""

    def __init__(self, tmp, target):
        self.sock = os.path.join(tmp, f"proxy-{len(os.listdir(tmp))}.sock")
        self.target = target
        self._left, self._close = None, False  # the daemon's bytes still passed on; None: all
        self._hold = 0  # seconds before the client's next bytes are taken
        self._lock = threading.Lock()
        self._sockets = []
        self._listener = socket.socket(socket.AF_UNIX)
        self._listener.bind(self.sock)
        self._listener.listen()
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self, n):
        with self._lock:
            self._left, self._close = n, True

    def stall(self, n):
        with self._lock:
            self._left, self._close = n, False

    def hold(self, seconds):
        with self._lock:
            self._hold = seconds

    def close(self):
        for s in [self._listener] + self._sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            daemon = socket.socket(socket.AF_UNIX)
            daemon.connect(self.target)
            self._sockets += [client, daemon]
            threading.Thread(target=self._pass, args=(client, daemon, False), daemon=True).start()
            threading.Thread(target=self._pass, args=(daemon, client, True), daemon=True).start()

    def _pass(self, src, dst, from_daemon):
        try:
            while data := src.recv(1 << 16):
                with self._lock:
                    left, close = (self._left, self._close) if from_daemon else (None, False)
                    if left is not None:
                        data = data[:left]
                        self._left = left - len(data)
                    hold = 0
                    if not from_daemon:
                        hold, self._hold = self._hold, 0
                # Nothing more is read meanwhile: the client's writes fill the socket and wait.
                time.sleep(hold)
                dst.sendall(data)
                if left is not None and left == len(data) and close:
                    break
            dst.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class LibHooks:
    """libsortd with some functions replaced (Client._lib): hooks[name](real function, *args)
    is called in their place."""

    def __init__(self, lib, **hooks):
        self._lib, self._hooks = lib, hooks

    def __getattr__(self, name):
        real = getattr(self._lib, name)
        hook = self._hooks.get(name)
        return real if hook is None else functools.partial(hook, real)


@pytest.fixture
def proxy(tmp_root, daemon):
    p = Proxy(tmp_root, daemon.sock)
    yield p
    p.close()


@pytest.fixture(scope="session")
def tmp_root():
    if not SORTD:
        pytest.skip("SORTD_BIN is not set: run under meson test")
    with tempfile.TemporaryDirectory(prefix="sortd-python-") as d:
        yield d


@pytest.fixture(scope="session")
def daemon(tmp_root):
    d = Daemon(tmp_root)
    yield d
    d.stop()


@pytest.fixture
def fresh_daemon(tmp_root):
    """A daemon of the test's own, for tests that kill it."""
    d = Daemon(tmp_root)
    yield d
    d.stop()


def settled_regions(client, hold=0.03, timeout=5.0):
    """The daemon's count of regions (all connections') once it holds still for hold
    seconds. A Client closed by an earlier test takes its regions (the pool keeps up to four)
    out of the count only when the daemon has seen it go, a moment after close() returned."""
    last = client.status()["regions"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(hold)
        now = client.status()["regions"]
        if now == last:
            break
        last = now
    return last


@pytest.fixture
def client(daemon):
    import sortd
    with sortd.Client(daemon.sock, timeout=60) as c:
        yield c


NO_STREAM = object()  # a CUDA Array Interface of version 2: no "stream" key at all


class FakeCudaArray:
    """Something that speaks the CUDA Array Interface. Its data pointer is ptr: by default no
    memory at all; test_cuda_driver.py points it into host memory that its stand-in libcuda
    takes for a device allocation."""

    def __init__(self, shape=(16,), typestr="<u4", strides=None, readonly=False,
                 ptr=0x7f0000000000, stream=None, mask=None):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "strides": strides, "data": (ptr, readonly),
            "version": 2 if stream is NO_STREAM else 3}
        if mask is not None:
            self.__cuda_array_interface__["mask"] = mask
        if stream is not NO_STREAM:
            self.__cuda_array_interface__["stream"] = stream
