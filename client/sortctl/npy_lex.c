/* See npy_lex.h. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "npy_lex.h"

int npy_fail(npy_cursor *c, const char *fmt, ...)
{
        va_list ap;

        if (c->why_len) {
                va_start(ap, fmt);
                vsnprintf(c->why, c->why_len, fmt, ap);
                va_end(ap);
        }
        return -1;
}

void npy_skip_space(npy_cursor *c)
{
        while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
                c->p++;
}

bool npy_eat(npy_cursor *c, char ch)
{
        npy_skip_space(c);
        if (c->p < c->end && *c->p == ch) {
                c->p++;
                return true;
        }
        return false;
}

bool npy_word(npy_cursor *c, const char *w)
{
        size_t n = strlen(w);

        npy_skip_space(c);
        if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
                c->p += n;
                return true;
        }
        return false;
}

int npy_string(npy_cursor *c, const char **s, size_t *len)
{
        char q;
        const char *close;

        npy_skip_space(c);
        if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
                return npy_fail(c, "a string was expected in the header");
        q = *c->p++;
        close = memchr(c->p, q, (size_t)(c->end - c->p));
        if (!close || memchr(c->p, '\\', (size_t)(close - c->p)))
                return npy_fail(c, "a string in the header is not closed or has an escape");
        *s = c->p;
        *len = (size_t)(close - c->p);
        c->p = close + 1;
        return 0;
}

int npy_integer(npy_cursor *c, uint64_t *v, const char *what)
{
        uint64_t x = 0;
        const char *start;

        npy_skip_space(c);
        start = c->p;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
                unsigned d = (unsigned)(*c->p - '0');

                if (x > (UINT64_MAX - d) / 10)
                        return npy_fail(c, "a dimension in %s overflows 64 bits", what);
                x = x * 10 + d;
                c->p++;
        }
        if (c->p == start)
                return npy_fail(c, "%s is not a tuple of non-negative integers", what);
        if (c->p < c->end && *c->p == 'L')
                c->p++;
        *v = x;
        return 0;
}

int npy_tuple(npy_cursor *c, unsigned *ndim, uint64_t *dims, unsigned max, const char *what)
{
        *ndim = 0;
        if (!npy_eat(c, '('))
                return npy_fail(c, "%s is not a tuple", what);
        while (!npy_eat(c, ')')) {
                uint64_t d = 0;

                if (npy_integer(c, &d, what) < 0)
                        return -1;
                if (*ndim < max)
                        dims[*ndim] = d;
                if (*ndim == 64)
                        return npy_fail(c, "%s has more than 64 dimensions", what);
                (*ndim)++;
                if (!npy_eat(c, ',')) {
                        if (!npy_eat(c, ')'))
                                return npy_fail(c, "%s tuple is not closed", what);
                        break;
                }
        }
        return 0;
}

void npy_shown(const char *s, size_t len, char out[16])
{
        size_t show = len < 12 ? len : 12;

        for (size_t i = 0; i < show; i++)
                out[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
        out[show] = '\0';
        if (len > 12)
                strcat(out, "...");
}
