/* See fmt_npy.h. */
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "fmt_npy.h"

static const char MAGIC[6] = "\x93NUMPY";

/* The dtype string numpy writes for each key type, in sortd_key_type order: little-endian,
   then big-endian (one byte has no order). */
static const char *const DESCR[2][SORTD_KEY_TYPE_COUNT] = {
        {"|u1", "|i1", "<u2", "<i2", "<u4", "<i4", "<f4", "<u8", "<i8", "<f8"},
        {"|u1", "|i1", ">u2", ">i2", ">u4", ">i4", ">f4", ">u8", ">i8", ">f8"},
};

/* A cursor over the header's text: [p, end). */
typedef struct cursor {
        const char *p, *end;
        char *why;
        size_t why_len;
} cursor;

static int fail(cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(cursor *c, const char *fmt, ...)
{
        va_list ap;

        if (c->why_len) {
                va_start(ap, fmt);
                vsnprintf(c->why, c->why_len, fmt, ap);
                va_end(ap);
        }
        return -1;
}

static void skip_space(cursor *c)
{
        while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
                c->p++;
}

static bool eat(cursor *c, char ch)
{
        skip_space(c);
        if (c->p < c->end && *c->p == ch) {
                c->p++;
                return true;
        }
        return false;
}

/* A quoted string without escapes (numpy's headers never need one): [*s, *s + *len). */
static int string(cursor *c, const char **s, size_t *len)
{
        char q;
        const char *close;

        skip_space(c);
        if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
                return fail(c, "a string was expected in the header");
        q = *c->p++;
        close = memchr(c->p, q, (size_t)(c->end - c->p));
        if (!close || memchr(c->p, '\\', (size_t)(close - c->p)))
                return fail(c, "a string in the header is not closed or has an escape");
        *s = c->p;
        *len = (size_t)(close - c->p);
        c->p = close + 1;
        return 0;
}

static bool word(cursor *c, const char *w)
{
        size_t n = strlen(w);

        skip_space(c);
        if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
                c->p += n;
                return true;
        }
        return false;
}

/* A non-negative Python int literal (Python 2's numpy wrote a trailing L), without overflow. */
static int integer(cursor *c, uint64_t *v)
{
        uint64_t x = 0;
        const char *start;

        skip_space(c);
        start = c->p;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
                unsigned d = (unsigned)(*c->p - '0');

                if (x > (UINT64_MAX - d) / 10)
                        return fail(c, "a dimension in the header's shape overflows 64 bits");
                x = x * 10 + d;
                c->p++;
        }
        if (c->p == start)
                return fail(c, "the header's shape is not a tuple of non-negative integers");
        if (c->p < c->end && *c->p == 'L')
                c->p++;
        *v = x;
        return 0;
}

/* The shape tuple: its number of dimensions and the first two of them. */
static int shape(cursor *c, unsigned *ndim, uint64_t dims[2])
{
        *ndim = 0;
        if (!eat(c, '('))
                return fail(c, "the header's shape is not a tuple");
        while (!eat(c, ')')) {
                uint64_t d = 0;

                if (integer(c, &d) < 0)
                        return -1;
                if (*ndim < 2)
                        dims[*ndim] = d;
                if (*ndim == 64)
                        return fail(c, "the header's shape has more than 64 dimensions");
                (*ndim)++;
                if (!eat(c, ',')) {
                        if (!eat(c, ')'))
                                return fail(c, "the header's shape tuple is not closed");
                        break;
                }
        }
        return 0;
}

/* The dtype string: byte order, kind, size, as numpy spells them; key type and whether its
   bytes need swapping, or refusal. */
