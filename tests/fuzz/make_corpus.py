#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz (run once; the files are committed, and entries the
fuzzer found are added beside them). npy entries start with the 8 bytes fuzz_npy.c reads as
the extra file size (zero: the file is the rest); text entries with the key-type byte; request
entries are the messages of tests/daemon/corpus's frames behind fuzz_request.c's limits byte
and payload length, and sorts by key columns built here; region entries are fuzz_region.c's programs; engine entries
fuzz_engine.c's 8-byte request head and the bytes keys are made of; segments entries fuzz_segments.c's head and offsets."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def npy(dict_text, payload=b"", version=1, pad=True, hlen=None):
    pre = 10 if version == 1 else 12
    if pad:
        dict_text += " " * ((64 - (pre + len(dict_text) + 1) % 64) % 64) + "\n"
    h = dict_text.encode("latin-1")
    n = len(h) if hlen is None else hlen
    size = struct.pack("<H", n) if version == 1 else struct.pack("<I", n)
    return b"\x93NUMPY" + bytes([version, 0]) + size + h + payload


def d(descr="<u4", fortran="False", shape="(4,)"):
    return "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)


NPY = {
    "u4": npy(d(), b"\1\0\0\0" * 4),
    "u1": npy(d("|u1"), b"\3\2\1\0"),
    "i1": npy(d("|i1", shape="(0,)")),
    "f8_v2": npy(d("<f8", shape="(1,)"), b"\0" * 8, version=2),
    "i8_v3": npy(d("<i8", shape="(2,)"), b"\0" * 16, version=3),
    "f4_native": npy(d("=f4", shape="(1,)"), b"\0" * 4),
    "keys_reordered": npy("{'shape': (2,), 'fortran_order': False, 'descr': '<u2'}", b"\0" * 4),
    "double_quotes": npy('{"descr": "<i2", "fortran_order": False, "shape": (1,)}', b"\0" * 2),
    "py2_long": npy(d(shape="(1L,)"), b"\0" * 4),
    "big_endian": npy(d(">u4"), b"\0" * 16),
    "big_endian_f8": npy(d(">f8", shape="(2,)"), b"\0" * 16),
    "big_endian_u1": npy(d(">u1"), b"\0" * 4),
    "big_endian_f2": npy(d(">f2"), b"\0" * 8),
    "fortran": npy(d(fortran="True"), b"\0" * 16),
    "fortran_2d": npy(d(fortran="True", shape="(2, 2)"), b"\0" * 16),
    "f2": npy(d("<f2"), b"\0" * 8),
    "descr_nul": npy(d("\0u4"), b"\0" * 16),
    "bool": npy(d("|b1"), b"\0" * 4),
    "unicode": npy(d("<U10"), b"\0" * 160),
    "structured": npy("{'descr': [('a', '<u4')], 'fortran_order': False, 'shape': (1,), }",
                      b"\0" * 4),
    "two_d": npy(d(shape="(2, 2)"), b"\0" * 16),
    "scalar": npy(d(shape="()"), b"\0" * 4),
    "overflow_shape": npy(d(shape="(99999999999999999999999,)")),
    "huge_n": npy(d("<u8", shape="(2305843009213693952,)")),
    "short_data": npy(d(), b"\0" * 15),
    "long_data": npy(d(), b"\0" * 17),
    "hlen_past_end": npy(d(), hlen=60000),
    "hlen_huge_v2": npy(d(), version=2, hlen=0xFFFFFFFF),
    "hlen_zero": npy("", pad=False),
    "version_4": npy(d(), version=4),
    "bad_magic": b"\x93NUMPZ\x01\x00" + b"\0" * 60,
    "magic_only": b"\x93NUMPY",
    "unclosed_string": npy("{'descr: '<u4', }"),
    "escape": npy("{'descr': '<u\\4', 'fortran_order': False, 'shape': (4,), }"),
    "duplicate_key": npy("{'descr': '<u4', 'descr': '<u4', 'fortran_order': False, 'shape': (1,)}"),
    "unknown_key": npy("{'descr': '<u4', 'fortran_order': False, 'shape': (1,), 'x': 1}"),
    "missing_shape": npy("{'descr': '<u4', 'fortran_order': False}"),
    "trailing_text": npy(d() + " junk"),
    "fortran_maybe": npy(d(fortran="Maybe")),
    "shape_unclosed": npy("{'descr': '<u4', 'fortran_order': False, 'shape': (4,"),
    "shape_negative": npy(d(shape="(-4,)")),
    "many_dims": npy(d(shape="(" + "1," * 70 + ")")),
    "not_a_dict": npy("['descr', '<u4']"),
    "v16_untyped": npy(d("|V16", shape="(2,)"), b"\0" * 32),
    "f2_2d_big": npy(d(">f2", shape="(2, 3)"), b"\0" * 12),
    "records": npy("{'descr': [('a', '<u4'), ('b', '>f8'), ('', '|V4'), ('s', '|S3'), "
                   "('w', '<u8', (2,)), ('t', '<M8[ns]'), ('u', '<U2')], 'fortran_order': False, "
                   "'shape': (2,), }", b"\0" * 2 * 51),
    "records_sub_array": npy("{'descr': [('m', '<f4', (2, 3)), ('z', '<i2', ())], "
                             "'fortran_order': False, 'shape': (1,), }", b"\0" * 26),
    "records_nested": npy("{'descr': [('x', [('y', '<u4')])], 'fortran_order': False, "
                          "'shape': (1,), }", b"\0" * 4),
    "records_title": npy("{'descr': [(('T', 'x'), '<u4')], 'fortran_order': False, "
                         "'shape': (1,), }", b"\0" * 4),
    "records_twice": npy("{'descr': [('x', '<u4'), ('x', '<u2')], 'fortran_order': False, "
                         "'shape': (1,), }", b"\0" * 6),
    "records_object": npy("{'descr': [('x', '|O')], 'fortran_order': False, "
                          "'shape': (1,), }", b"\0" * 8),
    "records_empty": npy("{'descr': [], 'fortran_order': False, 'shape': (1,), }"),
    "records_unclosed": npy("{'descr': [('x', '<u4'), 'fortran_order': False, "
                            "'shape': (1,), }", b"\0" * 4),
    "records_2d": npy("{'descr': [('x', '<u4')], 'fortran_order': False, "
                      "'shape': (2, 2), }", b"\0" * 16),
    "records_huge_sub_array": npy("{'descr': [('x', '<u8', (99999999999, 99999999999))], "
                                  "'fortran_order': False, 'shape': (1,), }"),
}

