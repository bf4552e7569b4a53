/* See fmt_text.h. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_half.h"
#include "fmt_text.h"

/* The 128-bit keys' arithmetic (GCC and Clang have it on every machine sortd runs on). */
__extension__ typedef unsigned __int128 u128;

uint64_t text_count_lines(const char *buf, size_t len)
{
        uint64_t n = 0;
        const char *p = buf, *end = buf + len, *nl;

        while (p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
                n++;
                p = nl + 1;
        }
        return n + (p < end);
}

/* The token as the error message quotes it: printable, and cut when long. */
static void quote(const char *s, size_t len, char *out, size_t cap)
{
        size_t j = 0, show = len > 24 ? 24 : len;

        for (size_t i = 0; i < show && j + 1 < cap; i++)
                out[j++] = isprint((unsigned char)s[i]) ? s[i] : '?';
        out[j] = '\0';
        if (show < len && cap > j + 3)
                strcat(out, "...");
}

static int bad(text_error *err, uint64_t line, const char *tok, size_t len, sortd_key_type t,
               const char *why)
{
        char q[32];

        err->line = line;
        if (len == 0) {
                snprintf(err->what, sizeof(err->what),
                         "an empty line is not a %s (blank lines may only end the file)",
                         sortd_key_type_name(t));
                return -1;
        }
        quote(tok, len, q, sizeof(q));
        snprintf(err->what, sizeof(err->what), "'%s' %s %s", q, why, sortd_key_type_name(t));
        return -1;
}

static bool is_signed(sortd_key_type t)
{
        return t == SORTD_KEY_I8 || t == SORTD_KEY_I16 || t == SORTD_KEY_I32 ||
               t == SORTD_KEY_I64 || t == SORTD_KEY_I128;
}

static bool is_float(sortd_key_type t)
{
        return t == SORTD_KEY_F16 || t == SORTD_KEY_BF16 || t == SORTD_KEY_F32 ||
               t == SORTD_KEY_F64;
}

/* A decimal integer of type t in s (NUL-terminated, no spaces): 0, -1 malformed, -2 range. */
static int parse_int(const char *s, sortd_key_type t, u128 *bits)
{
        unsigned w = (unsigned)sortd_key_size(t) * 8;
        bool neg = *s == '-';
        u128 mag = 0, limit, all = ~(u128)0;

        if (*s == '-' || *s == '+')
                s++;
        if (!*s || (neg && !is_signed(t)))
                return -1;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -1;
                if (mag > (all - (unsigned)(*s - '0')) / 10)
                        return -2;
                mag = mag * 10 + (unsigned)(*s - '0');
        }
        limit = is_signed(t) ? ((u128)1 << (w - 1)) - !neg : w == 128 ? all : ((u128)1 << w) - 1;
        if (mag > limit)
                return -2;
        *bits = neg ? 0 - mag : mag;
        return 0;
}

/* A float of type t in s: 0, -1 malformed, -2 a finite number beyond the type's range. The
   16-bit floats are read as doubles and rounded once more, to nearest. */
static int parse_float(const char *s, sortd_key_type t, void *out)
{
        char *end;
        float f = 0;
        double d;
        uint16_t h = 0;
        bool over = false;

        errno = 0;
        if (t == SORTD_KEY_F32) {
                f = strtof(s, &end);
                d = f;
        } else {
                d = strtod(s, &end);
        }
        if (end == s || *end)
                return -1;
        if (t == SORTD_KEY_F16 || t == SORTD_KEY_BF16)
                h = half_narrow(t, d, &over);
        if ((errno == ERANGE && isinf(d)) || over)
                return -2;
        if (t == SORTD_KEY_F32)
                memcpy(out, &f, sizeof(f));
        else if (t == SORTD_KEY_F64)
                memcpy(out, &d, sizeof(d));
        else
                memcpy(out, &h, sizeof(h));
        return 0;
}

/* One line's token (spaces, tabs and a \r around it removed, never empty) into elem. */
static int parse_token(const char *tok, size_t len, sortd_key_type t, void *elem, uint64_t line,
                       text_error *err)
{
        char s[TEXT_MAX_TOKEN + 1];
        u128 bits = 0;
        int r;

        if (len > TEXT_MAX_TOKEN || memchr(tok, '\0', len))
                return bad(err, line, tok, len, t, "is not a");
        memcpy(s, tok, len);
        s[len] = '\0';
        if (is_float(t)) {
                /* strtod skips leading spaces of its own; anything it skips is not ours. */
                r = isspace((unsigned char)s[0]) ? -1 : parse_float(s, t, elem);
        } else {
                r = parse_int(s, t, &bits);
                if (r == 0)
                        memcpy(elem, &bits, sortd_key_size(t)); /* little-endian: low bytes */
        }
        return r == 0 ? 0
                      : bad(err, line, tok, len, t, r == -2 ? "is out of range for" : "is not a");
}

static bool blank(char c)
{
        return c == ' ' || c == '\t' || c == '\r';
}

