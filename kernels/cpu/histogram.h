/* The histogram pass of the CPU engine (histogram.c). */
#ifndef SORTD_CPU_HISTOGRAM_H
#define SORTD_CPU_HISTOGRAM_H

#include "onesweep.h"

/* Counts every digit place of keys [0, n) in the plan's bit range on nth
   threads: thread t's counts are ctx->scratch[t].hist, and place 0's counts
   per tile and part are ctx->tile_counts. With from, each tile of from is
   first copied into keys and the copy counted: from is read once. */
void sortd__histogram(sortd__cpu_ctx *ctx, unsigned nth, const sortd__plan *plan, const void *from,
                      void *keys, size_t n);

#endif
