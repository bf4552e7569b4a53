"""The devices a daemon lists (Hello's and Status's rows), and the device= a sort asks for.

A device's UUID is 16 bytes on the wire; people and nvidia-smi -L write it GPU-xxxxxxxx-xxxx-
xxxx-xxxx-xxxxxxxxxxxx. Both ways go through libsortd (sortd_device_uuid_format and _parse),
so Python, sortctl and the daemon write and read one form.
"""
import ctypes

from . import _errors, _lib

_STATES = {_lib.DEVICE_SERVING: "serving", _lib.DEVICE_FAILED: "failed",
           _lib.DEVICE_LOST: "lost"}


def format_uuid(lib, uuid):
    """16 bytes as GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx."""
    out = ctypes.create_string_buffer(_lib.DEVICE_UUID_TEXT)
    lib.sortd_device_uuid_format(bytes(uuid), out)
    return out.value.decode()


def parse_uuid(lib, text):
    """The 16 bytes of a UUID's text (GPU-, MIG- or no prefix, either case); None if it is
    none."""
    out = ctypes.create_string_buffer(_lib.DEVICE_UUID_BYTES)
    ok = lib.sortd_device_uuid_parse(text.encode(errors="replace"), out) == 0
    return out.raw if ok else None


def rows(lib, holder):
    """The device rows of an Info or ServerStatus, as dicts: the keys of sortctl status
    --json's, and uuid_bytes, the 16 bytes that device= also takes."""
    out = []
    for d in holder.devices[:min(holder.device_count, _lib.MAX_DEVICES)]:
        out.append({
            "ordinal": d.ordinal, "uuid": format_uuid(lib, d.uuid), "uuid_bytes": bytes(d.uuid),
            "name": d.name.decode(errors="replace"),
            "pci_bus_id": d.pci_bus_id.decode(errors="replace"), "numa_node": d.numa_node,
            "capacity": d.capacity, "state": _STATES.get(d.state, "unknown"),
            "reason": d.reason.decode(errors="replace"), "streams": d.streams,
            "sorts": d.sorts, "bytes": d.bytes, "busy_ns": d.busy_ns, "queued": d.queued,
        })
    return out


def check(lib, device):
    """device= checked before anything is sent: None (the daemon chooses), the 16 bytes of a
    UUID, or an ordinal (an int) still to be looked up in the last Hello (resolve)."""
    if device is None:
        return None
    if isinstance(device, bool):
        raise TypeError("device must be a UUID (str or 16 bytes) or an ordinal (int), not bool")
    if isinstance(device, int):
        if device < 0:
            raise ValueError(f"device={device}: an ordinal is >= 0")
        return device
    if isinstance(device, str):
        uuid = parse_uuid(lib, device)
        if uuid is None:
            raise ValueError(f"device={device!r} is not a device UUID: give it as sortctl "
                             f"status and nvidia-smi -L print it "
                             f"(GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx), or its ordinal")
        return uuid
    if isinstance(device, (bytes, bytearray, memoryview)):
        uuid = bytes(device)
        if len(uuid) != _lib.DEVICE_UUID_BYTES or uuid == bytes(_lib.DEVICE_UUID_BYTES):
            raise ValueError(f"device as bytes is a UUID's 16 bytes, not all zero; got "
                             f"{len(uuid)} bytes")
        return uuid
    raise TypeError(f"device must be a UUID (str or 16 bytes) or an ordinal (int), "
                    f"not {type(device).__name__}")


def resolve(lib, info, device):
    """What check() returned as libsortd's device_uuid: 16 bytes, all zero for none; an
    ordinal becomes the UUID of the device of that ordinal in info, the last Hello's."""
    if device is None:
        return bytes(_lib.DEVICE_UUID_BYTES)
    if not isinstance(device, int):
        return device
    listed = info.devices[:min(info.device_count, _lib.MAX_DEVICES)]
    for d in listed:
        if d.ordinal == device:
            return bytes(d.uuid)
    known = (f"its devices are {', '.join(str(d.ordinal) for d in listed)}" if listed else
             f"it serves none (engine {info.engine.decode(errors='replace')})")
    raise _errors.InvalidRequest(f"device={device}: sortd has no device of that ordinal; "
                                 f"{known}", _lib.E_INVAL)
