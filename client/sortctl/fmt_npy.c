/* See fmt_npy.h. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "fmt_npy.h"
#include "npy_dtype.h"
#include "npy_lex.h"

static const char MAGIC[6] = "\x93NUMPY";

/* What the header's dict says, before it is checked as a whole. */
typedef struct dict_seen {
        const char *descr; /* a string descr; NULL for a structured one, in fields */
        size_t descr_len;
        bool fortran;
        unsigned ndim;
        uint64_t dims[2];
} dict_seen;

/* The descr: a dtype string, or a structured dtype's list of fields. */
static int descr(npy_cursor *c, dict_seen *d, npy_fields *fields)
{
        npy_skip_space(c);
        if (c->p < c->end && *c->p == '[')
                return npy_fields_parse(c, fields);
        return npy_string(c, &d->descr, &d->descr_len);
}

/* The dtype string of an array of keys: its key type, and whether its bytes need swapping. */
static int dtype(npy_cursor *c, const dict_seen *d, npy_header *h)
{
        npy_dtype t;
        char shown[16];

        if (npy_dtype_parse(d->descr, d->descr_len, &t, c->why, c->why_len) < 0)
                return -1;
        npy_shown(d->descr, d->descr_len, shown);
        if (t.key < 0)
                return npy_fail(c,
                                "unsupported dtype '%s': sortctl sorts u1 i1 u2 i2 u4 i4 f4 u8 "
                                "i8 f8 f2 (numpy's uint8 ... float64, float16), V16 (as u128 "
                                "or i128), and structured arrays by their fields",
                                shown);
        h->type = (sortd_key_type)t.key;
        h->layout = (npy_layout){.dtype = h->type, .big_endian = t.big_endian};
        return 0;
}

/* The shape sortctl takes: 1-d, or 2-d in C order (rows along the last axis); records 1-d. */
static int check_shape(npy_cursor *c, bool fortran, unsigned ndim, bool records)
{
        /* A 1-d array's bytes are the same in either order; Julia's NPZ says True always. */
        if (fortran && ndim > 1)
                return npy_fail(c, "Fortran-order arrays of more than one dimension are not "
                                   "supported: sortctl sorts the rows of C-order arrays (save "
                                   "np.ascontiguousarray(a))");
        if (ndim == 0)
                return npy_fail(c, "the array has 0 dimensions (a scalar): sortctl sorts 1-d "
                                   "arrays, or the rows of 2-d ones");
        if (records && ndim > 1)
                return npy_fail(c,
                                "the structured array has %u dimensions: sortctl sorts 1-d "
                                "record arrays (save a.reshape(-1))",
                                ndim);
        if (ndim > 2)
                return npy_fail(c,
                                "the array has %u dimensions: sortctl sorts 1-d arrays, or the "
                                "rows of 2-d ones (save a.reshape(-1, a.shape[-1]))",
                                ndim);
        return 0;
}

/* One key of the dict and its value: 0 descr, 1 fortran_order, 2 shape. */
static int entry(npy_cursor *c, bool seen[3], dict_seen *d, npy_fields *fields)
{
        const char *key;
        size_t kl;
        int k;

        if (npy_string(c, &key, &kl) < 0)
                return -1;
        k = kl == 5 && !memcmp(key, "descr", 5)             ? 0
            : kl == 13 && !memcmp(key, "fortran_order", 13) ? 1
            : kl == 5 && !memcmp(key, "shape", 5)           ? 2
                                                            : -1;
        if (k < 0)
                return npy_fail(c, "unknown key '%.*s' in the header", kl < 32 ? (int)kl : 32, key);
        if (seen[k])
                return npy_fail(c, "the header has the key '%.*s' twice", (int)kl, key);
        seen[k] = true;
        if (!npy_eat(c, ':'))
                return npy_fail(c, "a ':' is missing in the header");
        if (k == 0)
                return descr(c, d, fields);
        if (k == 1 && !(d->fortran = npy_word(c, "True")) && !npy_word(c, "False"))
                return npy_fail(c, "fortran_order in the header is neither True nor False");
        if (k == 2)
                return npy_tuple(c, &d->ndim, d->dims, 2, "the header's shape");
        return 0;
}

