"""sortd's status codes as Python exceptions, each carrying the daemon's (or libsortd's)
message. Every class derives from sortd.Error, and also from the built-in exception a Python
caller would catch for that kind of failure."""
from . import _lib


class Error(Exception):
    """A sortd call failed. status is the sortd_status code; the message says why."""

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidRequest(Error, ValueError):
    status = _lib.E_INVAL


class CapacityError(Error, ValueError):
    """The request is larger than the daemon's capacity or request limit."""
    status = _lib.E_CAPACITY


class OutOfMemory(Error, MemoryError):
    status = _lib.E_NOMEM


class DeviceError(Error):
    """The engine's device is missing, failed, or produced a wrong result."""
    status = _lib.E_DEVICE


class Unsupported(Error):
    """A valid request this daemon's engine cannot serve (a CUDA region on a CPU engine)."""
    status = _lib.E_UNSUPPORTED


class Busy(Error):
    """A limit of the daemon was reached (connections, regions, bytes in flight): retry."""
    status = _lib.E_BUSY


class ConnectionLost(Error, ConnectionError):
    """The daemon went away or broke the protocol; the client is unusable: make a new one."""
    status = _lib.E_IO


class NotRunning(ConnectionLost):
    """No daemon could be reached at the socket."""


class Timeout(Error, TimeoutError):
    """No answer within the client's timeout. libsortd gives up on the connection, whose
    stream is now out of step: the client is unusable, make a new one. The daemon's sort
    goes on: an array sorted where it is (from Client.empty(), or a CUDA array) may still be
    written after this, by a sort already begun, and by a queued one until the client is
    closed."""
    status = _lib.E_TIMEOUT


class PermissionDenied(Error, PermissionError):
    """The daemon does not serve this user (its allow-uid and allow-gid settings)."""
    status = _lib.E_DENIED


_BY_STATUS = {
    _lib.E_INVAL: InvalidRequest,
    _lib.E_CAPACITY: CapacityError,
    _lib.E_NOMEM: OutOfMemory,
    _lib.E_NODEV: DeviceError,
    _lib.E_DEVICE: DeviceError,
    _lib.E_SYSTEM: Error,
    _lib.E_UNSUPPORTED: Unsupported,
    _lib.E_PROTOCOL: ConnectionLost,
    _lib.E_IO: ConnectionLost,
    _lib.E_TIMEOUT: Timeout,
    _lib.E_BUSY: Busy,
    _lib.E_SELFCHECK: DeviceError,
    _lib.E_DENIED: PermissionDenied,
}


def from_status(status, message):
    return _BY_STATUS.get(status, Error)(message, status)
