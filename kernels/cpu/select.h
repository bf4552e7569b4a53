/* The CPU engine's radix select: one segment's top-k (select.c). */
#ifndef SORTD_CPU_SELECT_H
#define SORTD_CPU_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onesweep.h"

/* One segment's top-k, 1 <= k < len, and where it may work. */
typedef struct sortd__select {
        sortd__cpu_ctx *ctx;
        const sortd__plan *plan;
        const unsigned char *keys; /* the segment's */
        const unsigned char *vals; /* its values; NULL unless the payload is values */
        size_t len;
        uint64_t k;
        unsigned char *out_keys, *out_vals; /* room for k results */
        /* Private memory with room for len keys and len values (the gather), and for len keys
           (a copy of keys another process changed under the select). */
        unsigned char *gather_keys, *gather_vals, *copy;
        unsigned nth;                /* threads: 1 runs on the calling thread */
        sortd__cpu_scratch *scratch; /* the nth threads' (nth = 1: the calling thread's) */
        /* ctx->own_keys may hold a gather above SORTD__SMALL_KEYS keys, which Onesweep sorts
           on every thread (the whole engine is the select's) */
        bool may_use_own_keys;
} sortd__select;

/*
 * Writes the k first keys of the segment in the plan's order (ties by index) to out_keys, with
 * their values or indices to out_vals. keys and vals are only read. Keys that another process
 * writes meanwhile (plan->shared) never make it read or write outside these buffers: a select
 * whose passes disagree starts again from a copy of the keys.
 */
void sortd__select_topk(const sortd__select *s);

#endif