/* The header dict: exactly the keys descr, fortran_order and shape, in any order. */
static int dict(npy_cursor *c, npy_header *h, dict_seen *d)
{
        bool seen[3] = {false, false, false};

        if (!npy_eat(c, '{'))
                return npy_fail(c, "the header is not a dict");
        while (!npy_eat(c, '}')) {
                if (entry(c, seen, d, &h->fields) < 0)
                        return -1;
                if (!npy_eat(c, ',')) {
                        if (!npy_eat(c, '}'))
                                return npy_fail(c, "the header's dict is not closed");
                        break;
                }
        }
        if (!seen[0] || !seen[1] || !seen[2])
                return npy_fail(c, "the header lacks '%s'",
                                !seen[0]   ? "descr"
                                : !seen[1] ? "fortran_order"
                                           : "shape");
        npy_skip_space(c);
        if (c->p != c->end)
                return npy_fail(c, "the header has text after its dict");
        if (!h->fields.count && dtype(c, d, h) < 0)
                return -1;
        return check_shape(c, d->fortran, d->ndim, h->fields.count > 0);
}

/* The shape as the header says it, for messages and headers: a pair's axis of 2 last. */
static void shape_text(char *out, size_t len, unsigned ndim, const uint64_t dims[2], bool pairs)
{
        const char *last = pairs ? ", 2" : "";

        if (ndim == 1)
                snprintf(out, len, "(%llu,%s)", (unsigned long long)dims[0], pairs ? " 2" : "");
        else
                snprintf(out, len, "(%llu, %llu%s)", (unsigned long long)dims[0],
                         (unsigned long long)dims[1], last);
}

/* The data's length against the header's shape and element size. */
static int check_data(npy_cursor *c, npy_header *h, const dict_seen *d, uint64_t data_bytes)
{
        uint64_t n = d->dims[0], size, bytes;
        char shown[48], what[48];

        shape_text(shown, sizeof(shown), d->ndim, d->dims, false);
        if (h->fields.count)
                snprintf(what, sizeof(what), "records of %llu bytes",
                         (unsigned long long)h->fields.itemsize);
        else
                npy_shown(d->descr, d->descr_len, what);
        if (d->ndim == 2 && d->dims[1] && d->dims[0] > UINT64_MAX / d->dims[1])
                n = UINT64_MAX;
        else if (d->ndim == 2)
                n = d->dims[0] * d->dims[1];
        size = h->fields.count ? h->fields.itemsize : sortd_key_size(h->type);
        if (size && n > UINT64_MAX / 16 / size)
                return npy_fail(c, "the .npy header's shape %s of %s is larger than any file",
                                shown, what);
        bytes = n * size;
        if (data_bytes != bytes)
                return npy_fail(c, "the .npy data is %llu bytes, but shape %s of %s needs %llu",
                                (unsigned long long)data_bytes, shown, what,
                                (unsigned long long)bytes);
        h->n = n;
        h->ndim = d->ndim;
        h->shape[0] = d->dims[0];
        h->shape[1] = d->ndim == 2 ? d->dims[1] : 0;
        return 0;
}

/* The magic, the version and the header's length: the header's start and length. */
static int preamble(npy_cursor *c, const uint8_t *buf, size_t len, uint64_t *pre, uint64_t *hlen)
{
        if (len < 10 || memcmp(buf, MAGIC, sizeof(MAGIC)) != 0)
                return npy_fail(c, "not a .npy file (no \\x93NUMPY magic)");
        if (buf[6] < 1 || buf[6] > 3 || buf[7] != 0)
                return npy_fail(c, "unsupported .npy version %u.%u (1.0, 2.0 and 3.0 are)", buf[6],
                                buf[7]);
        *pre = buf[6] == 1 ? 10 : 12;
        if (len < *pre)
                return npy_fail(c, "the .npy header is cut short");
        *hlen = (uint64_t)buf[8] | (uint64_t)buf[9] << 8;
        if (*pre == 12)
                *hlen |= (uint64_t)buf[10] << 16 | (uint64_t)buf[11] << 24;
        if (*hlen > NPY_MAX_HEADER)
                return npy_fail(c, "the .npy header is %llu bytes long, more than the %d allowed",
                                (unsigned long long)*hlen, NPY_MAX_HEADER);
        if (len - *pre < *hlen)
                return npy_fail(c, "the .npy header is cut short");
        return 0;
}

int npy_parse(const uint8_t *buf, size_t len, uint64_t file_size, npy_header *h, char *why,
              size_t why_len)
{
        npy_cursor c = {.why = why, .why_len = why_len};
        uint64_t hlen = 0, pre = 0;
        dict_seen d = {0};
        npy_header out;

        if (len > file_size)
                return npy_fail(&c, "internal: more bytes than the file has");
        if (preamble(&c, buf, len, &pre, &hlen) < 0)
                return -1;
        c.p = (const char *)buf + pre;
        c.end = c.p + hlen;
        out.fields.count = 0;
        out.type = SORTD_KEY_U8;
        out.layout = (npy_layout){.dtype = SORTD_KEY_U8};
        if (dict(&c, &out, &d) < 0 || check_data(&c, &out, &d, file_size - pre - hlen) < 0)
                return -1;
        out.data_offset = pre + hlen;
        *h = out;
        return 0;
}

