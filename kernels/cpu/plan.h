/* Planning a sort of the CPU engine, and the binning pass it plans (plan.c). */
#ifndef SORTD_CPU_PLAN_H
#define SORTD_CPU_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../keys.h"
#include "onesweep.h"

/* One binning pass: its buffers and the decisions that shape it. */
typedef struct sortd__pass {
        sortd__cpu_ctx *ctx;
        const unsigned char *src_k, *src_v;
        unsigned char *dst_k, *dst_v;
        size_t n, ntiles;
        unsigned key_bytes, val_bytes;
        bool gen_index;  /* argsort's first pass: values are the input positions */
        bool stream;     /* full lines go out with non-temporal stores */
        bool twiddle;    /* load_tw or store_tw is not the identity */
        bool precounted; /* the tiles' counts are ctx->tile_counts (place 0, first pass) */
        unsigned shift;
        uint64_t mask;
        sortd__twiddle load_tw, store_tw;
        const uint64_t *goff; /* global exclusive offsets of this place */
        /* Tiles are ranked straight into buckets (sortd__rank_buckets()),
           digit d's from slot bucket_start[d] of the local buffer, with room
           for bucket_cap[d] keys; otherwise every tile counts first. */
        bool buckets;
        uint32_t bucket_start[SORTD__RADIX], bucket_cap[SORTD__RADIX];
        int dominant; /* the digit of nearly every key, or -1 */
        bool direct;  /* its keys go straight to the output (rank.c) */
        bool split;   /* bucket tiles split them from the others (sortd__split_dominant()) */
        /* The keys may not be what goff counted: another process writes them, or wrote the
           ones the sort started from (onesweep.c). Each tile's ranking is checked against its
           counts and the tiles' counts are summed (sortd__bin_pass() then says whether the
           pass moved every key exactly once), and no key goes straight to the output. */
        bool checked;
        uint64_t epoch; /* of the look-back's status words (lookback.h) */
} sortd__pass;

/* What decides a binning pass. */
typedef struct sortd__pass_in {
        const sortd__plan *plan;
        size_t n;
        unsigned index, passes; /* the pass is number `index` of the sort's `passes` */
        unsigned place;         /* its digit place: bits begin_bit + 8 * place and up */
        const uint64_t *goff;   /* the place's global exclusive offsets */
        bool split512;          /* the CPU has AVX-512F (sortd__cpu_ctx.split512) */
        /* The caller's keys lie at multiples of their width: a key across a
           line would split its non-temporal store. */
        bool keys_aligned;
        bool checked; /* sortd__pass.checked */
} sortd__pass_in;

/* How many of an engine's `threads` sort n keys. */
unsigned sortd__plan_threads(unsigned threads, size_t n);

/* Sums the first nth threads' histograms (scratch[t].hist) into exclusive
   offsets per place, goff[k], and lists in `places` the places that need a
   pass: those with more than one non-empty digit. Returns how many do. */
unsigned sortd__plan_places(const sortd__cpu_scratch *scratch, unsigned nth, unsigned nplaces,
                            uint64_t (*goff)[SORTD__RADIX], unsigned *places);

/* Decides pass in->index: sets every field of *p but ctx, the buffers and
   the epoch, which are the caller's and sortd__bin_pass()'s. */
void sortd__pass_make(const sortd__pass_in *in, sortd__pass *p);

#endif
