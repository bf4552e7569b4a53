#!/usr/bin/env python3
"""sortctl end to end with the key types numpy has no plain dtype for, and record arrays: a
real sortd (CPU engine) on a private socket, sortctl run as a user runs it, and every output
compared with numpy's stable sorts of the same input.

f16 is numpy's float16; bf16 is read from raw files or from '<u2' with --type bf16; u128 and
i128 from raw 16-byte little-endian keys, '|V16', or '<u8' of shape (n, 2) (the low word
first). A structured .npy file sorts by --key FIELD[:desc], every field moving with its row,
as np.lexsort orders them. Needs SORTD_BIN, SORTCTL_BIN and numpy (meson test finds a python3
that has it).
"""
import os
import sys
import tempfile
import unittest

import numpy as np

from test_sortctl import Daemon, SORTCTL, SORTD  # beside this file

import subprocess

WIDTH = {"f16": 16, "bf16": 16, "u128": 128, "i128": 128}


def image16(bits):
    """sortd's order-preserving image of 16-bit float patterns (IEEE totalOrder)."""
    u = bits.astype(np.uint16)
    return np.where(u & 0x8000, ~u, u | 0x8000).astype(np.uint16)


def order16(bits, desc=False, window=None):
    """Input positions in the order of a stable sort of 16-bit float patterns."""
    img = image16(bits).astype(np.int64)
    if window:
        img = (img >> window[0]) & ((1 << (window[1] - window[0])) - 1)
    return np.argsort(-img if desc else img, kind="stable")


def words(pairs, signed):
    """The high and low words of 128-bit keys in their order-preserving image."""
    hi = pairs[:, 1] ^ np.uint64(1 << 63) if signed else pairs[:, 1]
    return hi, pairs[:, 0]


def order128(pairs, signed, desc=False, window=None):
    """Input positions in the order of a stable sort of (n, 2) <u8 keys, low word first."""
    hi, lo = words(pairs, signed)
    if window:
        full = [(int(h) << 64 | int(l)) >> window[0] & ((1 << (window[1] - window[0])) - 1)
                for h, l in zip(hi, lo)]
        return sorted(range(len(full)), key=lambda i: -full[i] if desc else full[i])
    if desc:
        hi, lo = ~hi, ~lo
    return np.lexsort((lo, hi))


def random128(rng, n):
    """(n, 2) <u8 keys: random, with few distinct high words and the extremes among them."""
    out = rng.integers(0, 2 ** 64, size=(n, 2), dtype=np.uint64)
    out[:, 1] = out[:, 1] % np.uint64(5) * np.uint64(0x4000000000000000)
    ext = [(0, 0), (2 ** 64 - 1, 2 ** 64 - 1), (0, 2 ** 63), (2 ** 64 - 1, 2 ** 63 - 1), (1, 0)]
    out[: len(ext)] = np.array(ext, dtype=np.uint64)
    return out


class TypesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmpdir = tempfile.TemporaryDirectory(prefix="sortctl-types-")
        cls.tmp = cls.tmpdir.name
        cls.daemon = Daemon(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        cls.tmpdir.cleanup()

    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=self.tmp)
        self.rng = np.random.default_rng(abs(hash(self.id())) & 0xffff)

    def path(self, name):
        return os.path.join(self.dir, name)

    def sortctl(self, *args, code=0):
        r = subprocess.run([SORTCTL, "--socket", self.daemon.sock, *args], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, code, "sortctl %s: %s" % (" ".join(args), r.stderr))
        if code:
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        return r

    def fails(self, args, message):
        r = self.sortctl(*args, code=1)
        self.assertIn(message, r.stderr)

    def save(self, name, a):
        np.save(self.path(name), a)
        return self.path(name)

    # ---- f16 and bf16 ----

    def test_f16_every_pattern_npy(self):
        """All 65,536 float16 patterns, shuffled: ascending by value, descending, and the
        permutation, against a stable sort of their totalOrder images."""
        bits = self.rng.permutation(np.arange(65536, dtype=np.uint16))
        src = self.save("h.npy", bits.view(np.float16))
        for desc in (False, True):
            with self.subTest(desc=desc):
                self.sortctl("sort", src, "-o", self.path("o.npy"), "--argsort",
                             self.path("i.npy"), *(["--desc"] if desc else []))
                out, idx = np.load(self.path("o.npy")), np.load(self.path("i.npy"))
                self.assertEqual(out.dtype, np.float16)
                order = order16(bits, desc)
                np.testing.assert_array_equal(out.view(np.uint16), bits[order])
                np.testing.assert_array_equal(idx, order)
        # big-endian in, big-endian out, the same order
        self.sortctl("sort", self.save("b.npy", bits.view(np.float16).astype(">f2")), "-o",
                     self.path("b.npy"))
        out = np.load(self.path("b.npy"))
        self.assertEqual(out.dtype, np.dtype(">f2"))
        np.testing.assert_array_equal(out.astype("<f2").view(np.uint16), bits[order16(bits)])
        # numbers alone: numpy's own sort agrees (NaNs aside, which numpy puts last)
        finite = bits.view(np.float16)[~np.isnan(bits.view(np.float16))]
        ordered = np.load(self.path("o.npy"))
        nums = ordered[~np.isnan(ordered)][::-1]  # descending, the last run
        np.testing.assert_array_equal(nums, np.sort(finite, kind="stable"))

    def test_f16_text_both_ways(self):
        """Every f16 pattern written as text reads back to its bits (NaNs as the NaN of their
        sign), in numpy's shortest digits; text read in is rounded to nearest, and past 65504
        refused."""
        bits = np.arange(65536, dtype=np.uint16)
        self.sortctl("sort", self.save("h.npy", bits.view(np.float16)), "-o", self.path("o.txt"))
        lines = open(self.path("o.txt")).read().split("\n")[:-1]
        back = np.array([float(x) for x in lines]).astype(np.float16)
        ordered = bits[order16(bits)].view(np.float16)
        nan = np.isnan(ordered)
        np.testing.assert_array_equal(back.view(np.uint16)[~nan], ordered.view(np.uint16)[~nan])
        np.testing.assert_array_equal(np.signbit(back[nan]), np.signbit(ordered[nan]))
        for text, value in zip(lines[::97], ordered[::97]):
            # whole numbers are written out, as seq writes them: 64128, not 6.413e+04
            if np.isfinite(value) and value != int(value):
                digits = len(np.format_float_scientific(value, unique=True).split("e")[0]
                             .replace("-", "").replace(".", "").rstrip("0") or "0")
                mine = len(text.replace("-", "").split("e")[0].replace(".", "").strip("0"))
                self.assertLessEqual(mine, digits, (text, value))
        # read: the text sortctl wrote, sorted again, gives the same bits
        self.sortctl("sort", self.path("o.txt"), "--type", "f16", "-o", self.path("p.npy"))
        again = np.load(self.path("p.npy")).view(np.uint16)
        np.testing.assert_array_equal(again[~nan], ordered.view(np.uint16)[~nan])
        # read: decimals between two f16 round to the nearer, ties to even
        src = self.path("r.txt")
        with open(src, "w") as f:
            f.write("1.00048828125\n1.0009765625\n1.00146484375\n65519.99\n-0\n6e-8\n3e-8\n")
        self.sortctl("sort", src, "--type", "f16", "-o", self.path("r.npy"))
        want = np.float16([1.00048828125, 1.0009765625, 1.00146484375, 65519.99, -0.0, 6e-8,
                           3e-8])
        got = np.load(self.path("r.npy"))
        np.testing.assert_array_equal(np.sort(got.view(np.uint16)),
                                      np.sort(want.view(np.uint16)))
        with open(src, "w") as f:
            f.write("1\n65520\n")
        self.fails(["sort", src, "--type", "f16", "-o", self.path("r.npy")],
                   "r.txt:2: '65520' is out of range for f16")

    def test_bf16_raw_npy_and_text(self):
        """bf16 patterns (random, and the specials) from a raw file and from '<u2' with --type
        bf16; the output keeps '<u2'; text reads back."""
        bits = self.rng.integers(0, 65536, size=5000, dtype=np.uint16)
        bits[:8] = [0, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x0001, 0x7f7f]
        raw = self.path("b.bin")
        bits.tofile(raw)
        self.sortctl("sort", raw, "--type", "bf16", "-o", self.path("o.bin"), "--desc")
        np.testing.assert_array_equal(np.fromfile(self.path("o.bin"), np.uint16),
                                      bits[order16(bits, desc=True)])
        src = self.save("b.npy", bits)
        self.sortctl("sort", src, "--type", "bf16", "-o", self.path("o.npy"), "--bits", "4:16")
        out = np.load(self.path("o.npy"))
        self.assertEqual(out.dtype, np.dtype("<u2"))
        np.testing.assert_array_equal(out, bits[order16(bits, window=(4, 16))])
        # the values as bf16 means: the top half of a float32
        self.sortctl("sort", src, "--type", "bf16", "-o", self.path("o.txt"))
        as_f32 = (bits[order16(bits)].astype(np.uint32) << 16).view(np.float32)
        text = np.array([float(x) for x in open(self.path("o.txt")).read().split()])
        nan = np.isnan(as_f32)
        normal = np.isfinite(as_f32) & (np.abs(as_f32) >= 2.0 ** -126)
        # within half a unit in the last of bf16's 8 significant bits
        self.assertTrue((np.abs(text[normal] - as_f32[normal]) <=
                         np.abs(as_f32[normal]) * 2.0 ** -8).all())
        self.sortctl("sort", self.path("o.txt"), "--type", "bf16", "-o", self.path("t.npy"))
        np.testing.assert_array_equal(np.load(self.path("t.npy"))[~nan],
                                      bits[order16(bits)][~nan])
        # '<u2' is bf16 only when --type says so; other dtypes are not
        self.fails(["sort", self.save("f.npy", bits.view(np.float16)), "--type", "bf16", "-o",
                    self.path("x.npy")], "holds f16, but --type says bf16")

    def test_topk_16_bit_floats(self):
        bits = self.rng.integers(0, 65536, size=4000, dtype=np.uint16)
        for t, largest in (("f16", False), ("bf16", True)):
            with self.subTest(t=t):
                src = self.save("k.npy", bits.view(np.float16) if t == "f16" else bits)
                args = ["topk", "-k", "50", src, "-o", self.path("o.npy"), "--indices",
                        self.path("i.npy")] + (["--largest", "--type", t] if largest else [])
                self.sortctl(*args)
                order = order16(bits, desc=largest)[:50]
                np.testing.assert_array_equal(np.load(self.path("o.npy")).view(np.uint16),
                                              bits[order])
                np.testing.assert_array_equal(np.load(self.path("i.npy")), order)

    def test_bench_16_bit_floats(self):
        """bench generates and checks 16-bit floats; 128-bit keys it cannot, and says so."""
        r = self.sortctl("bench", "--type", "f16,bf16", "--dist", "uniform,few", "--n", "3000",
                         "--payload", "none,argsort32", "--repeat", "1", "--json")
        self.assertEqual(len(r.stdout.splitlines()), 8, r.stdout)
        self.fails(["bench", "--type", "u128"], "'u128' is not one of the choices")

    # ---- u128 and i128 ----

    def test_128_bit_raw_and_npy(self):
        keys = random128(self.rng, 3000)
        for t in ("u128", "i128"):
            signed = t == "i128"
            with self.subTest(t=t, form="raw"):
                keys.tofile(self.path("k.bin"))
                self.sortctl("sort", self.path("k.bin"), "--type", t, "-o", self.path("o.bin"),
                             "--argsort", self.path("i.npy"))
                order = order128(keys, signed)
                np.testing.assert_array_equal(
                    np.fromfile(self.path("o.bin"), np.uint64).reshape(-1, 2), keys[order])
                np.testing.assert_array_equal(np.load(self.path("i.npy")), order)
            with self.subTest(t=t, form="(n, 2) <u8, descending"):
                self.sortctl("sort", self.save("k.npy", keys), "--type", t, "-o",
                             self.path("o.npy"), "--desc")
                out = np.load(self.path("o.npy"))
                self.assertEqual(out.shape, keys.shape)
                np.testing.assert_array_equal(out, keys[order128(keys, signed, desc=True)])
            with self.subTest(t=t, form="|V16, bits 60:70"):
                self.sortctl("sort", self.save("v.npy", keys.view("V16").reshape(-1)), "--type",
                             t, "-o", self.path("v.npy"), "--bits", "60:70")
                out = np.load(self.path("v.npy"))
                self.assertEqual(out.dtype, np.dtype("V16"))
                np.testing.assert_array_equal(out.view(np.uint64).reshape(-1, 2),
                                              keys[order128(keys, signed, window=(60, 70))])
            with self.subTest(t=t, form="text"):
                self.sortctl("sort", self.path("k.bin"), "--type", t, "-o", self.path("o.txt"))
                ints = [int(x) for x in open(self.path("o.txt")).read().split()]
                full = [int(h) << 64 | int(l) for l, h in keys[order128(keys, signed)]]
                if signed:
                    full = [v - (1 << 128) if v >> 127 else v for v in full]
                self.assertEqual(ints, full)
                self.sortctl("sort", self.path("o.txt"), "--type", t, "-o", self.path("b.bin"))
                np.testing.assert_array_equal(
                    np.fromfile(self.path("b.bin"), np.uint64).reshape(-1, 2),
                    keys[order128(keys, signed)])

    def test_128_bit_text_limits_and_topk(self):
        src = self.path("l.txt")
        cases = (("u128", "340282366920938463463374607431768211456", "out of range"),
                 ("i128", "170141183460469231731687303715884105728", "out of range"),
                 ("i128", "-170141183460469231731687303715884105729", "out of range"),
                 ("u128", "-1", "is not a u128"))
        for t, text, message in cases:
            with self.subTest(text=text):
                with open(src, "w") as f:
                    f.write("0\n" + text + "\n")
                self.fails(["sort", src, "--type", t, "-o", self.path("x.bin")],
                           "l.txt:2: '%s" % text[:24])
                self.fails(["sort", src, "--type", t, "-o", self.path("x.bin")], message)
        with open(src, "w") as f:
            f.write("-170141183460469231731687303715884105728\n"
                    "170141183460469231731687303715884105727\n0\n-1\n")
        self.sortctl("sort", src, "--type", "i128", "-o", self.path("l.out.txt"))
        self.assertEqual(open(self.path("l.out.txt")).read().split(),
                         ["-170141183460469231731687303715884105728", "-1", "0",
                          "170141183460469231731687303715884105727"])
        # the two smallest, by the daemon's top-k of 128-bit keys
        self.sortctl("topk", "-k", "2", src, "--type", "i128", "-o", self.path("k.txt"))
        self.assertEqual(open(self.path("k.txt")).read().split(),
                         ["-170141183460469231731687303715884105728", "-1"])

    def test_128_bit_npy_errors(self):
        keys = random128(self.rng, 10)
        cases = (
            ([self.save("v.npy", keys.view("V16").reshape(-1))],
             "holds |V16 (16 raw bytes each): give --type u128 or i128"),
            ([self.save("p.npy", keys.reshape(5, 4)), "--type", "u128"],
             "holds u64, but --type says u128"),
            ([self.save("q.npy", keys.reshape(-1)), "--type", "i128"],
             "'<u8' of shape (n, 2)"),
            ([self.save("w.npy", keys.view("V8").reshape(-1)), "--type", "u128"],
             "unsupported dtype '|V8'"),
            ([self.path("v.npy"), "--type", "u128", "--bits", "0:129"], "--bits 0:129"),
        )
        for args, message in cases:
            with self.subTest(message=message):
                self.fails(["sort", args[0], "-o", self.path("x.npy")] + args[1:], message)
        self.assertFalse(os.path.exists(self.path("x.npy")))

    # ---- record arrays ----

    def records(self, n):
        dt = np.dtype([("a", "<u4"), ("name", "S3"), ("b", ">f8"), ("c", "<i2"),
                       ("h", "<f2"), ("pad", "V3"), ("w", "<u8", (2,))])
        r = np.zeros(n, dtype=dt)
        r["a"] = self.rng.integers(0, 4, n)
        r["name"] = [b"r%02d" % (i % 100) for i in range(n)]
        r["b"] = self.rng.choice([-1.5, 0.0, -0.0, 2.25, np.inf, np.nan], n)
        r["c"] = self.rng.integers(-3, 3, n)
        r["h"] = self.rng.choice([-2, 0.5, 1, np.nan], n).astype(np.float16)
        r["w"] = random128(self.rng, n) % np.uint64(3)
        return r

    @staticmethod
    def image(r, field, kind=None):
        """A field's order-preserving image as uint64 (128-bit keys: their rank)."""
        v = r[field]
        if kind == "i128":
            full = [(int(h) ^ 1 << 63) << 64 | int(l) for l, h in v]
            ranks = {x: i for i, x in enumerate(sorted(set(full)))}
            return np.array([ranks[x] for x in full], dtype=np.uint64)
        if v.dtype.kind == "f":
            u = v.astype(v.dtype.newbyteorder("=")).view("u%d" % v.dtype.itemsize)
            top = u.dtype.type(1 << (8 * v.dtype.itemsize - 1))
            return np.where(u & top, ~u, u | top).astype(np.uint64)
        if v.dtype.kind == "i":
            return (v.astype(np.int64) + (1 << 62)).astype(np.uint64)  # small values
        return v.astype(np.uint64)

    def expect(self, r, keys):
        """np.lexsort's order of r by keys [(field, desc, kind)], the first most significant
        (a descending key as its bitwise complement: stable, as sortd's descending is)."""
        cols = []
        for field, desc, kind in reversed(keys):
            img = self.image(r, field, kind)
            cols.append(~img if desc else img)
        return np.lexsort(cols)

    def test_records_by_keys(self):
        r = self.records(3000)
        src = self.save("r.npy", r)
        cases = ([("a", False, None)],
                 [("b", True, None), ("a", False, None)],
                 [("c", True, None), ("h", False, None), ("a", True, None)],
                 [("w", True, "i128"), ("c", False, None)])
        for keys in cases:
            spec = ["--key=%s%s%s" % (f, ":desc" if d else "", ":" + k if k else "")
                    for f, d, k in keys]
            with self.subTest(keys=spec):
                self.sortctl("sort", src, "-o", self.path("o.npy"), "--argsort",
                             self.path("i.npy"), *spec)
                order = self.expect(r, keys)
                out = np.load(self.path("o.npy"))
                self.assertEqual(out.dtype, r.dtype)
                np.testing.assert_array_equal(np.load(self.path("i.npy")), order)
                self.assertEqual(out.tobytes(), r[order].tobytes())
        # the records as raw bytes, the header left out
        self.sortctl("sort", src, "-o", self.path("o.bin"), "--key", "c:asc")
        self.assertEqual(open(self.path("o.bin"), "rb").read(),
                         r[self.expect(r, [("c", False, None)])].tobytes())
        # bf16 from a '<u2' field, u128 from a '|V16' one
        g = np.zeros(2000, dtype=[("g", "<u2"), ("v", "V16")])
        g["g"] = self.rng.choice([0x3f80, 0xbf80, 0x7fc0, 0x0000, 0x8000], 2000)
        pairs = random128(self.rng, 2000) % np.uint64(3)
        g["v"] = pairs.view("V16").reshape(-1)
        self.sortctl("sort", self.save("g.npy", g), "-o", self.path("g.out.npy"),
                     "--key", "g:bf16:desc", "--key", "v:u128")
        img = image16(g["g"]).astype(np.uint64)
        v = [int(h) << 64 | int(l) for l, h in pairs]
        ranks = {x: i for i, x in enumerate(sorted(set(v)))}
        order = np.lexsort((np.array([ranks[x] for x in v], dtype=np.uint64), ~img))
        self.assertEqual(np.load(self.path("g.out.npy")).tobytes(), g[order].tobytes())
        empty = self.save("e.npy", r[:0])
        self.sortctl("sort", empty, "-o", self.path("e.out.npy"), "--key", "a")
        self.assertEqual(np.load(self.path("e.out.npy")).dtype, r.dtype)

    def test_records_errors(self):
        r = self.records(10)
        src = self.save("r.npy", r)
        nested = self.save("n.npy", np.zeros(2, dtype=[("x", [("y", "<u4")])]))
        titled = self.save("t.npy", np.zeros(2, dtype={"names": ["x"], "formats": ["<u4"],
                                                        "titles": ["T"]}))
        two_d = self.save("d.npy", np.zeros((2, 2), dtype=[("x", "<u4")]))
        plain = self.save("p.npy", np.arange(4, dtype=np.uint32))
        cases = (
            ([src], "is a structured array (fields a, name, b, c, h, pad, w): give --key"),
            ([src, "--key", "z"], "--key z: "),
            ([src, "--key", "z"], "has no such field (its fields: a, name"),
            ([src, "--key", "a", "--key", "a:desc"], "the field 'a' is a key already"),
            ([src, "--key", "a:down"], "':down' is no order or key type"),
            ([src, "--key", ":desc"], "--key :desc: no field name"),
            ([src, "--key", "name"], "--key name: the field holds no sortd key"),
            ([src, "--key", "w"], "--key w: the field holds no sortd key"),
            ([src, "--key", "a:f32"], "the field holds no f32 key"),
            ([src] + ["--key=k%d" % i for i in range(8)] + ["--key", "x"],
             "--key x: at most 8 keys"),
            ([src, "--key", "a", "--desc"], "--desc (give FIELD:desc) does not apply"),
            ([src, "--key", "a", "--type", "u32"], "--type does not apply"),
            ([src, "--key", "a", "--out", self.path("x.txt")],
             "x.txt: records are written as .npy or raw, not text"),
            ([plain, "--key", "a"], "is an array of u32 keys: leave --key out"),
            ([nested, "--key", "x"], "field 'x' is itself structured (nested)"),
            ([titled, "--key", "x"], "a field with a title"),
            ([two_d, "--key", "x"], "the structured array has 2 dimensions"),
        )
        for args, message in cases:
            with self.subTest(message=message):
                self.fails(["sort", args[0], "-o", self.path("x.npy")] + args[1:], message)
        self.fails(["topk", "-k", "2", src, "-o", self.path("x.npy")],
                   "is a structured array (records): topk takes an array of keys")
        self.fails(["sort", plain, "-o", self.path("x.npy"), "--values", src, "--values-out",
                    self.path("xv.npy")], "is a structured array (records): values are an array")
        self.assertEqual([f for f in os.listdir(self.dir) if f.startswith("x")], [])


if __name__ == "__main__":
    if not SORTD or not SORTCTL:
        print("SORTD_BIN and SORTCTL_BIN must be set (run under meson test)")
        sys.exit(77)
    unittest.main(verbosity=2)