/* The 128-bit keys of a '<u8' array whose last axis is 2: one key a row. */
static void fold_pairs(npy_header *h)
{
        h->layout.pairs = true;
        h->ndim = 1;
        h->n = h->shape[0];
        h->shape[1] = 0;
}

int npy_retype(npy_header *h, int want, const char *option, char *why, size_t why_len)
{
        npy_cursor c = {.why = why, .why_len = why_len};
        sortd_key_type have = h->type;
        bool wide = want == SORTD_KEY_U128 || want == SORTD_KEY_I128;

        if (h->fields.count)
                return want < 0 ? 0
                                : npy_fail(&c,
                                           "is a structured array (records): %s does not "
                                           "apply; sort it by its fields with --key FIELD",
                                           option);
        if (want < 0 && have == SORTD_KEY_U128)
                return npy_fail(&c, "holds |V16 (16 raw bytes each): give %s u128 or i128", option);
        if (want < 0 || want == (int)have)
                return 0;
        if (wide && have == SORTD_KEY_U64 && h->ndim == 2 && h->shape[1] == 2)
                fold_pairs(h);
        else if (!(want == SORTD_KEY_BF16 && have == SORTD_KEY_U16) &&
                 !(wide && have == SORTD_KEY_U128))
                return npy_fail(&c, "holds %s, but %s says %s: leave %s out%s",
                                sortd_key_type_name(have), option,
                                sortd_key_type_name((sortd_key_type)want), option,
                                want == SORTD_KEY_BF16 ? " (bf16 is read from '<u2')"
                                : wide ? " (128-bit keys are read from '|V16', or from '<u8' "
                                         "of shape (n, 2), the low word first)"
                                       : "");
        h->type = (sortd_key_type)want;
        return 0;
}

npy_layout npy_layout_of(sortd_key_type t)
{
        if (t == SORTD_KEY_BF16)
                return (npy_layout){.dtype = SORTD_KEY_U16};
        if (sortd_key_size(t) == 16)
                return (npy_layout){.dtype = SORTD_KEY_U64, .pairs = true};
        return (npy_layout){.dtype = t};
}

size_t npy_format(const npy_layout *l, unsigned ndim, const uint64_t shape[2],
                  uint8_t buf[NPY_HEADER_OUT])
{
        char dict[NPY_HEADER_OUT], shown[64];
        const char *descr = npy_dtype_name(l->dtype, l->big_endian);
        int len;

        shape_text(shown, sizeof(shown), ndim, shape, l->pairs);
        len = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                       descr ? descr : "|V16", shown);
        /* Pad with spaces and a final newline so that the data starts at a multiple of 64. */
        size_t total = ((size_t)len + 10 + 1 + 63) & ~(size_t)63, hlen = total - 10;

        memcpy(buf, MAGIC, sizeof(MAGIC));
        buf[6] = 1;
        buf[7] = 0;
        buf[8] = (uint8_t)hlen;
        buf[9] = (uint8_t)(hlen >> 8);
        memcpy(buf + 10, dict, (size_t)len);
        memset(buf + 10 + len, ' ', hlen - (size_t)len - 1);
        buf[total - 1] = '\n';
        return total;
}

/* Reverses the bytes of each of n elements of size bytes, on a little-endian machine (the only
   kind sortd runs on): the element sits in v's low bytes, and after the swap in its high ones.
   size is a constant where this is inlined, so that each element is one load, bswap and store
   (objdump -d client/libsortctl-formats.a). */
static inline __attribute__((always_inline)) void swap_each(uint8_t *p, uint64_t n, size_t size)
{
        for (uint64_t i = 0; i < n; i++, p += size) {
                uint64_t v = 0;

                memcpy(&v, p, size);
                v = __builtin_bswap64(v) >> (64 - 8 * size);
                memcpy(p, &v, size);
        }
}

void npy_byteswap(void *data, uint64_t n, size_t size)
{
        if (size == 2)
                swap_each(data, n, 2);
        else if (size == 4)
                swap_each(data, n, 4);
        else if (size == 8)
                swap_each(data, n, 8);
}

void npy_to_native(const npy_layout *l, void *data, uint64_t bytes)
{
        size_t size = sortd_key_size(l->dtype);

        if (l->big_endian && size > 1)
                npy_byteswap(data, bytes / size, size);
}
