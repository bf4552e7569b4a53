/*
 * The CPU engine's segmented sort and top-k (segments.c, topk.c): the segments of a call are
 * spread over the threads in chunks taken by ticket, each small segment handled whole by the
 * thread that took it; the large ones then one after another by every thread.
 */
#ifndef SORTD_CPU_SEGMENTS_H
#define SORTD_CPU_SEGMENTS_H

#include <stdint.h>

#include "onesweep.h"

/* Segment i's first key; seg checked (sortd_segments_check). Inline: 10^6 segments call it. */
static inline uint64_t sortd__seg_begin(const sortd_segments *seg, uint64_t i)
{
        if (!seg->offsets)
                return i * seg->row_len;
        return seg->offset_bytes == 4 ? ((const uint32_t *)seg->offsets)[i]
                                      : ((const uint64_t *)seg->offsets)[i];
}

/* Element i of an array of eb-byte elements; NULL stays NULL (no payload). */
static inline unsigned char *sortd__at(const void *base, uint64_t i, unsigned eb)
{
        return base ? (unsigned char *)base + i * eb : NULL;
}

/* One segment: its index, first key, length and first output (top-k: results before it). */
typedef struct sortd__segment {
        uint64_t index, begin, len, out;
} sortd__segment;

/* Handles one small segment on the thread tid, with that thread's scratch. */
typedef void (*sortd__segment_fn)(void *arg, unsigned tid, const sortd__segment *s);

/*
 * Calls small for every segment of at most small_max keys, spread over the threads, then large
 * for every longer one, in order, on the calling thread (which may use every thread). out
 * counts min(k, len) per segment before (k = UINT64_MAX: the segments' own first keys).
 */
void sortd__segments_run(sortd__cpu_ctx *ctx, const sortd_segments *seg, uint64_t k,
                         uint64_t small_max, sortd__segment_fn small, sortd__segment_fn large,
                         void *arg);

/* sort_segments of the cpu engine (engine_impl.h), and its topk (topk.c). */
void sortd__cpu_sort_segments(sortd__cpu_ctx *ctx, const sortd__plan *plan,
                              const sortd_segments *seg, void *keys, void *vals);
void sortd__cpu_topk(sortd__cpu_ctx *ctx, const sortd__plan *plan, const sortd_segments *seg,
                     uint64_t k, const void *keys, const void *vals, void *out_keys,
                     void *out_vals);

/* Sorts one segment of 1 <= n <= SORTD__SMALL_KEYS keys in place on one thread. */
void sortd__sort_small_segment(const sortd__plan *plan, void *keys, void *vals, size_t n,
                               sortd__cpu_scratch *s);

#endif
