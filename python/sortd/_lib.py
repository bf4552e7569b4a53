"""libsortd through ctypes: the library, its structures and the functions the client calls.

The layouts mirror sortd.h and sortd_types.h; tests/test_abi.py checks every size, offset,
enum value and counter name here against the C headers, through a program compiled with them.
"""
import ctypes
import ctypes.util
import os

from . import _config

# sortd_status
OK = 0
E_INVAL, E_CAPACITY, E_NOMEM, E_NODEV, E_DEVICE, E_SYSTEM = 1, 2, 3, 4, 5, 6
E_UNSUPPORTED, E_PROTOCOL, E_IO, E_TIMEOUT, E_BUSY, E_SELFCHECK = 7, 8, 9, 10, 11, 12
E_DENIED = 13

# sortd_key_type, in the enum's order
KEY_TYPES = ("u8", "i8", "u16", "i16", "u32", "i32", "f32", "u64", "i64", "f64", "f16", "bf16",
             "u128", "i128")
KEY_TYPE = {name: i for i, name in enumerate(KEY_TYPES)}

# sortd_payload
PAYLOAD_NONE, PAYLOAD_VALUES32, PAYLOAD_VALUES64, PAYLOAD_ARGSORT32, PAYLOAD_ARGSORT64 = range(5)

# sortd_order
ASCENDING, DESCENDING = 0, 1

MAX_COLUMNS = 8  # SORTD_MAX_COLUMNS: key columns of one sort

CUDA_IPC_HANDLE_BYTES = 64
DEVICE_UUID_BYTES = 16
DEVICE_UUID_TEXT = 41
MAX_DEVICES = 64

# sortd_device_state
DEVICE_UNKNOWN, DEVICE_SERVING, DEVICE_FAILED, DEVICE_LOST = range(4)

# sortd_counters.h, in its order
COUNTERS = (
    "connections", "connections_total", "requests_total", "sorts_ok", "sorts_failed",
    "rejected", "protocol_errors", "cancelled", "queued", "inflight_bytes", "inflight_peak",
    "bytes_in", "bytes_out", "keys_sorted", "regions", "region_bytes", "host_pool_bytes",
    "host_pool_misses", "batches", "batched", "cpu_path_keys", "cpu_path_sorts",
    "timed_out", "engines_lost", "sort_requests", "loop_sorts", "host_pool_used",
    "host_pool_peak", "connections_refused",
)

u64 = ctypes.c_uint64


class ConnectOptions(ctypes.Structure):
    _fields_ = [("client_name", ctypes.c_char_p), ("timeout_ms", ctypes.c_int)]


class Device(ctypes.Structure):
    _fields_ = [
        ("uuid", ctypes.c_uint8 * DEVICE_UUID_BYTES),
        ("ordinal", ctypes.c_uint32),
        ("numa_node", ctypes.c_int32),
        ("name", ctypes.c_char * 128),
        ("pci_bus_id", ctypes.c_char * 32),
        ("reason", ctypes.c_char * 256),
        ("state", ctypes.c_int),
        ("streams", ctypes.c_uint32),
        ("capacity", u64),
        ("sorts", u64),
        ("bytes", u64),
        ("busy_ns", u64),
        ("queued", u64),
    ]


class Info(ctypes.Structure):
    _fields_ = [
        ("protocol_version", ctypes.c_uint),
        ("server_version", ctypes.c_char * 32),
        ("engine", ctypes.c_char * 32),
        ("device", ctypes.c_char * 128),
        ("capacity", u64),
        ("max_message_bytes", ctypes.c_uint32),
        ("max_request_bytes", u64),
        ("max_inflight_bytes", u64),
        ("max_connections", ctypes.c_uint32),
        ("max_regions", u64),
        ("max_region_bytes", u64),
        ("device_count", ctypes.c_uint),
        ("devices", Device * MAX_DEVICES),
    ]


class SortOptions(ctypes.Structure):
    _fields_ = [("order", ctypes.c_int), ("begin_bit", ctypes.c_uint), ("end_bit", ctypes.c_uint)]


class Timings(ctypes.Structure):
    _fields_ = [("queued_ns", u64), ("transfer_ns", u64), ("sort_ns", u64)]


class ServerStatus(ctypes.Structure):
    _fields_ = ([("engine", ctypes.c_char * 32), ("device", ctypes.c_char * 128),
                 ("capacity", u64), ("uptime_ms", u64)]
                + [(name, u64) for name in COUNTERS]
                + [("engine_reason", ctypes.c_char * 512), ("device_count", ctypes.c_uint),
                   ("devices", Device * MAX_DEVICES)])


class Segments(ctypes.Structure):
    _fields_ = [
        ("count", u64),
        ("row_len", u64),
        ("offsets", ctypes.c_void_p),
        ("offset_bytes", ctypes.c_uint),
    ]


