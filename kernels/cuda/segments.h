/*
 * Batches (engine.h's sortd_engine_sort_batch) on the cuda engine: the small members of a batch
 * become segments of one packed array, sorted by the segmented kernel (agent_block_sort.cuh),
 * one block a segment. Here is the host's side of it: the segment descriptor the kernel reads,
 * which members one sub-batch takes, and the packing of their keys and values into the arrays
 * that travel in one upload and one download.
 *
 * Free of CUDA, like staging.h, so that tests/kernels/cuda/test_emulated_kernels packs its
 * batches with this same code before it runs the kernel on the SIMT emulator.
 */
#ifndef SORTD_CUDA_SEGMENTS_H
#define SORTD_CUDA_SEGMENTS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../engine_impl.h"

namespace sortd_cuda
{

constexpr uint8_t SEGMENT_ARGSORT = 1;
constexpr uint8_t SEGMENT_DESCENDING = 2;

/* One member as the segmented kernel sees it: where its data is, and its own plan. 16 bytes,
   so that a block reads its descriptor in one access; n fits 16 bits as a segment is one block's
   tile (policy.cuh: BlockSortPolicy). */
struct alignas(16) Segment {
        uint32_t keys; /* byte offset of its keys in the keys array, sorted in place */
        uint32_t vals; /* byte offset of its values in the value arrays (in and out) */
        uint16_t n;    /* 1 .. the segmented policy's TILE */
        uint8_t key_bytes, val_bytes; /* 1, 2, 4, 8; 0, 4, 8 */
        uint8_t flags;                /* SEGMENT_ARGSORT | SEGMENT_DESCENDING */
        uint8_t kind;                 /* enum sortd__key_kind */
        uint8_t begin_bit, end_bit;   /* end_bit resolved, as in sortd__plan */
};
static_assert(sizeof(Segment) == 16, "one 16-byte load a block");

/* Top-k's gather (segment_sort.cuh): count elements of a sorted segment, from element src to
   element dst of the packed output. A descriptor as Segment is, so both share one chunk. */
struct alignas(16) CopyRange {
        uint32_t src, dst, count, pad;
};
static_assert(sizeof(CopyRange) == sizeof(Segment), "one descriptor chunk for both");

/* What one sub-batch may use: bytes of the keys array, bytes of each value array, segments. */
struct SegmentRoom {
        size_t key_bytes, val_bytes;
        unsigned segments;
};

/*
 * One sub-batch: segs[k] and jobs[k] (arrays of room.segments) describe the same member.
 * Members with keys of up to 4 bytes come first, [0, narrow), for the kernel on 32-bit keys;
 * [narrow, count) have 8-byte keys.
 */
struct SegmentBatch {
        Segment *segs;
        sortd__batch_job **jobs;
        unsigned count, narrow;
        size_t key_bytes, val_bytes; /* bytes used of each array */
        bool values_in;              /* some member has values to upload (not only argsort's) */
};

/* Every member's arrays start 8-byte aligned. */
inline size_t segment_span(size_t n, unsigned elem_bytes)
{
        return (n * elem_bytes + 7) & ~(size_t)7;
}

inline Segment segment_of(const sortd__batch_job *j, size_t keys, size_t vals)
{
        Segment s;

        s.keys = (uint32_t)keys;
        s.vals = (uint32_t)vals;
        s.n = (uint16_t)j->n;
        s.key_bytes = (uint8_t)j->plan.key_bytes;
        s.val_bytes = (uint8_t)j->plan.val_bytes;
        s.flags = (uint8_t)((j->plan.argsort ? SEGMENT_ARGSORT : 0) |
                            (j->plan.descending ? SEGMENT_DESCENDING : 0));
        s.kind = (uint8_t)j->plan.kind;
        s.begin_bit = (uint8_t)j->plan.begin_bit;
        s.end_bit = (uint8_t)j->plan.end_bit;
        return s;
}

/*
 * Fills b with the longest prefix of small[0, count) that fits room, and returns its length.
 * Any one member fits (the caller's room holds the largest member it passes), so each call
 * takes at least one while count > 0. The room's offsets stay under 4 GiB (32-bit offsets).
 */
inline unsigned plan_segments(sortd__batch_job *const *small, unsigned count,
                              const SegmentRoom &room, SegmentBatch *b)
{
        size_t keys = 0, vals = 0;
        unsigned take = 0, narrow = 0, at[2];

        for (; take < count && take < room.segments; take++) {
                const sortd__batch_job *j = small[take];
                size_t k = segment_span(j->n, j->plan.key_bytes);
                size_t v = segment_span(j->n, j->plan.val_bytes);

                if (keys + k > room.key_bytes || vals + v > room.val_bytes)
                        break;
                keys += k;
                vals += v;
                narrow += j->plan.key_bytes < 8;
        }
        at[0] = 0;
        at[1] = narrow;
        keys = vals = 0;
        b->values_in = false;
        for (unsigned i = 0; i < take; i++) {
                sortd__batch_job *j = small[i];
                unsigned k = at[j->plan.key_bytes == 8]++;

                b->segs[k] = segment_of(j, keys, vals);
                b->jobs[k] = j;
                b->values_in |= j->plan.val_bytes && !j->plan.argsort;
                keys += segment_span(j->n, j->plan.key_bytes);
                vals += segment_span(j->n, j->plan.val_bytes);
        }
        b->count = take;
        b->narrow = narrow;
        b->key_bytes = keys;
        b->val_bytes = vals;
        return take;
}

/*
 * Segments [lo, hi) of b between their members' arrays and the packed arrays keys and vals: in
 * (pack) copies keys and the values to sort, out (unpack) copies keys and every payload back.
 */
inline void copy_segments(const SegmentBatch &b, unsigned char *keys, unsigned char *vals, bool in,
                          unsigned lo, unsigned hi)
{
        for (unsigned k = lo; k < hi; k++) {
                const Segment &s = b.segs[k];
                const sortd__batch_job *j = b.jobs[k];
                size_t kb = (size_t)s.n * s.key_bytes, vb = (size_t)s.n * s.val_bytes;

                if (in) {
                        memcpy(keys + s.keys, j->keys, kb);
                        if (vb && !(s.flags & SEGMENT_ARGSORT))
                                memcpy(vals + s.vals, j->vals, vb);
                } else {
                        memcpy(j->keys, keys + s.keys, kb);
                        if (vb)
                                memcpy(j->vals, vals + s.vals, vb);
                }
        }
}

/* Members a sub-batch takes at most: what engine.c hands an engine at once (BATCH_CHUNK), so
   a call's small members usually share one sub-batch. */
constexpr unsigned BATCH_SEGMENTS = 128;

/*
 * A batch's members, routed as the cuda engine sorts them: a member of more than limit keys (the
 * segmented policy's TILE, under 2^16 as Segment::n is) by one(job), one at a time; the others
 * in sub-batches that fit room (room.segments <=
 * BATCH_SEGMENTS), each by segments(b) (pack, one upload, the segmented kernel, one download,
 * unpack), with b.segs = segs. finish(job, status) takes each member's outcome: one's, or its
 * sub-batch's.
 */
template <class One, class Segments, class Finish>
void route_batch(sortd__batch_job *jobs, size_t count, size_t limit, const SegmentRoom &room,
                 Segment *segs, One one, Segments segments, Finish finish)
{
        sortd__batch_job *small[BATCH_SEGMENTS], *taken[BATCH_SEGMENTS];
        SegmentBatch b = {segs, taken, 0, 0, 0, 0, false};
        unsigned ns = 0;
        auto flush = [&] {
                for (unsigned at = 0; at < ns;) {
                        at += plan_segments(small + at, ns - at, room, &b);
                        sortd_status s = segments(b);
                        for (unsigned k = 0; k < b.count; k++)
                                finish(b.jobs[k], s);
                }
                ns = 0;
        };

        for (size_t i = 0; i < count; i++) {
                if (jobs[i].n > limit) {
                        finish(&jobs[i], one(&jobs[i]));
                        continue;
                }
                small[ns++] = &jobs[i];
                if (ns == BATCH_SEGMENTS)
                        flush();
        }
        flush();
}

} /* namespace sortd_cuda */

#endif
