/*
 * The self-check's inputs and comparisons (selfcheck.h), shared by the sample's sorts
 * (selfcheck.c) and the shapes (selfcheck_shapes.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "selfcheck.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t next(uint64_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

/* Bit patterns that stress the key map: zeros, sign bits, all ones (NaNs
   and -1), the largest finite magnitudes, the smallest denormals. */
static uint64_t special(unsigned key_bytes, uint64_t i)
{
        unsigned bits = (key_bytes < 8 ? key_bytes : 8) * 8;
        uint64_t sign = (uint64_t)1 << (bits - 1), all = sign | (sign - 1);
        const uint64_t p[] = {0, sign, all, sign - 1, 1, sign | 1, all ^ 1, sign >> 1};

        return p[i % COUNT(p)] & all;
}

/* Uniform, low-entropy and few-distinct stretches (so equal keys test
   stability), with specials sprinkled. */
void sortd__selfcheck_fill(void *keys, void *vals, size_t n, unsigned kb, unsigned vb,
                           uint64_t seed)
{
        uint64_t s = seed * 0x9e3779b97f4a7c15ull | 1;

        for (size_t i = 0; i < n; i++) {
                uint64_t k = next(&s);
                switch (i / 1000 % 3) {
                case 1:
                        k &= next(&s) & next(&s);
                        break;
                case 2:
                        k = (k % 5) * 0x0101010101010101ull;
                        break;
                }
                if (i % 17 == 0)
                        k = special(kb, i / 17);
                memcpy((char *)keys + i * kb, &k, kb < 8 ? kb : 8); /* little-endian: low bytes */
                if (kb > 8) { /* 16 bytes: a high word of few values, so the low words decide */
                        uint64_t hi = special(8, i % 17 == 0 ? i / 17 + 3 : next(&s) % 3);

                        memcpy((char *)keys + i * kb + 8, &hi, 8);
                }
                if (vb) {
                        uint64_t v = next(&s);
                        memcpy((char *)vals + i * vb, &v, vb);
                }
        }
}

/* Index of the first element that differs, or n. */
size_t sortd__selfcheck_first_difference(const void *a, const void *b, size_t n, size_t width)
{
        for (size_t i = 0; i < n; i++)
                if (memcmp((const char *)a + i * width, (const char *)b + i * width, width) != 0)
                        return i;
        return n;
}

sortd_status sortd__selfcheck_say(char *report, size_t len, sortd_status s, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        if (len)
                vsnprintf(report, len, fmt, ap);
        va_end(ap);
        return s;
}
