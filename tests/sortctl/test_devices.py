#!/usr/bin/env python3
"""sortctl and the devices a daemon lists: status's table, JSON array and Prometheus series
for rows a stand-in daemon (fake_devices.py) chooses, and sort --device, by UUID or ordinal,
sent as the Sort's device_uuid or refused with a message that says why.

Needs SORTCTL_BIN (meson test sets it); no daemon, no numpy.
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest

import prometheus_format  # beside this file
from fake_devices import FAILED, LOST, SERVING, Device, FakeDaemon

SORTCTL = os.environ.get("SORTCTL_BIN")

DEVICES = [
    Device(0, bytes(range(16)), "NVIDIA H200", "00000000:1B:00.0", 0, 1 << 28, SERVING,
           "self-check passed", sorts=12, nbytes=4096, busy_ns=1500000000, queued=1),
    Device(1, bytes(range(16, 32)), 'Fake "GPU" \\ 1', "00000000:1C:00.0", -1, 0, FAILED,
           'self-check failed: "sorted" wrong'),
    Device(4, bytes(range(32, 48)), "NVIDIA H200", "00000000:9A:00.0", 1, 1 << 28, LOST,
           "lost: Xid 79", sorts=3, nbytes=12, busy_ns=7),
]
UUIDS = ["GPU-00010203-0405-0607-0809-0a0b0c0d0e0f", "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f",
         "GPU-20212223-2425-2627-2829-2a2b2c2d2e2f"]
STATES = ["serving", "failed", "lost"]
FAMILIES = {"sortd_device_up": "gauge", "sortd_device_capacity_keys": "gauge",
            "sortd_device_sorts_total": "counter", "sortd_device_bytes_total": "counter",
            "sortd_device_busy_seconds_total": "counter", "sortd_device_queued": "gauge"}


class Devices(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="sortctl-devices-")
        self.fake = FakeDaemon(os.path.join(self.tmp.name, "fake.sock"), DEVICES)

    def tearDown(self):
        self.fake.stop()
        self.tmp.cleanup()

    def sortctl(self, *args, code=0, sock=None):
        r = subprocess.run([SORTCTL, "--socket", sock or self.fake.sock, *args],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, code, "sortctl %s: %s" % (" ".join(args), r.stderr))
        if code:
            self.assertEqual(r.stdout, "")
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        return r

    # ---- status ----

    def test_text_table(self):
        lines = self.sortctl("status").stdout.splitlines()
        at = lines.index(next(line for line in lines if line.startswith("devices ")))
        self.assertEqual(lines[at].split(), ["devices", "3"])
        table = lines[at + 1:]
        self.assertEqual(len(table), 4, lines)
        cells = [re.split(r"  +", line, maxsplit=11) for line in table]
        self.assertEqual(cells[0], ["#", "name", "uuid", "pci bus id", "numa", "capacity",
                                    "state", "sorts", "bytes", "busy s", "queued", "reason"])
        self.assertEqual(cells[1], ["0", "NVIDIA H200", UUIDS[0], "00000000:1B:00.0", "0",
                                    str(1 << 28), "serving", "12", "4096", "1.500", "1",
                                    "self-check passed"])
        self.assertEqual(cells[2], ["1", 'Fake "GPU" \\ 1', UUIDS[1], "00000000:1C:00.0", "-",
                                    "0", "failed", "0", "0", "0.000", "0",
                                    'self-check failed: "sorted" wrong'])
        self.assertEqual(cells[3][:7], ["4", "NVIDIA H200", UUIDS[2], "00000000:9A:00.0", "1",
                                        str(1 << 28), "lost"])
        self.assertEqual(cells[3][-1], "lost: Xid 79")
        # every column starts where its heading does
        for line in table[1:]:
            for heading in cells[0][1:]:
                col = table[0].index("  " + heading) + 2
                self.assertEqual((line[col - 2:col], line[col] != " "), ("  ", True),
                                 (heading, line))

    def test_json_array(self):
        st = json.loads(self.sortctl("status", "--json").stdout)
        self.assertEqual(st["devices"][0], {
            "ordinal": 0, "uuid": UUIDS[0], "name": "NVIDIA H200",
            "pci_bus_id": "00000000:1B:00.0", "numa_node": 0, "capacity": 1 << 28,
            "state": "serving", "reason": "self-check passed", "streams": 2, "sorts": 12,
            "bytes": 4096, "busy_ns": 1500000000, "queued": 1})
        self.assertEqual([d["uuid"] for d in st["devices"]], UUIDS)
        self.assertEqual([d["state"] for d in st["devices"]], STATES)
        self.assertEqual(st["devices"][1]["name"], 'Fake "GPU" \\ 1')
        self.assertEqual(st["devices"][1]["numa_node"], -1)
        self.assertEqual(st["devices"][2]["ordinal"], 4)

    def test_prometheus_series(self):
        text = self.sortctl("status", "--format", "prometheus").stdout
        samples, types = prometheus_format.check(text)
        for name, kind in FAMILIES.items():
            self.assertEqual(types[name], kind, name)
            self.assertEqual(len([k for k in samples if k[0] == name]), 3, name)
        labels = [{"device": str(DEVICES[i].ordinal), "uuid": UUIDS[i], "name": n,
                   "pci_bus_id": DEVICES[i].pci_bus_id}
                  for i, n in enumerate(["NVIDIA H200", 'Fake \\"GPU\\" \\\\ 1', "NVIDIA H200"])]

        def value(name, i, **extra):
            return samples[(name, tuple(sorted(dict(labels[i], **extra).items())))]

        self.assertEqual([value("sortd_device_up", i, state=STATES[i]) for i in range(3)],
                         [1, 0, 0])
        self.assertEqual(value("sortd_device_sorts_total", 0), 12)
        self.assertEqual(value("sortd_device_bytes_total", 2), 12)
        self.assertEqual(value("sortd_device_busy_seconds_total", 0), 1.5)
        self.assertEqual(value("sortd_device_busy_seconds_total", 2), 7e-9)
        self.assertEqual(value("sortd_device_queued", 0), 1)
        self.assertEqual(value("sortd_device_capacity_keys", 1), 0)

    def test_no_devices(self):
        none = FakeDaemon(os.path.join(self.tmp.name, "none.sock"), [], engine="cpu")
        try:
            lines = self.sortctl("status", sock=none.sock).stdout.splitlines()
            self.assertEqual(lines[-1].split(), ["devices", "0"])
            st = json.loads(self.sortctl("status", "--json", sock=none.sock).stdout)
            self.assertEqual(st["devices"], [])
            text = self.sortctl("status", "--format", "prometheus", sock=none.sock).stdout
            samples, types = prometheus_format.check(text)
            for name, kind in FAMILIES.items():  # the families, for dashboards, with no samples
                self.assertEqual(types[name], kind)
                self.assertFalse([k for k in samples if k[0] == name])
            self.sort_fails(["--device", "0"], "--device 0: sortd has no device of that "
                            "ordinal; it serves none (engine cpu)", sock=none.sock)
            self.sort_fails(["--device", UUIDS[0]], "it serves none (engine cpu)",
                            sock=none.sock)
        finally:
            none.stop()

    # ---- sort --device ----

    def keys_file(self):
        path = os.path.join(self.tmp.name, "in.bin")
        with open(path, "wb") as f:
            f.write(struct.pack("<5I", 9, 3, 7, 1, 3))
        return path

    def sort(self, *args, sock=None):
        out = os.path.join(self.tmp.name, "out.bin")
        self.sortctl("sort", self.keys_file(), "-o", out, "--type", "u32", *args, sock=sock)
        with open(out, "rb") as f:
            self.assertEqual(struct.unpack("<5I", f.read()), (1, 3, 3, 7, 9))

    def sort_fails(self, args, message, code=1, sock=None):
        r = self.sortctl("sort", self.keys_file(), "-o", os.path.join(self.tmp.name, "x.bin"),
                         "--type", "u32", *args, code=code, sock=sock)
        self.assertIn(message, r.stderr)

    def test_sort_on_a_device(self):
        self.sort()
        self.sort("--device", "0")
        self.sort("--device", UUIDS[0])
        self.sort("--device=MIG-" + UUIDS[0][4:].upper())
        self.sort("--device", UUIDS[0][4:])
        self.assertEqual(self.fake.sorts, [b""] + [DEVICES[0].uuid] * 4)

    def test_sort_device_refused(self):
        served = "sortd serves " + UUIDS[0]
        self.sort_fails(["--device", "1"], "device %s is failed (self-check failed: \"sorted\" "
                        "wrong); %s" % (UUIDS[1], served))
        self.sort_fails(["--device", UUIDS[2]], "device %s is lost (lost: Xid 79)" % UUIDS[2])
        self.sort_fails(["--device", "2"], "--device 2: sortd has no device of that ordinal; "
                        "its devices are 0, 1, 4")
        unknown = "GPU-ffffffff-1415-1617-1819-1a1b1c1d1e1f"
        self.sort_fails(["--device", unknown], "device %s is not one sortd serves; it serves %s"
                        % (unknown, UUIDS[0]))
        self.assertEqual(self.fake.sorts, [], "a refused device reached the daemon")

    def test_device_argument_checked_first(self):
        """A --device that names nothing is refused before sortctl connects, or reads IN."""
        gone = os.path.join(self.tmp.name, "nobody.sock")
        for bad in ("frob", "", "-1", "+1", "0x1", "1e3", "1234567890", " 0", "GPU-0001",
                    UUIDS[0] + "0", UUIDS[0].replace("-", "", 2), "gpu-" + UUIDS[0][4:]):
            with self.subTest(device=bad):
                r = self.sortctl("sort", "missing.bin", "-o", "x.bin", "--type", "u32",
                                 "--device", bad, code=1, sock=gone)
                self.assertIn("--device %s: give a device's UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-"
                              "xxxxxxxxxxxx, as sortctl status prints it) or its ordinal" % bad,
                              r.stderr)
        self.assertIn("--device D", self.sortctl("sort", "--help").stdout)
        self.assertEqual(self.fake.connections, 0)


if __name__ == "__main__":
    if not SORTCTL:
        print("SORTCTL_BIN must be set (run under meson test)")
        sys.exit(77)
    unittest.main(verbosity=2)