# Entries with the key type the command line gives (fuzz_npy.c: the byte above the file
# size's 40 bits, the type plus one): how npy_retype reads what numpy has no dtype for.
KEY = {"u16": 2, "u64": 7, "f16": 10, "bf16": 11, "u128": 12, "i128": 13}
NPY_TYPED = {
    "bf16_from_u2": (KEY["bf16"], npy(d("<u2"), b"\0" * 8)),
    "bf16_from_u2_big": (KEY["bf16"], npy(d(">u2", shape="(2, 2)"), b"\0" * 8)),
    "bf16_from_f2": (KEY["bf16"], npy(d("<f2"), b"\0" * 8)),
    "u128_from_v16": (KEY["u128"], npy(d("|V16", shape="(2,)"), b"\0" * 32)),
    "i128_from_pairs": (KEY["i128"], npy(d("<u8", shape="(2, 2)"), b"\0" * 32)),
    "u128_from_pairs_big": (KEY["u128"], npy(d(">u8", shape="(1, 2)"), b"\0" * 16)),
    "u128_from_u8_rows_of_3": (KEY["u128"], npy(d("<u8", shape="(2, 3)"), b"\0" * 48)),
    "u128_from_1d_u8": (KEY["u128"], npy(d("<u8", shape="(2,)"), b"\0" * 16)),
    "f16_typed": (KEY["f16"], npy(d("<f2"), b"\0" * 8)),
    "records_typed": (KEY["u64"], npy("{'descr': [('x', '<u8')], 'fortran_order': False, "
                                      "'shape': (1,), }", b"\0" * 8)),
}

T = {"u8": 0, "i8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "u64": 7, "i64": 8,
     "f64": 9, "f16": 10, "bf16": 11, "u128": 12, "i128": 13}

