/* A binning pass of the CPU engine and the decisions that shape it. */
#ifndef SORTD_CPU_PLAN_H
#define SORTD_CPU_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../keys.h"
#include "onesweep.h"

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
        /* Bucketed ranking (see rank_buckets()): per digit, the first slot and
           the slots of its bucket in the local buffer; NULL when the pass
           counts first. */
        const uint32_t *bucket_start, *bucket_cap;
        int dominant;   /* the digit of nearly every key, or -1 */
        bool direct;    /* its keys go straight to the output (rank_dominant()) */
        bool split;     /* bucket tiles split them from the others (split_dominant()) */
        uint64_t epoch; /* of the look-back's status words (lookback.h) */
} sortd__pass;

#endif
