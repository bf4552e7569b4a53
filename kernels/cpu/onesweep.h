/* The CPU Onesweep engine's internals, shared with its white-box tests. */
#ifndef SORTD_CPU_ONESWEEP_H
#define SORTD_CPU_ONESWEEP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../engine_impl.h"
#include "policy.h"
#include "pool.h"

/* Per-thread working memory, reused by every tile the thread takes. */
typedef struct sortd__cpu_scratch {
        /* A tile's keys and values ranked by digit. */
        _Alignas(SORTD__LINE) unsigned char local_k[SORTD__LOCAL_KEYS * 8];
        unsigned char local_v[SORTD__LOCAL_KEYS * 8];
        uint64_t hist[SORTD__MAX_PLACES][SORTD__RADIX];
        /* Histogram pass, places 1 and up. */
        uint32_t hc[SORTD__HIST_SETS][SORTD__MAX_PLACES][SORTD__HIST_ROW];
        uint32_t counts[SORTD__STREAMS][SORTD__RADIX]; /* per part of the tile */
        uint32_t counts2[SORTD__STREAMS][SORTD__RADIX];
        uint32_t total[SORTD__RADIX];
        uint32_t local_off[SORTD__STREAMS][SORTD__RADIX]; /* next free slot in local_k */
        uint64_t excl[SORTD__RADIX]; /* the tile's first output index per digit */
        /* A checked pass (plan.h): the thread's tiles' counts summed, and whether a tile's
           ranking did not fill the slots its counts gave it. */
        uint64_t seen[SORTD__RADIX];
        bool torn;
        /* A radix select (select.c): this thread's counts of its part of a segment, the keys
           it holds before the chosen bucket and in it, and what its gather found. */
        uint64_t sel_hist[1u << SORTD__SELECT_MAX_BITS];
        uint64_t sel_below, sel_cand, sel_take, sel_off, sel_fused;
        uint64_t sel_min, sel_max; /* of the ranks (raw keys: first pass) it counted */
        bool sel_torn;
        /* Small sorts of keys alone go through the sorting network: the CPU has AVX-512F
           (network.h). */
        bool network;
} sortd__cpu_scratch;

/* Everything a sort needs, allocated once for the engine's capacity. */
typedef struct sortd__cpu_ctx {
        sortd__pool *pool;
        unsigned threads;
        size_t capacity;
        void *alt_keys; /* capacity x 8 bytes: the other half of the key ping-pong */
        void *alt_vals; /* capacity x 8 bytes */
        /* capacity x 8 bytes, touched only by shared sorts: the keys' third buffer */
        void *own_keys;
        size_t alt_bytes;
        /* Chained-scan status words, max_tiles x 256: [epoch:16][flag:2][count:46]. */
        _Atomic uint64_t *status;
        size_t max_tiles;
        uint64_t epoch; /* of the current pass; words of other epochs are "not ready" */
        bool split512;  /* the CPU has AVX-512F (see sortd__split_dominant()) */
        _Alignas(SORTD__LINE) _Atomic size_t ticket;
        _Alignas(SORTD__LINE) sortd__cpu_scratch *scratch; /* one per thread */
        /* Per tile and part of a tile, the digit counts of place 0 (histogram pass). */
        uint32_t (*tile_counts)[SORTD__STREAMS][SORTD__RADIX];
        /* SORTD__SEG_CHUNKS + 1: the first output index of each chunk of segments
           (segments.c) */
        uint64_t *seg_chunk_out;
} sortd__cpu_ctx;

/* Allocates and pre-faults ctx's buffers; returns 0 or a negative errno. */
int sortd__cpu_ctx_init(sortd__cpu_ctx *ctx, size_t capacity, unsigned threads);
/* Accepts a zeroed or partly initialised ctx. */
void sortd__cpu_ctx_free(sortd__cpu_ctx *ctx);

/* What the histogram pass found: the places that need a pass, and the global offsets. */
typedef struct sortd__counts {
        unsigned nth; /* threads that sort */
        unsigned np;  /* places in `places` */
        unsigned places[SORTD__MAX_PLACES];
        uint64_t goff[SORTD__MAX_PLACES][SORTD__RADIX];
} sortd__counts;

/* Sorts as plan says; n >= 2, n <= capacity, buffers checked: sortd__onesweep_count(), then
   sortd__onesweep_finish(). */
void sortd__onesweep_sort(sortd__cpu_ctx *ctx, const sortd__plan *plan, void *keys, void *vals,
                          size_t n);

/* The histogram pass over keys, into *c. */
void sortd__onesweep_count(sortd__cpu_ctx *ctx, const sortd__plan *plan, const void *keys, size_t n,
                           sortd__counts *c);

/* The binning passes *c plans for keys (and vals). A shared plan's keys may differ from those
   counted: the passes are checked, and if the first finds other keys, the sort starts again
   from the histogram pass, which then copies the keys into ctx->own_keys (*c is recounted).
   Either way the caller's buffers are written only after that first pass, and end up holding
   a permutation of the keys (and values) as some pass read them. */
void sortd__onesweep_finish(sortd__cpu_ctx *ctx, const sortd__plan *plan, sortd__counts *c,
                            void *keys, void *vals, size_t n);

#endif
