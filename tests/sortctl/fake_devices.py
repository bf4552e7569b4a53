"""A stand-in for sortd that lists devices: it answers Hello and Status with the rows a test
gives it (protobuf written here by hand, as proto/sortd.proto lays it out), sorts inline u32
keys itself, and keeps each Sort's device_uuid. It serves one connection after another, on a
thread, until stop().

Only what sortctl's device paths need: every other request is refused (E_UNSUPPORTED).
"""
import socket
import struct
import threading

MAGIC, VERSION, HEADER = 0x44545253, 1, "<IHHIQ"
SERVING, FAILED, LOST = 1, 2, 3
E_UNSUPPORTED = 7
KEY_U32, PAYLOAD_NONE = 5, 1


def varint(v):
    v &= (1 << 64) - 1  # a negative int32 is sent as its 64-bit two's complement
    out = b""
    while True:
        out += bytes([(v & 0x7F) | (0x80 if v > 0x7F else 0)])
        v >>= 7
        if not v:
            return out


def field(num, value):
    """One field: an int as a varint, bytes or str as length-delimited."""
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode()
    return varint(num << 3 | 2) + varint(len(value)) + value


def message(*fields):
    return b"".join(field(n, v) for n, v in fields if v is not None)


def parse(buf):
    """A message's fields as {number: [value, ...]}: ints for varints, bytes otherwise."""
    out, i = {}, 0
    while i < len(buf):
        key, i = _varint_at(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint_at(buf, i)
        elif wire == 2:
            n, i = _varint_at(buf, i)
            value, i = buf[i:i + n], i + n
        else:
            raise ValueError("wire type %d is not used by sortd" % wire)
        out.setdefault(num, []).append(value)
    return out


def _varint_at(buf, i):
    v, shift = 0, 0
    while True:
        b = buf[i]
        v |= (b & 0x7F) << shift
        shift += 7
        i += 1
        if not b & 0x80:
            return v, i


class Device:
    """One row of Hello and Status (proto/sortd.proto's Device)."""

    def __init__(self, ordinal, uuid, name, pci_bus_id, numa_node, capacity, state, reason,
                 sorts=0, nbytes=0, busy_ns=0, queued=0, streams=2):
        self.ordinal, self.uuid, self.name, self.pci_bus_id = ordinal, uuid, name, pci_bus_id
        self.numa_node, self.capacity, self.state, self.reason = numa_node, capacity, state, reason
        self.sorts, self.bytes, self.busy_ns, self.queued = sorts, nbytes, busy_ns, queued
        self.streams = streams

    def wire(self):
        return message((1, self.ordinal), (2, self.uuid), (3, self.name), (4, self.pci_bus_id),
                       (5, self.numa_node), (6, self.capacity), (7, self.state),
                       (8, self.reason), (9, self.sorts), (10, self.bytes), (11, self.busy_ns),
                       (12, self.queued), (13, self.streams))


class FakeDaemon:
    def __init__(self, path, devices, engine="fake"):
        self.sock, self.devices, self.engine = path, devices, engine
        self.sorts = []  # each Sort's device_uuid (b"" when it named none)
        self.connections = 0
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(path)
        self.listener.listen(4)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def stop(self):
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(10)

    def serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                while self.answer(conn):
                    pass

    def answer(self, conn):
        hdr = _read(conn, struct.calcsize(HEADER))
        if hdr is None:
            return False
        _, _, _, msg_len, payload_len = struct.unpack(HEADER, hdr)
        req = parse(_read(conn, msg_len))
        payload = _read(conn, payload_len) if payload_len else b""
        rid = req.get(1, [0])[0]
        rows = [(7, d.wire()) for d in self.devices]
        if 2 in req:  # Hello
            body = (4, message((1, 1), (2, "fake"), (3, self.engine), (4, "fake device"),
                               (5, 1 << 20), *rows))
        elif 4 in req:  # Status
            body = (6, message((2, self.engine), (3, "fake device"), (4, 1 << 20),
                               *[(37, r) for _, r in rows]))
        elif 3 in req:
            return self.sort(conn, rid, parse(req[3][0]), payload)
        else:
            return self.reply(conn, message((1, rid), (2, E_UNSUPPORTED), (3, "not faked")))
        return self.reply(conn, message((1, rid), body))

    def sort(self, conn, rid, sort, payload):
        """Inline u32 keys alone, sorted ascending; device_uuid kept."""
        self.sorts.append(sort.get(9, [b""])[0])
        if sort.get(1) != [KEY_U32] or sort.get(2) != [PAYLOAD_NONE] or 7 not in sort:
            return self.reply(conn, message((1, rid), (2, E_UNSUPPORTED), (3, "not faked")))
        keys = sorted(struct.unpack("<%dI" % (len(payload) // 4), payload))
        out = struct.pack("<%dI" % len(keys), *keys)
        return self.reply(conn, message((1, rid), (5, message((1, len(keys))))), out)

    @staticmethod
    def reply(conn, msg, payload=b""):
        conn.sendall(struct.pack(HEADER, MAGIC, VERSION, 0, len(msg), len(payload)) + msg
                     + payload)
        return True


def _read(conn, n):
    data = b""
    while len(data) < n:
        got = conn.recv(n - len(data))
        if not got:
            return None
        data += got
    return data
