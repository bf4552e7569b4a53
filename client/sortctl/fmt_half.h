/*
 * The 16-bit floats as doubles and back (fmt_half.c), for text: f16 (IEEE binary16: 5 exponent
 * bits, 10 of mantissa) and bf16 (the top half of an f32: 8 and 7). Every one of their values
 * is a double exactly; a double becomes the nearest, ties to even, as a cast would.
 */
#ifndef SORTCTL_FMT_HALF_H
#define SORTCTL_FMT_HALF_H

#include <stdbool.h>
#include <stdint.h>

#include "sortd_types.h"

/* t is SORTD_KEY_F16 or SORTD_KEY_BF16. */
double half_widen(sortd_key_type t, uint16_t bits);
/* NaNs become the quiet NaN of their sign; a finite d too large becomes an infinity, and
 *overflow says so. */
uint16_t half_narrow(sortd_key_type t, double d, bool *overflow);

#endif
