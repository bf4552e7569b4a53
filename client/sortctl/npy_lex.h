/*
 * The tokens of a .npy header's Python literal (npy_lex.c), for the header's dict (fmt_npy.c)
 * and a structured dtype's list of fields (npy_fields.c): a cursor over [p, end) that never
 * reads past end, and whose failures write their reason into why.
 */
#ifndef SORTCTL_NPY_LEX_H
#define SORTCTL_NPY_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct npy_cursor {
        const char *p, *end;
        char *why;
        size_t why_len;
} npy_cursor;

/* Writes the reason into c->why and returns -1. */
int npy_fail(npy_cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void npy_skip_space(npy_cursor *c);
/* Takes ch after optional spaces: true if it was there. */
bool npy_eat(npy_cursor *c, char ch);
/* Takes the word w after optional spaces: true if it was there. */
bool npy_word(npy_cursor *c, const char *w);
/* A quoted string without escapes (numpy's headers never need one): [*s, *s + *len). */
int npy_string(npy_cursor *c, const char **s, size_t *len);
/* A non-negative Python int literal (Python 2's numpy wrote a trailing L), without overflow;
   what names the number in the failure's message. */
int npy_integer(npy_cursor *c, uint64_t *v, const char *what);
/*
 * A tuple of non-negative integers: how many (at most 64) and the first max of them in dims;
 * what names it in messages ("the header's shape").
 */
int npy_tuple(npy_cursor *c, unsigned *ndim, uint64_t *dims, unsigned max, const char *what);
/* s[0, len) as a message shows it: printable, cut after 12 bytes. */
void npy_shown(const char *s, size_t len, char out[16]);

#endif