TEXT = {
    "u32_plain": (T["u32"], b"1\n2\n3\n4294967295\n0\n"),
    "u32_no_final_newline": (T["u32"], b"7\n8"),
    "u32_spaces_crlf": (T["u32"], b"  1\t\r\n\t2 \r\n"),
    "u8_out_of_range": (T["u8"], b"255\n256\n"),
    "i8_limits": (T["i8"], b"-128\n127\n+5\n"),
    "i8_below": (T["i8"], b"-129\n"),
    "i64_limits": (T["i64"], b"-9223372036854775808\n9223372036854775807\n"),
    "u64_overflow": (T["u64"], b"18446744073709551616\n"),
    "u16_negative": (T["u16"], b"-0\n"),
    "empty_line": (T["i32"], b"1\n\n2\n"),
    "trailing_blank_lines": (T["i32"], b"1\n2\n\n \t\r\n\n"),
    "blank_lines_then_number": (T["i32"], b"1\n\n \n2\n\n"),
    "empty_file": (T["i32"], b""),
    "only_newline": (T["u32"], b"\n"),
    "sign_only": (T["i32"], b"-\n"),
    "letters": (T["u32"], b"12\nabc\n"),
    "hex_int": (T["u32"], b"0x10\n"),
    "nul_byte": (T["u32"], b"1\x002\n"),
    "long_line": (T["u64"], b"1" * 200 + b"\n"),
    "binary_garbage": (T["i16"], bytes(range(256))),
    "f64_specials": (T["f64"], b"-0\n0\ninf\n-inf\nnan\n-nan\nInfinity\nNAN(123)\n"),
    "f64_forms": (T["f64"], b"1.5\n1e-310\n0x1p-3\n2.5e3\n.5\n5.\n-1E+2\n"),
    "f64_overflow": (T["f64"], b"1e309\n"),
    "f64_underflow": (T["f64"], b"1e-400\n"),
    "f32_overflow": (T["f32"], b"3.5e38\n"),
    "f32_denormal": (T["f32"], b"1e-45\n1.4e-45\n"),
    "f32_trailing": (T["f32"], b"1.5x\n"),
    "f64_leading_space_in_token": (T["f64"], b"1 2\n"),
    "f64_long_digits": (T["f64"], b"0." + b"3" * 120 + b"\n"),
    "f16_forms": (T["f16"], b"1\n-0\n65504\n65519.99\n6e-8\n3e-8\n2.98e-8\n1.00048828125\n"
                  b"0x1.ffcp15\n-nan\ninf\n"),
    "f16_overflow": (T["f16"], b"65520\n"),
    "f16_denormals": (T["f16"], b"5.96e-8\n6.1e-5\n6.0975552e-05\n1e-10\n"),
    "bf16_forms": (T["bf16"], b"1\n3.39e38\n1e-40\n-0.1\nnan\n-inf\n9.2e-41\n"),
    "bf16_overflow": (T["bf16"], b"3.4e38\n"),
    "u128_limits": (T["u128"], b"0\n340282366920938463463374607431768211455\n"
                    b"18446744073709551616\n"),
    "u128_overflow": (T["u128"], b"340282366920938463463374607431768211456\n"),
    "u128_negative": (T["u128"], b"-1\n"),
    "i128_limits": (T["i128"], b"-170141183460469231731687303715884105728\n"
                    b"170141183460469231731687303715884105727\n-1\n+7\n"),
    "i128_overflow": (T["i128"], b"170141183460469231731687303715884105728\n"),
    "i128_below": (T["i128"], b"-170141183460469231731687303715884105729\n"),
    "i128_long": (T["i128"], b"9" * 60 + b"\n"),
}


FRAME_HEADER = 20  # magic 4, version 2, flags 2, message length 4, payload length 8


def requests():
    """(name, entry) for each frame of tests/daemon/corpus that carries a whole message."""
    frames = os.path.join(HERE, "..", "daemon", "corpus")
    for name in sorted(os.listdir(frames)):
        with open(os.path.join(frames, name), "rb") as f:
            data = f.read()[1:]  # the read-size byte
        if len(data) < FRAME_HEADER or data[:4] != b"SRTD":
            continue
        mlen, plen = struct.unpack_from("<IQ", data, 8)
        msg = data[FRAME_HEADER:FRAME_HEADER + mlen]
        if len(msg) == mlen:
            yield name, bytes([0x54]) + struct.pack("<Q", plen) + msg


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, value):
    """A protobuf field: an int is a varint, bytes a length-delimited message."""
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    return varint(num << 3 | 2) + varint(len(value)) + value


def column(key_type, order=0, begin=0, end=0):
    """A Sort.columns entry (sortd.proto's Column): fields 1 to 4, zeros left out."""
    return b"".join(field(i + 1, v) for i, v in enumerate((key_type, order, begin, end)) if v)


