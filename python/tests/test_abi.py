"""The package's ctypes view of libsortd against the C headers, as the compiler sees them."""
import ctypes
import json
import os
import subprocess

import pytest

from sortd import _lib


@pytest.fixture(scope="module")
def abi():
    dump = os.environ.get("SORTD_ABI_DUMP")
    if not dump:
        pytest.skip("SORTD_ABI_DUMP is not set: run under meson test")
    return json.loads(subprocess.run([dump], check=True, capture_output=True).stdout)


STRUCTS = {
    "sortd_connect_options": _lib.ConnectOptions,
    "sortd_info": _lib.Info,
    "sortd_device": _lib.Device,
    "sortd_sort_options": _lib.SortOptions,
    "sortd_timings": _lib.Timings,
    "sortd_server_status": _lib.ServerStatus,
    "sortd_request": _lib.Request,
    "sortd_region_sort": _lib.RegionSort,
    "sortd_segments": _lib.Segments,
    "sortd_column": _lib.Column,
}


@pytest.mark.parametrize("name", sorted(STRUCTS))
def test_struct_layout(abi, name):
    cls = STRUCTS[name]
    assert ctypes.sizeof(cls) == abi["sizeof"][name]
    fields = [f for f, _ in cls._fields_]
    c_fields = [k.split(".", 1)[1] for k in abi["offsetof"] if k.startswith(name + ".")]
    assert fields == c_fields
    for f in fields:
        assert getattr(cls, f).offset == abi["offsetof"][f"{name}.{f}"], f


def test_enums_are_ints(abi):
    for e in ("sortd_status", "sortd_key_type", "sortd_payload", "sortd_order",
              "sortd_device_state"):
        assert abi["sizeof"][e] == ctypes.sizeof(ctypes.c_int)


def test_constants(abi):
    e = abi["enums"]
    for name in ("OK", "E_INVAL", "E_CAPACITY", "E_NOMEM", "E_NODEV", "E_DEVICE", "E_SYSTEM",
                 "E_UNSUPPORTED", "E_PROTOCOL", "E_IO", "E_TIMEOUT", "E_BUSY", "E_SELFCHECK", "E_DENIED",
                 "PAYLOAD_NONE", "PAYLOAD_VALUES32", "PAYLOAD_VALUES64", "PAYLOAD_ARGSORT32",
                 "PAYLOAD_ARGSORT64", "ASCENDING", "DESCENDING", "CUDA_IPC_HANDLE_BYTES",
                 "DEVICE_UUID_BYTES", "DEVICE_UUID_TEXT", "MAX_DEVICES", "MAX_COLUMNS", "DEVICE_UNKNOWN",
                 "DEVICE_SERVING", "DEVICE_FAILED", "DEVICE_LOST"):
        assert getattr(_lib, name) == e["SORTD_" + name], name
    assert list(_lib.KEY_TYPES) == abi["key_types"]
    assert list(_lib.COUNTERS) == abi["counters"]


def test_every_function_resolves():
    lib = _lib.load()
    for name in _lib._FUNCTIONS:
        assert getattr(lib, name).argtypes is not None