class Column(ctypes.Structure):
    _fields_ = [("key_type", ctypes.c_int), ("order", ctypes.c_int), ("begin_bit", ctypes.c_uint),
                ("end_bit", ctypes.c_uint)]


class RegionSort(ctypes.Structure):
    _fields_ = [
        ("keys", ctypes.c_void_p),
        ("keys_offset", ctypes.c_size_t),
        ("vals", ctypes.c_void_p),
        ("vals_offset", ctypes.c_size_t),
        ("n", ctypes.c_size_t),
        ("key_type", ctypes.c_int),
        ("payload", ctypes.c_int),
        ("opts", SortOptions),
        ("device_uuid", ctypes.c_uint8 * DEVICE_UUID_BYTES),
        ("segments", ctypes.POINTER(Segments)),
        ("offsets_region", ctypes.c_void_p),
        ("offsets_offset", ctypes.c_size_t),
        ("k", u64),
        ("out_keys", ctypes.c_void_p),
        ("out_keys_offset", ctypes.c_size_t),
        ("out_vals", ctypes.c_void_p),
        ("out_vals_offset", ctypes.c_size_t),
        ("columns", ctypes.POINTER(Column)),
        ("column_count", ctypes.c_uint),
        ("timings", Timings),
    ]


class Request(ctypes.Structure):
    _fields_ = [
        ("keys", ctypes.c_void_p),
        ("vals", ctypes.c_void_p),
        ("n", ctypes.c_size_t),
        ("key_type", ctypes.c_int),
        ("payload", ctypes.c_int),
        ("opts", SortOptions),
        ("device_uuid", ctypes.c_uint8 * DEVICE_UUID_BYTES),
        ("segments", ctypes.POINTER(Segments)),
        ("k", u64),
        ("out_keys", ctypes.c_void_p),
        ("out_vals", ctypes.c_void_p),
        ("columns", ctypes.POINTER(Column)),
        ("column_count", ctypes.c_uint),
        ("column_keys", ctypes.POINTER(ctypes.c_void_p)),
        ("id", u64),
        ("timings", Timings),
    ]


_P = ctypes.POINTER
_vp, _sz, _int, _st = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int

# name: (result, argument types)
_FUNCTIONS = {
    "sortd_connect": (_st, [ctypes.c_char_p, _P(ConnectOptions), _P(_vp), ctypes.c_char_p, _sz]),
    "sortd_close": (None, [_vp]),
    "sortd_error_message": (ctypes.c_char_p, [_vp]),
    "sortd_set_timeout": (None, [_vp, _int]),
    "sortd_interrupt": (None, [_vp]),
    "sortd_strerror": (ctypes.c_char_p, [_st]),
    "sortd_device_state_name": (ctypes.c_char_p, [_int]),
    "sortd_device_uuid_format": (None, [ctypes.c_char_p, ctypes.c_char_p]),
    "sortd_device_uuid_parse": (_int, [ctypes.c_char_p, ctypes.c_char_p]),
    "sortd_hello": (_st, [_vp, _P(Info)]),
    "sortd_get_info": (None, [_vp, _P(Info)]),
    "sortd_ping": (_st, [_vp]),
    "sortd_query_status": (_st, [_vp, _P(ServerStatus)]),
    "sortd_sort": (_st, [_vp, _vp, _sz, _int, _P(SortOptions)]),
    "sortd_sort_pairs": (_st, [_vp, _vp, _vp, _sz, _sz, _int, _P(SortOptions)]),
    "sortd_argsort": (_st, [_vp, _vp, _vp, _sz, _sz, _int, _P(SortOptions)]),
    "sortd_sort_request": (_st, [_vp, _P(Request)]),
    "sortd_region_create": (_st, [_vp, _sz, _P(_vp)]),
    "sortd_region_register_cuda": (_st, [_vp, ctypes.c_char_p, u64, u64, ctypes.c_char_p,
                                         _P(_vp)]),
    "sortd_region_data": (_vp, [_vp]),
    "sortd_region_size": (_sz, [_vp]),
    "sortd_region_destroy": (_st, [_vp, _vp]),
    "sortd_sort_in_region": (_st, [_vp, _P(RegionSort)]),
    "sortd_columns_offset": (u64, [_P(Column), ctypes.c_uint, u64, ctypes.c_uint]),
}

_loaded = None


def _candidates():
    env = os.environ.get("SORTD_LIBRARY")
    if env:
        return [env]
    found = ctypes.util.find_library("sortd")
    return [p for p in (_config.LIBSORTD, found, "libsortd.so.0") if p]


def load():
    """libsortd with its functions typed; loaded once per process."""
    global _loaded
    if _loaded is not None:
        return _loaded
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise ImportError("libsortd is not installed where Python can load it ("
                          + "; ".join(errors) + "): install sortd (meson install, or the "
                          "package), or set SORTD_LIBRARY to the path of libsortd.so")
    for name, (res, args) in _FUNCTIONS.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    _loaded = lib
    return lib