def columns_request(cols, payload, n, region=None, **extra):
    """fuzz_request.c's entry of a Sort by key columns: limits byte 0xF4 (capacity 2^20,
    max-request-bytes 8 KiB) and the payload length the columns and values need (none for a
    region sort); extra sets Sort's other fields by number (to be refused)."""
    sizes = {1: 1, 2: 1, 3: 2, 4: 2, 5: 4, 6: 4, 7: 4, 8: 8, 9: 8, 10: 8, 11: 2, 12: 2, 13: 16,
             14: 16}
    buffer = sum((n * sizes.get(c[0], 0) + 15) // 16 * 16 for c in cols)
    vals = n * {1: 0, 2: 4, 3: 8, 4: 0, 5: 0}.get(payload, 0)
    sort = field(2, payload) + field(6, n)
    sort += field(8, field(1, region[0]) + field(2, region[1])) if region else field(7, b"")
    for num, value in sorted(extra.items()):
        sort += field(int(num[1:]), value)
    sort += b"".join(field(13, column(*c)) for c in cols)
    plen = 0 if region else buffer + vals
    return bytes([0xF4]) + struct.pack("<Q", plen) + field(1, 1) + field(3, sort)


# Key types and payloads as the wire numbers them (sortd.proto: the engine's plus one).
U8, I16, U32, F32, U64, F64, F16, BF16, U128, I128 = 1, 4, 5, 7, 8, 10, 11, 12, 13, 14
NONE, V32, V64, ARG32, ARG64 = 1, 2, 3, 4, 5

COLUMNS = {
    "columns_two_values": columns_request([(U32, 1), (F64,)], V32, 10),
    "columns_three_argsort": columns_request([(I16, 0, 2, 14), (U128, 1), (BF16,)], ARG32, 7),
    "columns_eight": columns_request([(U8,), (I16, 1), (U32,), (F16, 1), (F32,), (U64,),
                                      (I128, 1), (U8, 0, 0, 4)], ARG64, 5),
    "columns_region": columns_request([(F16, 1), (I128,)], V64, 9, region=(1, 32)),
    "columns_nine": columns_request([(U8,)] * 9, NONE, 3),
    "columns_unknown_type": columns_request([(U32,), (15,)], NONE, 3),
    "columns_bits_past_width": columns_request([(U8, 0, 0, 9)], NONE, 3),
    "columns_with_key_type": columns_request([(U32,)], NONE, 3, f1=U32),
    "columns_with_k": columns_request([(U32,)], NONE, 3, f11=2),
}


def add(what, size, claim=None, seal=True):
    """fuzz_region.c's add: a memfd (sealing allowed, shrink-sealed unless seal is False) of
    size bytes, the request claiming claim (default: size)."""
    flags = 2 | (4 if seal else 0)
    out = bytes([0, flags | what]) + struct.pack("<H", size)
    return out + (b"\1" + struct.pack("<Q", claim) if claim is not None else b"\0")


def span(rid, offset, count, elem):
    return bytes([1, rid, 0]) + struct.pack("<H", offset) + b"\0" + struct.pack("<H", count) + \
        bytes([elem])


REGION = {
    "add_span_remove": add(0, 4096) + span(1, 64, 100, 3) + bytes([2, 1]),
    "span_past_end": add(0, 4096) + span(1, 4000, 100, 3),
    "claim_differs": add(0, 4096, claim=8192),
    "unsealed": add(0, 4096, seal=False),
    "write_sealed": add(16, 4096),
    "not_memfd": bytes([0, 8]),
    "held_then_removed": add(0, 8192) + bytes([3, 1]) + bytes([2, 1]),
    "over_the_limit": add(0, 65535) * 5,
    "unknown_id": add(0, 4096) + span(9, 0, 1, 0) + bytes([2, 7]),
}


def engine(key_type, payload, order, begin, end, n, data, small=0):
    return bytes([key_type, payload, order, begin, end]) + struct.pack("<H", n) + \
        bytes([small]) + data


ENGINE = {
    "u32_values32": engine(4, 1, 0, 0, 0, 1000, bytes(range(256)) * 4),
    "f64_argsort64_desc_bits": engine(9, 4, 1, 3, 40, 9000, bytes(range(255, 0, -1)) * 3),
    "u8_over_capacity": engine(0, 0, 0, 0, 0, 16385, b"\7\1\200"),
    "i16_small_one": engine(3, 2, 0, 0, 0, 1, b"\1\2"),
    "i64_values64_small": engine(8, 2, 1, 0, 0, 700, bytes(range(200)), small=1),
    "bad_bits": engine(7, 0, 0, 40, 20, 100, b"x"),
    "bad_enum": engine(10, 5, 2, 0, 0, 50, b"y"),
    # byte 7 bits 1-2: 2 a segmented sort, 3 a top-k; bit 3 u64 offsets, 4 rows, 5 long segments
    # segments of 29 to 31 keys (the insertion sort's), five distinct keys: ties in each
    "seg_u32_argsort32": engine(4, 3, 0, 0, 0, 3000, bytes([30, 31, 30, 31, 29]) * 100, small=4),
    "seg_f32_rows_desc": engine(6, 2, 1, 0, 0, 5000, bytes(range(200, 0, -7)) * 20, small=4 | 16),
    "topk_i64_values64_u64": engine(8, 2, 0, 0, 0, 4000, bytes(range(7, 255, 5)) * 30,
                                    small=6 | 8),
    "topk_u16_long_bits": engine(2, 4, 1, 2, 14, 16000, bytes([3, 1, 200, 9, 77]) * 50,
                                 small=6 | 32),
    # f16 10, bf16 11, u128 12, i128 13 (the engine's numbers); 128-bit keys by bits across
    # bit 64 and past the width; their segmented sorts and top-k, which the engines refuse
    "f16_values64_desc": engine(10, 2, 1, 0, 0, 3000, bytes(range(0, 256, 3)) * 5),
    "bf16_argsort32_bits": engine(11, 3, 0, 2, 14, 9000, bytes(range(255, 0, -5)) * 4),
    "u128_values32": engine(12, 1, 0, 0, 0, 500, bytes(range(256)) * 3, small=1),
    "i128_argsort64_across_64": engine(13, 4, 1, 60, 70, 2000, bytes([0, 255, 128, 127, 1]) * 40),
    "i128_past_width": engine(13, 0, 0, 0, 129, 100, b"z"),
    "seg_bf16_offsets": engine(11, 3, 0, 0, 0, 3000, bytes([30, 31, 30, 31, 29]) * 100, small=4),
    "seg_u128_rows": engine(12, 2, 1, 0, 0, 5000, bytes(range(200, 0, -7)) * 20, small=4 | 16),
    "topk_u128_values64": engine(12, 2, 0, 0, 0, 4000, bytes(range(7, 255, 5)) * 30, small=6 | 8),
}


def segments(form, count, n, row_len, k, offsets=(), width=4):
    head = bytes([form]) + struct.pack("<H", count) + struct.pack("<I", n)[:3] + \
        struct.pack("<HH", row_len, k)
    return head + b"".join(struct.pack("<I" if width == 4 else "<Q", o) for o in offsets)


SEGMENTS = {
    "rows": segments(8, 100, 0, 7, 3),
    "rows_not_n": segments(0, 4, 13, 3, 1),
    "offsets32": segments(3, 4, 9, 0, 2, (0, 0, 3, 3, 9)),
    "offsets64": segments(2, 3, 8, 0, 5, (0, 5, 5, 8), width=8),
    "offsets_down": segments(3, 3, 8, 0, 1, (0, 5, 4, 8)),
    "offsets_past": segments(3, 2, 8, 0, 1, (0, 9, 8)),
    "offsets_with_row_len": segments(7, 2, 8, 4, 1, (0, 4, 8)),
    "width_for_rows": segments(5, 2, 8, 4, 1),
}


def write(kind, entries):
    os.makedirs(os.path.join(HERE, "corpus", kind), exist_ok=True)
    for name, data in entries:
        with open(os.path.join(HERE, "corpus", kind, name), "wb") as f:
            f.write(data)


def main():
    write("request", requests())
    write("request", COLUMNS.items())
    write("region", REGION.items())
    write("engine", ENGINE.items())
    write("segments", SEGMENTS.items())
    for name, data in NPY.items():
        with open(os.path.join(HERE, "corpus", "npy", name), "wb") as f:
            f.write(b"\0" * 8 + data)
    for name, (t, data) in NPY_TYPED.items():
        with open(os.path.join(HERE, "corpus", "npy", name), "wb") as f:
            f.write(struct.pack("<Q", (t + 1) << 40) + data)
    for name, (t, data) in TEXT.items():
        with open(os.path.join(HERE, "corpus", "text", name), "wb") as f:
            f.write(bytes([t]) + data)


if __name__ == "__main__":
    main()
