/*
 * Text arrays: one number per line, as seq, awk, printf and numpy.savetxt(fmt='%d' or '%r')
 * write them. Pure functions over memory, so that tests/fuzz/fuzz_text.c can fuzz them.
 *
 * Reading: a line is a number with optional spaces or tabs around it (and an optional \r
 * before its \n, for files from other systems); the last line needs no \n. Integers are
 * decimal with an optional sign ('-' only for signed types) and must fit the type, the 128-bit
 * ones included (up to 39 digits). Floats are what strtod accepts in the C locale: decimal or
 * hexadecimal (%a), "inf", "infinity", "nan", each with a sign; a finite number too large for
 * the type is refused, one too small becomes a denormal or zero as strtod rounds it. f16 and
 * bf16 are read as doubles and rounded to the nearest (ties to even, fmt_half.h). Blank lines
 * (empty, or spaces, tabs and a \r only) after the last number are ignored, as editors leave them;
 * anything else, a blank line before a number included, is a bad line.
 *
 * Writing: integers in decimal; floats with the fewest significant digits that read back to
 * the same bits, in %g's notation except that whole numbers below 10^4 (bf16), 10^5 (f16),
 * 10^9 (f32) or 10^17 (f64) are written out (2500, not 2.5e+03); -0 stays "-0", infinities are
 * "inf" and "-inf". NaNs are written "nan" or "-nan" and read back as the quiet NaN of that sign: a
 * NaN's payload bits are the one thing text does not keep.
 */
#ifndef SORTCTL_FMT_TEXT_H
#define SORTCTL_FMT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "sortd_types.h"

/* The longest number a line may hold (longer lines are refused, not cut). */
#define TEXT_MAX_TOKEN 128
/* The most bytes text_format writes for one element, its newline included. */
#define TEXT_MAX_FORMATTED 48

typedef struct text_error {
        uint64_t line;  /* 1-based */
        char what[160]; /* "'abc' is not a u32" */
} text_error;

/* How many lines buf holds: its newlines, plus one for a last line without one. */
uint64_t text_count_lines(const char *buf, size_t len);

/*
 * Parses the lines of buf as elements of type t into out, which has room for
 * text_count_lines(buf, len) of them. Returns 0 with the number of elements in *n (the lines
 * up to the last number), or -1 with the first bad line in *err.
 */
int text_parse(const char *buf, size_t len, sortd_key_type t, void *out, uint64_t *n,
               text_error *err);

/* Writes one element of type t, and a newline, into buf; returns the bytes written. */
size_t text_format(sortd_key_type t, const void *elem, char buf[TEXT_MAX_FORMATTED]);

#endif
