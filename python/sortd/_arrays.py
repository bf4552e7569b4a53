"""What sortd accepts of an array, and the message that says what to do when it does not.
Arrays are described by their dtype and layout only, so numpy and CUDA arrays share it."""
import operator
import sys

from . import _lib

# (numpy kind, itemsize) -> sortd key type
_KEY = {("u", 1): "u8", ("i", 1): "i8", ("u", 2): "u16", ("i", 2): "i16",
        ("u", 4): "u32", ("i", 4): "i32", ("f", 4): "f32",
        ("u", 8): "u64", ("i", 8): "i64", ("f", 8): "f64", ("f", 2): "f16"}

# each sortd key type's bytes
WIDTH = {"u8": 1, "i8": 1, "u16": 2, "i16": 2, "u32": 4, "i32": 4, "f32": 4, "u64": 8,
         "i64": 8, "f64": 8, "f16": 2, "bf16": 2, "u128": 16, "i128": 16}
WIDE = ("u128", "i128")

_NATIVE = "<" if sys.byteorder == "little" else ">"


def _np():
    import numpy
    return numpy


def key_type(dtype, name=None):
    """The sortd key type (its enum value) of a numpy dtype, or of key_type=name given for
    it, or a TypeError/ValueError that says what to do. name reads the elements' bytes as
    keys of that type, which must be as wide: "bf16" for uint16 holding bfloat16 bits,
    "u128" or "i128" for 16-byte elements (V16)."""
    np = _np()
    dtype = np.dtype(dtype)
    if dtype.byteorder not in ("=", "|", _NATIVE):
        raise ValueError(f"sortd sorts native byte order; this array is {dtype.str}: "
                         f"pass a.astype(a.dtype.newbyteorder('='))")
    if name is not None:
        return _named_key_type(dtype, name)
    found = _KEY.get((dtype.kind, dtype.itemsize))
    if found is not None:
        return _lib.KEY_TYPE[found]
    if dtype.kind == "V" and dtype.itemsize == 2 and "bfloat16" in str(dtype):
        return _lib.KEY_TYPE["bf16"]  # ml_dtypes' bfloat16, as JAX and others make it
    if dtype.kind == "V" and dtype.itemsize == 16:
        raise TypeError(f"{dtype} elements could be unsigned or signed 128-bit keys: pass "
                        f"key_type='u128' or key_type='i128'")
    if dtype.kind == "b":
        raise TypeError("sortd has no bool keys: pass a.view(np.uint8)")
    if dtype.kind in "mM":
        raise TypeError(f"sortd has no {dtype} keys: pass a.view(np.int64) "
                        f"(NaT is the smallest int64)")
    raise TypeError(f"sortd cannot sort {dtype} keys: it sorts uint8..uint64, int8..int64, "
                    f"float16, float32 and float64 (and with key_type=, bfloat16 bits and "
                    f"128-bit integers)")


def _named_key_type(dtype, name):
    if name not in _lib.KEY_TYPE:
        raise ValueError(f"key_type {name!r} is not a sortd key type: one of "
                         f"{', '.join(_lib.KEY_TYPES)}")
    if dtype.hasobject or dtype.kind == "b" or dtype.fields is not None:
        raise TypeError(f"key_type={name!r} reads the elements' bytes as keys; {dtype} "
                        f"elements are not plain numbers")
    width = WIDTH[name]
    if dtype.itemsize != width:
        hint = (": pass the keys as an (n, 2) uint64 array (the low word first) or a V16 "
                "array" if name in WIDE else "")
        raise TypeError(f"key_type={name!r} sorts {width}-byte keys, and these elements are "
                        f"{dtype} ({dtype.itemsize} bytes){hint}")
    return _lib.KEY_TYPE[name]


def wide_pairs(shape, dtype, name):
    """Whether an array of this shape and dtype holds 128-bit keys of key_type name as pairs
    of 8-byte integers (its last axis, of 2: the low word first), which the client sorts as
    one key each."""
    dtype = _np().dtype(dtype)
    if name not in WIDE or dtype.itemsize != 8:
        return False
    if dtype.kind not in "ui":
        raise TypeError(f"key_type={name!r} takes pairs of uint64 or int64 words, not {dtype}")
    if len(shape) < 2 or shape[-1] != 2:
        raise ValueError(f"key_type={name!r} takes 8-byte words in pairs, the low word first: "
                         f"the array's last axis must be 2, not shape {tuple(shape)}")
    return True


def keys_of(a, name):
    """The keys of numpy array a (checked already) for key_type name: a itself, or for
    128-bit keys as word pairs a V16 view of them (its shape without the last axis), which
    writes through to a; and their key type."""
    np = _np()
    if wide_pairs(a.shape, a.dtype, name):
        a = a.view(np.dtype("V16")).reshape(a.shape[:-1])
    return a, key_type(a.dtype, name)


def key_bits(key_type):
    """The bits of a key type (its enum value)."""
    return 8 * WIDTH[_lib.KEY_TYPES[key_type]]


