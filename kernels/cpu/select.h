/* The CPU engine's radix select: one segment's top-k (select.c). */
#ifndef SORTD_CPU_SELECT_H
#define SORTD_CPU_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../keys.h"
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

/* Thread t's part of a segment of len keys, of nth: [part_begin(t), part_begin(t + 1)). */
static inline size_t sortd__part_begin(size_t len, unsigned t, unsigned nth)
{
        return (size_t)((unsigned __int128)len * t / nth);
}

/*
 * The first pass of a select whose bit range ends at the key's top bit (select_fused.c): the
 * first digit is then a function of the key's raw top bits (keys.h maps them by the top bit
 * alone), so the pass counts raw top bits, and it also gathers the keys a sample says lie
 * below the k-th key, each thread into its own part of the gather buffers. When the k-th key's
 * digit is among those gathered (nearly always), the select needs no second pass over the keys.
 */
typedef struct sortd__fused {
        bool on;        /* the pass applies: the range ends at the top bit */
        bool gathers;   /* it gathers too (the sample found few enough keys below) */
        unsigned shift; /* a raw key >> shift is its top bits */
        uint64_t last;  /* the largest digit gathered */
        uint16_t digit[1u << SORTD__SELECT_MAX_BITS]; /* raw top bits -> digit */
        uint8_t take[1u << SORTD__SELECT_MAX_BITS];   /* raw top bits -> gathered */
} sortd__fused;

/* Plans the first pass of `bits` bits over keys (s->keys or a copy). */
void sortd__fused_plan(const sortd__select *s, const unsigned char *keys, unsigned bits,
                       sortd__fused *f);

/* Runs it: each thread's counts of the first digit in its scratch's sel_hist, its gather's
   length in sel_fused, its least and greatest raw key in sel_min and sel_max. */
void sortd__fused_count(const sortd__select *s, const unsigned char *keys, unsigned bits,
                        const sortd__fused *f);

/* What to keep of the gathers: ranks (the range's bits of the keys' images) with rank & hi
   below prefix, and the first `take` equal to it (all of them: take = UINT64_MAX). */
typedef struct sortd__keep {
        sortd__twiddle tw;
        unsigned begin_bit;
        uint64_t range, hi, prefix, take;
} sortd__keep;

/* Moves what keep keeps of the threads' gathers, in index order, to dst_keys and dst_vals
   (which may be the gather buffers' start); returns how many. */
uint64_t sortd__fused_compact(const sortd__select *s, const sortd__keep *keep,
                              unsigned char *dst_keys, unsigned char *dst_vals);

/*
 * Writes the k first keys of the segment in the plan's order (ties by index) to out_keys, with
 * their values or indices to out_vals. keys and vals are only read. Keys that another process
 * writes meanwhile (plan->shared) never make it read or write outside these buffers: a select
 * whose passes disagree starts again from a copy of the keys.
 */
void sortd__select_topk(const sortd__select *s);

#endif