int text_parse(const char *buf, size_t len, sortd_key_type t, void *out, uint64_t *n,
               text_error *err)
{
        const char *p = buf, *end = buf + len, *next;
        size_t ks = sortd_key_size(t);
        /* line counts from 0, last (the last number's line) from 1: every line before the last
           number holds one, so a number on another line than last follows blank lines. */
        uint64_t line = 0, last = 0;

        for (; p < end; p = next, line++) {
                const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;

                next = nl ? nl + 1 : end;
                while (p < e && blank(*p))
                        p++;
                while (e > p && blank(e[-1]))
                        e--;
                if (e == p)
                        continue; /* fine unless a number follows */
                if (last != line)
                        return bad(err, last + 1, p, 0, t, "");
                if (parse_token(p, (size_t)(e - p), t, (uint8_t *)out + line * ks, line + 1, err) <
                    0)
                        return -1;
                last = line + 1;
        }
        *n = last;
        return 0;
}

/* The most significant digits a value of each float type needs to read back exactly. */
static int max_digits(sortd_key_type t)
{
        return t == SORTD_KEY_BF16 ? 4 : t == SORTD_KEY_F16 ? 5 : t == SORTD_KEY_F32 ? 9 : 17;
}

static bool reads_back(const char *buf, double v, sortd_key_type t)
{
        bool over;

        if (t == SORTD_KEY_F32)
                return strtof(buf, NULL) == (float)v;
        if (t == SORTD_KEY_F64)
                return strtod(buf, NULL) == v;
        return half_narrow(t, strtod(buf, NULL), &over) == half_narrow(t, v, &over);
}

/*
 * The shortest %.*g of v that reads back to the same value of type t. More digits only bring
 * a decimal closer, so the precisions that read back form a range up to max_digits, which
 * always do: a binary search finds its start in a few tries.
 */
static size_t format_float(double v, sortd_key_type t, char *buf, size_t cap)
{
        int lo = 1, hi = max_digits(t);

        if (isnan(v) || isinf(v) || v == 0)
                return (size_t)snprintf(buf, cap, "%g", v);
        char probe[32]; /* %.17g of any double fits */

        while (lo < hi) {
                int mid = (lo + hi) / 2;

                snprintf(probe, sizeof(probe), "%.*g", mid, v);
                if (reads_back(probe, v, t))
                        hi = mid;
                else
                        lo = mid + 1;
        }
        snprintf(probe, sizeof(probe), "%.*g", lo, v);
        /* %g writes 2500 as 2.5e+03; a whole number that fits the type's digits reads
           better as seq and awk write it. */
        if (strchr(probe, 'e') && atoi(strchr(probe, 'e') + 1) >= lo &&
            atoi(strchr(probe, 'e') + 1) < max_digits(t))
                lo = atoi(strchr(probe, 'e') + 1) + 1;
        return (size_t)snprintf(buf, cap, "%.*g", lo, v);
}

/* A 128-bit integer in decimal, a '-' first when it is signed and negative. */
static size_t format_128(const void *elem, bool is_signed_type, char *buf)
{
        char digits[40];
        size_t n = 0, len = 0;
        u128 v;

        memcpy(&v, elem, sizeof(v));
        if (is_signed_type && v >> 127) {
                buf[len++] = '-';
                v = 0 - v;
        }
        do {
                digits[n++] = (char)('0' + (unsigned)(v % 10));
                v /= 10;
        } while (v);
        while (n)
                buf[len++] = digits[--n];
        return len;
}

size_t text_format(sortd_key_type t, const void *elem, char buf[TEXT_MAX_FORMATTED])
{
        size_t ks = sortd_key_size(t), len;
        uint64_t u = 0;
        uint16_t h;
        float f;
        double d;

        if (ks == 16) {
                len = format_128(elem, is_signed(t), buf);
                buf[len++] = '\n';
                return len;
        }
        memcpy(&u, elem, ks);
        switch (t) {
        case SORTD_KEY_F16:
        case SORTD_KEY_BF16:
                memcpy(&h, elem, sizeof(h));
                len = format_float(half_widen(t, h), t, buf, TEXT_MAX_FORMATTED - 1);
                break;
        case SORTD_KEY_F32:
                memcpy(&f, elem, sizeof(f));
                len = format_float(f, t, buf, TEXT_MAX_FORMATTED - 1);
                break;
        case SORTD_KEY_F64:
                memcpy(&d, elem, sizeof(d));
                len = format_float(d, t, buf, TEXT_MAX_FORMATTED - 1);
                break;
        default:
                if (is_signed(t) && ks < 8 && (u >> (ks * 8 - 1) & 1))
                        u |= ~0ull << (ks * 8); /* sign-extend */
                if (is_signed(t))
                        len = (size_t)snprintf(buf, TEXT_MAX_FORMATTED - 1, "%" PRId64, (int64_t)u);
                else
                        len = (size_t)snprintf(buf, TEXT_MAX_FORMATTED - 1, "%" PRIu64, u);
                break;
        }
        buf[len++] = '\n';
        return len;
}