static int dtype(cursor *c, const char *s, size_t len, sortd_key_type *t, bool *big)
{
        size_t show = len < 12 ? len : 12;
        char d[16];

        /* As the message shows it: printable, and cut when long. */
        for (size_t i = 0; i < show; i++)
                d[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
        d[show] = '\0';
        if (len > 12)
                strcat(d, "...");
        for (int i = 0; i < SORTD_KEY_TYPE_COUNT; i++) {
                /* '=' (native) is little-endian on every machine sortd runs on; '<' or '>' for
                   one byte is what other writers than numpy may say. */
                if (len == 3 && s[0] && strchr("<=>|", s[0]) &&
                    memcmp(s + 1, DESCR[0][i] + 1, 2) == 0 &&
                    (s[0] != '|' || DESCR[0][i][0] == '|')) {
                        *t = (sortd_key_type)i;
                        *big = s[0] == '>' && DESCR[0][i][0] != '|';
                        return 0;
                }
        }
        return fail(c,
                    "unsupported dtype '%s': sortctl sorts u1 i1 u2 i2 u4 i4 f4 u8 i8 f8 "
                    "(numpy's uint8 ... float64)",
                    d);
}

/* The shape sortctl takes: 1-d, or 2-d in C order (rows along the last axis). */
static int check_shape(cursor *c, bool fortran, unsigned ndim)
{
        /* A 1-d array's bytes are the same in either order; Julia's NPZ says True always. */
        if (fortran && ndim > 1)
                return fail(c, "Fortran-order arrays of more than one dimension are not "
                               "supported: sortctl sorts the rows of C-order arrays (save "
                               "np.ascontiguousarray(a))");
        if (ndim == 0)
                return fail(c, "the array has 0 dimensions (a scalar): sortctl sorts 1-d "
                               "arrays, or the rows of 2-d ones");
        if (ndim > 2)
                return fail(c,
                            "the array has %u dimensions: sortctl sorts 1-d arrays, or the rows "
                            "of 2-d ones (save a.reshape(-1, a.shape[-1]))",
                            ndim);
        return 0;
}

/* The header dict: exactly the keys descr, fortran_order and shape, in any order. */
static int dict(cursor *c, sortd_key_type *t, bool *big, unsigned *ndim, uint64_t dims[2])
{
        bool seen[3] = {false, false, false}, fortran = false;
        const char *descr = NULL;
        size_t descr_len = 0;

        if (!eat(c, '{'))
                return fail(c, "the header is not a dict");
        while (!eat(c, '}')) {
                const char *key;
                size_t kl;
                int k;

                if (string(c, &key, &kl) < 0)
                        return -1;
                k = kl == 5 && !memcmp(key, "descr", 5)             ? 0
                    : kl == 13 && !memcmp(key, "fortran_order", 13) ? 1
                    : kl == 5 && !memcmp(key, "shape", 5)           ? 2
                                                                    : -1;
                if (k < 0)
                        return fail(c, "unknown key '%.*s' in the header", kl < 32 ? (int)kl : 32,
                                    key);
                if (seen[k])
                        return fail(c, "the header has the key '%.*s' twice", (int)kl, key);
                seen[k] = true;
                if (!eat(c, ':'))
                        return fail(c, "a ':' is missing in the header");
                skip_space(c);
                if (k == 0 && c->p < c->end && *c->p == '[')
                        return fail(c, "unsupported dtype: a structured dtype (a list of fields)");
                if (k == 0 && string(c, &descr, &descr_len) < 0)
                        return -1;
                if (k == 1 && !(fortran = word(c, "True")) && !word(c, "False"))
                        return fail(c, "fortran_order in the header is neither True nor False");
                if (k == 2 && shape(c, ndim, dims) < 0)
                        return -1;
                if (!eat(c, ',')) {
                        if (!eat(c, '}'))
                                return fail(c, "the header's dict is not closed");
                        break;
                }
        }
        if (!seen[0] || !seen[1] || !seen[2])
                return fail(c, "the header lacks '%s'",
                            !seen[0]   ? "descr"
                            : !seen[1] ? "fortran_order"
                                       : "shape");
        skip_space(c);
        if (c->p != c->end)
                return fail(c, "the header has text after its dict");
        if (dtype(c, descr, descr_len, t, big) < 0)
                return -1;
        return check_shape(c, fortran, *ndim);
}

/* The shape as the header says it, for messages. */
static void shape_text(char *out, size_t len, unsigned ndim, const uint64_t dims[2])
{
        if (ndim == 1)
                snprintf(out, len, "(%llu,)", (unsigned long long)dims[0]);
        else
                snprintf(out, len, "(%llu, %llu)", (unsigned long long)dims[0],
                         (unsigned long long)dims[1]);
}

int npy_parse(const uint8_t *buf, size_t len, uint64_t file_size, npy_header *h, char *why,
              size_t why_len)
{
        cursor c = {.why = why, .why_len = why_len};
        uint64_t hlen, pre, n = 0, bytes, dims[2] = {0, 0};
        sortd_key_type t = SORTD_KEY_U8;
        unsigned ndim = 0;
        bool big = false;
        char shown[48];

        if (len > file_size)
                return fail(&c, "internal: more bytes than the file has");
        if (len < 10 || memcmp(buf, MAGIC, sizeof(MAGIC)) != 0)
                return fail(&c, "not a .npy file (no \\x93NUMPY magic)");
        if (buf[6] < 1 || buf[6] > 3 || buf[7] != 0)
                return fail(&c, "unsupported .npy version %u.%u (1.0, 2.0 and 3.0 are)", buf[6],
                            buf[7]);
        pre = buf[6] == 1 ? 10 : 12;
        if (len < pre)
                return fail(&c, "the .npy header is cut short");
        hlen = (uint64_t)buf[8] | (uint64_t)buf[9] << 8;
        if (pre == 12)
                hlen |= (uint64_t)buf[10] << 16 | (uint64_t)buf[11] << 24;
        if (hlen > NPY_MAX_HEADER)
                return fail(&c, "the .npy header is %llu bytes long, more than the %d allowed",
                            (unsigned long long)hlen, NPY_MAX_HEADER);
        if (len - pre < hlen)
                return fail(&c, "the .npy header is cut short");
        c.p = (const char *)buf + pre;
        c.end = c.p + hlen;
        if (dict(&c, &t, &big, &ndim, dims) < 0)
                return -1;
        shape_text(shown, sizeof(shown), ndim, dims);
        n = dims[0];
        if (ndim == 2 && dims[1] && dims[0] > UINT64_MAX / dims[1])
                n = UINT64_MAX;
        else if (ndim == 2)
                n = dims[0] * dims[1];
        if (n > UINT64_MAX / 8)
                return fail(&c, "the .npy header's shape %s of %s is larger than any file", shown,
                            DESCR[big][t]);
        bytes = n * sortd_key_size(t);
        if (file_size - pre - hlen != bytes)
                return fail(&c, "the .npy data is %llu bytes, but shape %s of %s needs %llu",
                            (unsigned long long)(file_size - pre - hlen), shown, DESCR[big][t],
                            (unsigned long long)bytes);
        *h = (npy_header){.type = t,
                          .big_endian = big,
                          .ndim = ndim,
                          .shape = {dims[0], ndim == 2 ? dims[1] : 0},
                          .n = n,
                          .data_offset = pre + hlen};
        return 0;
}

size_t npy_format(sortd_key_type t, bool big_endian, unsigned ndim, const uint64_t shape[2],
                  uint8_t buf[NPY_HEADER_OUT])
{
        char dict[NPY_HEADER_OUT], shown[48];
        int len;

        shape_text(shown, sizeof(shown), ndim, shape);
        len = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                       DESCR[big_endian][t], shown);
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
