/* The chained scan over a binning pass's tiles (lookback.c). */
#ifndef SORTD_CPU_LOOKBACK_H
#define SORTD_CPU_LOOKBACK_H

#include <stddef.h>
#include <stdint.h>

#include "onesweep.h"
#include "plan.h"

/* Opens a pass's status words: returns the epoch its words carry. */
uint64_t sortd__look_back_start(sortd__cpu_ctx *ctx);

/* The chained scan of tile t, whose counts are s->total, for every digit but
   `skip` (-1: none), whose prefix the tile found earlier
   (sortd__look_back_digit()). Leaves the tile's first output index per digit
   in s->excl. */
void sortd__look_back(const sortd__pass *p, sortd__cpu_scratch *s, size_t t, int skip);

/* The chained scan of tile t for digit d alone, which has cnt keys. */
void sortd__look_back_digit(const sortd__pass *p, sortd__cpu_scratch *s, size_t t, unsigned d,
                            uint32_t cnt);

#endif