def value_payload(dtype):
    """The payload that moves values of this dtype: numbers of 4 or 8 bytes."""
    np = _np()
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        # A pointer moved by the daemon skips Python's reference counts, and a half-moved
        # array of them crashes the interpreter.
        raise TypeError(f"values of {dtype} hold Python objects, which sortd cannot move: "
                        f"idx = sortd.argsort(a), then a[idx] and values[idx]")
    if dtype.kind not in "iufcmM":
        raise TypeError(f"values must be numbers (integers, floats, complex, datetime64 or "
                        f"timedelta64), not {dtype}: pass values.view(np.int32) or "
                        f"np.int64 to move 4 or 8 bytes as they are")
    size = dtype.itemsize
    if size == 4:
        return _lib.PAYLOAD_VALUES32
    if size == 8:
        return _lib.PAYLOAD_VALUES64
    raise TypeError(f"values must have 4- or 8-byte elements, not {size}-byte "
                    f"{dtype}: pass values.astype(np.int32) or np.int64")


def index_payload(dtype):
    """The argsort payload for an index dtype: uint32 (n up to 2^32), uint64 or int64."""
    np = _np()
    dtype = np.dtype(dtype)
    if dtype == np.uint32:
        return _lib.PAYLOAD_ARGSORT32
    if dtype in (np.dtype(np.uint64), np.dtype(np.int64)):
        return _lib.PAYLOAD_ARGSORT64
    raise TypeError(f"index_dtype must be np.uint32, np.uint64 or np.int64, not {dtype}")


# Why sort() writes each argument it takes, and what to pass instead of a read-only one.
_WRITTEN = {
    "a": "sort() sorts it in place: pass a.copy(), or out= to leave a as it is",
    "values": "its elements move with their keys, in place: pass values.copy()",
    "out": "the sorted keys are written to it: pass a writable array, np.empty_like(a)",
}


def check_array(a, what, writable):
    """a is a numpy array sortd can use in place: at least 1-D, C-contiguous (its rows, the
    last axis, are the sorts), and writable if it must be."""
    np = _np()
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{what} must be a numpy array (or a CuPy array or PyTorch CUDA "
                        f"tensor), not {type(a).__name__}: pass np.asarray({what})")
    if isinstance(a, np.ma.MaskedArray):
        # Sorted as an ndarray, its data would move and its mask stay where it was.
        raise TypeError(f"{what} is a masked array, whose mask sortd would not move with its "
                        f"data: pass {what}.compressed() (the unmasked elements), or argsort "
                        f"{what}.filled(x) and index data and mask with the result")
    if a.ndim == 0:
        raise ValueError(f"sortd sorts arrays of at least one dimension; {what} is a scalar "
                         f"(shape ()): pass {what}.reshape(1)")
    if not a.flags.c_contiguous:
        raise ValueError(f"{what} is not contiguous (strides {a.strides}): "
                         f"pass np.ascontiguousarray({what})")
    if writable and not a.flags.writeable:
        raise ValueError(f"{what} is read-only, and {_WRITTEN[what]}")


def last_axis(shape, axis, what):
    """axis names the last axis of an array of this shape, the one sortd sorts along, or a
    ValueError says how to make it so. numpy, CuPy and PyTorch spell the move alike."""
    ndim = len(shape)
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"axis must be an integer, not {axis!r}") from None
    if not -ndim <= ax < ndim:
        raise ValueError(f"axis {axis} is out of bounds for {what} of {ndim} dimension(s)")
    if ax % ndim != ndim - 1:
        raise ValueError(
            f"sortd sorts along the last axis; axis={axis} of {what} (shape {tuple(shape)}) is "
            f"not: pass np.moveaxis({what}, {axis}, -1) (or {what}.swapaxes({axis}, -1), or "
            f"{what}.T for 2-D) made contiguous (np.ascontiguousarray, cupy.ascontiguousarray, "
            f"tensor.contiguous()), and move the result back the same way")


def rows(shape):
    """The sortd_segments of an array's rows (its last axis), or None for a 1-D array, which
    is one sort. Keep the result alive while libsortd uses it."""
    if len(shape) < 2:
        return None
    row_len = int(shape[-1])
    count = 1
    for d in shape[:-1]:
        count *= int(d)
    return _lib.Segments(count, row_len, None, 0)


def check_k(k):
    """k of a top-k: a non-negative integer."""
    try:
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"k must be an integer, not {k!r}") from None
    if k < 0:
        raise ValueError(f"k must be at least 0, not {k}")
    return k


def values_are_keys(kaddr, kbytes, vaddr, vbytes, keys):
    """Whether values at vaddr are the very bytes of the keys (keys: the argument's name), as
    in sort(a, values=a): moving them with their keys is sorting the keys, so they are left
    out. Values that overlap the keys in part are refused: the inline and pool paths write
    both back from separate copies, so whichever is written last would win, and a region
    sort cannot take overlapping spans at all."""
    if vaddr + vbytes <= kaddr or kaddr + kbytes <= vaddr:
        return False
    if vaddr == kaddr and vbytes == kbytes:
        return True
    raise ValueError(f"values overlaps {keys} in memory without being {keys} itself, so "
                     f"the sorted keys and the moved values would overwrite each other: pass "
                     f"values.copy()")


def bit_range(bits, width=64):
    """(begin_bit, end_bit) for the sort options, within width bits; None is the whole key."""
    if bits is None:
        return 0, 0
    try:
        begin, end = (int(b) for b in bits)
    except (TypeError, ValueError):
        raise TypeError(f"bits must be a (begin_bit, end_bit) pair, not {bits!r}") from None
    # Past its width the key has no bits, and past 2^32 - 1 the C unsigned would wrap to a
    # range that does: (2^32 + 4, 2^32 + 12) sorted by bits 4..12.
    if not 0 <= begin < end <= width:
        raise ValueError(f"bits {bits!r}: need 0 <= begin_bit < end_bit <= the key's width")
    return begin, end
