/* See npy_dtype.h. */
#include <stdio.h>
#include <string.h>

#include "npy_dtype.h"
#include "npy_lex.h"

/* The dtype string numpy writes for each key type it has, in sortd_key_type order:
   little-endian, then big-endian (one byte, and raw bytes, have no order). */
static const char *const NAMES[2][SORTD_KEY_TYPE_COUNT] = {
        {"|u1", "|i1", "<u2", "<i2", "<u4", "<i4", "<f4", "<u8", "<i8", "<f8", "<f2", NULL, "|V16",
         NULL},
        {"|u1", "|i1", ">u2", ">i2", ">u4", ">i4", ">f4", ">u8", ">i8", ">f8", ">f2", NULL, "|V16",
         NULL},
};

/* The most bytes one field may hold: far above any real one, and sums of 128 stay far from
   overflow. */
#define SIZE_MAX_FIELD (1ull << 40)

const char *npy_dtype_name(sortd_key_type t, bool big_endian)
{
        return (unsigned)t < SORTD_KEY_TYPE_COUNT ? NAMES[big_endian][t] : NULL;
}

/* The key type that kind and size spell, -1 for none. '|' is only numpy's for one byte and
   for raw bytes; other writers say '<' or '>' for one byte too. */
static int key_of(char order, char kind, uint64_t size)
{
        char spelled[24];

        snprintf(spelled, sizeof(spelled), "%c%c%llu", kind == 'V' ? '|' : '<', kind,
                 (unsigned long long)size);
        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++) {
                const char *n = NAMES[0][t];

                if (n && strcmp(n + 1, spelled + 1) == 0 && (order != '|' || n[0] == '|'))
                        return t;
        }
        return -1;
}

int npy_dtype_parse(const char *s, size_t len, npy_dtype *d, char *why, size_t why_len)
{
        npy_cursor c = {.p = s, .end = s + len, .why = why, .why_len = why_len};
        uint64_t size = 0;
        char shown[16], kind;
        const char *digits;

        npy_shown(s, len, shown);
        if (len < 3 || !strchr("<=>|", s[0]) || !s[0] || !s[1] || !strchr("biufcSaUVMm", s[1]))
                return npy_fail(&c, "unsupported dtype '%s'%s", shown,
                                len >= 2 && s[1] == 'O' ? ": Python objects (pickled)" : "");
        kind = s[1];
        c.p = digits = s + 2;
        while (c.p < c.end && *c.p >= '0' && *c.p <= '9' && size <= SIZE_MAX_FIELD)
                size = size * 10 + (uint64_t)(*c.p++ - '0');
        /* A datetime's unit, as in '<M8[ns]'. */
        if ((kind == 'M' || kind == 'm') && c.p < c.end && *c.p == '[' && c.end[-1] == ']')
                c.p = c.end;
        if (c.p == digits || c.p != c.end || size == 0 || size > SIZE_MAX_FIELD)
                return npy_fail(&c, "unsupported dtype '%s'", shown);
        d->key = key_of(s[0], kind, size);
        d->size = kind == 'U' ? size * 4 : size; /* UCS-4 characters */
        d->big_endian = s[0] == '>' && d->key >= 0 && size > 1;
        return 0;
}
