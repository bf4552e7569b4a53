/*
 * A block-local LSD radix sort of one segment, a small member of a batch (segments.h), for the
 * segmented kernel: the block holds the whole segment, and per digit place
 *   rank (warp multi-split, as binning does) -> scan all warps' digit counts ->
 *   scatter keys and their input indices to shared memory in rank order -> read them back.
 * After the last place it writes the keys out, then the payload: values gathered from the input
 * through the indices, or the indices themselves for an argsort. So values move once, not once a
 * pass, and their width or absence costs the passes nothing.
 *
 * Keys are 32-bit (1-, 2- and 4-byte keys are widened through their key map) or 64-bit. The rest
 * of a segment's plan (key width, kind, order, bit window, payload) is read at run time from its
 * descriptor, so one launch sorts members of every kind.
 *
 * Positions past n: an item whose lanes are all past n is skipped by its warp; in the one item
 * that straddles n, the lanes past it hold all-ones keys, which rank after every real key of the
 * top digit (no later warp counts anything) and are never stored.
 */
#ifndef SORTD_CUDA_AGENT_BLOCK_SORT_CUH
#define SORTD_CUDA_AGENT_BLOCK_SORT_CUH

#include "../keys.h"
#include "agent_histogram.cuh"
#include "block_scan.cuh"
#include "compat.cuh"
#include "policy.cuh"
#include "segments.h"

namespace sortd_cuda
{

/* One launch of the segmented kernel: block b sorts segs[b] (the small-sort kernel takes its one
   segment's descriptor in the launch instead, and no segs). */
struct SegmentedParams {
        const Segment *segs;
        unsigned char *keys;          /* every segment's keys, sorted in place */
        const unsigned char *vals_in; /* the values to move (an argsort's are not read) */
        unsigned char *vals_out;      /* the sorted values or indices, at the same offsets */
};

template <class Policy, class K> struct AgentBlockSort {
        static constexpr int THREADS = Policy::THREADS;
        static constexpr int ITEMS = Policy::ITEMS;
        static constexpr int WARPS = Policy::WARPS;
        static constexpr int TILE = Policy::TILE;
        static constexpr int WARP_ITEMS = ITEMS * WARP_THREADS;
        /* 16-bit digit counters, two digits to a word, as in binning */
        static constexpr int PAIRS = RADIX / 2;
        static constexpr int PAIR_ROUNDS = (PAIRS + THREADS - 1) / THREADS;
        static constexpr int PAIR_CHUNKS = PAIRS / WARP_THREADS; /* a warp's pairs in a round */
        static constexpr int RANK_BITS = 16; /* a rank, and above it the key's digit */
        static constexpr uint32_t RANK_MASK = (1u << RANK_BITS) - 1;
        static constexpr int INDEX_WORDS = (ITEMS + 1) / 2; /* input indices, two to a word */
        static_assert(sizeof(K) == 4 || sizeof(K) == 8, "32- or 64-bit keys");
        static_assert(TILE <= (int)RANK_MASK, "ranks and indices fit 16 bits");

        struct TempStorage {
                K keys[TILE];         /* the keys in the order of the last pass */
                uint16_t index[TILE]; /* and where each one was in the input */
                /* each warp's digit counts, then its first position per digit (digit 2q in
                   the low half of word q) */
                uint32_t warp_hist[WARPS][PAIRS];
                uint32_t chunk_totals[PAIR_CHUNKS];
        };

        TempStorage &s;
        const SegmentedParams &p;
        const Segment seg;
        const sortd__twiddle tw;

        SORTD_DEVICE AgentBlockSort(TempStorage &s_, const SegmentedParams &p_, Segment seg_)
            : s(s_), p(p_), seg(seg_),
              tw(sortd__twiddle_make(seg.key_bytes, seg.kind, seg.flags & SEGMENT_DESCENDING))
        {
        }

        /* digit d's 16-bit counter in its pair's word */
        SORTD_DEVICE static uint32_t half(uint32_t word, uint32_t d)
        {
                return word >> 16 * (d & 1) & 0xffff;
        }

        /* warp-striped, as binning loads a tile: warp w holds WARP_ITEMS consecutive keys and
           lane l every 32nd of them, so (warp, item, lane) order is the current order */
        SORTD_DEVICE uint32_t item_base(int i) const
        {
                return warp_id() * WARP_ITEMS + i * WARP_THREADS;
        }

        SORTD_DEVICE uint32_t striped_index(int i) const
        {
                return item_base(i) + lane_id();
        }

        /* whether any lane of item i holds a key: the same for the whole warp */
        SORTD_DEVICE bool item_live(int i) const
        {
                return item_base(i) < seg.n;
        }

        /* The segment's key j at its own width, zero-extended; nothing read unless pred. */
        SORTD_DEVICE uint64_t load_raw(bool pred, uint32_t j) const
        {
                const unsigned char *base = p.keys + seg.keys;

                if constexpr (sizeof(K) == 8) {
                        return global_load_if(pred, (const uint64_t *)base + j, (uint64_t)0);
                } else {
                        switch (seg.key_bytes) {
                        case 1:
                                return global_load_if(pred, base + j, (unsigned char)0);
                        case 2:
                                return global_load_if(pred, (const uint16_t *)base + j,
                                                      (uint16_t)0);
                        default:
                                return global_load_if(pred, (const uint32_t *)base + j, 0u);
                        }
                }
        }

        /* Key k of the sorted segment, mapped back and stored at its width. */
        SORTD_DEVICE void store_key(bool pred, uint32_t k, K key) const
        {
                unsigned char *base = p.keys + seg.keys;
                uint64_t x = sortd__twiddle_inverse(tw, key);

                if constexpr (sizeof(K) == 8) {
                        global_store_if(pred, (uint64_t *)base + k, x);
                } else {
                        switch (seg.key_bytes) {
                        case 1:
                                global_store_if(pred, base + k, (unsigned char)x);
                                break;
                        case 2:
                                global_store_if(pred, (uint16_t *)base + k, (uint16_t)x);
                                break;
                        default:
                                global_store_if(pred, (uint32_t *)base + k, (uint32_t)x);
                        }
                }
        }

        /* Position k's payload: input value `from`, or `from` itself for an argsort. */
        template <class V> SORTD_DEVICE void store_value(bool pred, uint32_t k, uint32_t from) const
        {
                const V *in = (const V *)(p.vals_in + seg.vals);
                V *out = (V *)(p.vals_out + seg.vals);
                bool argsort = seg.flags & SEGMENT_ARGSORT;
                V v = global_load_if(pred && !argsort, in + from, (V)from);

                global_store_if(pred, out + k, v);
        }

        /* The keys, mapped to their radix order, and their input positions. */
        SORTD_DEVICE void load_keys(K (&keys)[ITEMS], uint32_t (&index)[INDEX_WORDS]) const
        {
#pragma unroll
                for (int i = 0; i < INDEX_WORDS; i++)
                        index[i] = 0;
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t j = striped_index(i);
                        K raw = (K)load_raw(j < seg.n, j);

                        keys[i] = j < seg.n ? twiddle_in(tw, raw) : ~(K)0;
                        pack_put<RANK_BITS>(index, i, j);
                }
        }

        /* Warp-level multi-split into the warp's own counters, items in the current order. */
        SORTD_DEVICE void rank_keys(const K (&keys)[ITEMS], DigitPlace place,
                                    uint32_t (&ranks)[ITEMS]) const
        {
                uint32_t *hist = s.warp_hist[warp_id()];
                const unsigned lane = lane_id();

                static_assert(PAIRS % WARP_THREADS == 0, "every lane clears");
#pragma unroll
                for (int q = 0; q < PAIRS / WARP_THREADS; q++)
                        shared_store(&hist[q * WARP_THREADS + lane], 0u);
                __syncwarp(); /* no other warp touches these counters until the next barrier */
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        ranks[i] = 0;
                        if (!item_live(i))
                                continue;
                        uint32_t d = digit_of(keys[i], place);

                        ranks[i] = warp_rank(hist, d) | d << RANK_BITS;
                }
        }

        /* Each warp's counters become its first position per digit: digits in order and, within
           a digit, warps in order. Both halves of a pair are summed at once; a warp scan over
           the pairs, and chunk_totals across warps, give each pair's first position. Binning's
           count_digits and warp_starts scan the same way; a helper for both moved ptxas's
           register counts for the binning kernels (+1 to +7), so they keep their own. */
        SORTD_DEVICE void digit_starts()
        {
                uint32_t totals[PAIR_ROUNDS], starts[PAIR_ROUNDS];

#pragma unroll
                for (int j = 0; j < PAIR_ROUNDS; j++) {
                        int q = (int)threadIdx.x + j * THREADS;
                        uint32_t sum = 0;

                        if (q < PAIRS) /* whole warps */
#pragma unroll
                                for (int w = 0; w < WARPS; w++)
                                        sum += shared_load(&s.warp_hist[w][q]);
                        uint32_t pair = (sum & 0xffff) + (sum >> 16);
                        uint32_t inclusive = warp_inclusive_sum(pair);
                        totals[j] = sum;
                        starts[j] = inclusive - pair;
                        shared_store_if(q < PAIRS && lane_id() == WARP_THREADS - 1,
                                        &s.chunk_totals[q / WARP_THREADS % PAIR_CHUNKS], inclusive);
                }
                __syncthreads(); /* chunk_totals complete */
#pragma unroll
                for (int j = 0; j < PAIR_ROUNDS; j++) {
                        int q = (int)threadIdx.x + j * THREADS;

                        if (q >= PAIRS) /* whole warps */
                                break;
                        uint32_t start = starts[j];
#pragma unroll
                        for (int c = 0; c < PAIR_CHUNKS; c++)
                                if (c < q / WARP_THREADS)
                                        start += shared_load(&s.chunk_totals[c]);
                        uint32_t run = start | (start + (totals[j] & 0xffff)) << 16;
#pragma unroll
                        for (int w = 0; w < WARPS; w++) {
                                uint32_t c = shared_load(&s.warp_hist[w][q]);
                                shared_store(&s.warp_hist[w][q], run);
                                run += c;
                        }
                }
                __syncthreads(); /* every warp's starts are in warp_hist */
        }

        /* Keys and their input indices to their positions of this pass. */
        SORTD_DEVICE void scatter(const K (&keys)[ITEMS], const uint32_t (&ranks)[ITEMS],
                                  const uint32_t (&index)[INDEX_WORDS]) const
        {
                const uint32_t *starts = s.warp_hist[warp_id()];

#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        if (!item_live(i))
                                continue;
                        bool valid = striped_index(i) < seg.n;
                        uint32_t d = ranks[i] >> RANK_BITS;
                        uint32_t r = (ranks[i] & RANK_MASK) + half(shared_load(&starts[d / 2]), d);

                        shared_store_if(valid, &s.keys[r], keys[i]);
                        shared_store_if(valid, &s.index[r],
                                        (uint16_t)pack_get<RANK_BITS>(index, i));
                }
        }

        /* The next pass's keys and indices, striped again; padding as load_keys makes it. */
        SORTD_DEVICE void reload(K (&keys)[ITEMS], uint32_t (&index)[INDEX_WORDS]) const
        {
#pragma unroll
                for (int i = 0; i < INDEX_WORDS; i++)
                        index[i] = 0;
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        if (!item_live(i))
                                continue;
                        uint32_t j = striped_index(i);
                        K key = shared_load(&s.keys[j]);

                        keys[i] = j < seg.n ? key : ~(K)0;
                        pack_put<RANK_BITS>(index, i, shared_load(&s.index[j]));
                }
        }

        /* Consecutive threads store consecutive keys and payloads. */
        SORTD_DEVICE void store() const
        {
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        if ((uint32_t)(i * THREADS) >= seg.n) /* the whole block */
                                break;
                        uint32_t k = i * THREADS + threadIdx.x;
                        bool valid = k < seg.n;
                        uint32_t from = shared_load(&s.index[k]);

                        store_key(valid, k, shared_load(&s.keys[k]));
                        if (seg.val_bytes == 4)
                                store_value<uint32_t>(valid, k, from);
                        else if (seg.val_bytes == 8)
                                store_value<uint64_t>(valid, k, from);
                }
        }

        SORTD_DEVICE void process()
        {
                K keys[ITEMS];
                uint32_t ranks[ITEMS], index[INDEX_WORDS];
                /* begin_bit < end_bit (the request checks), so at least one place */
                unsigned places = (seg.end_bit - seg.begin_bit + RADIX_BITS - 1) / RADIX_BITS;

                load_keys(keys, index);
                for (unsigned pl = 0; pl < places; pl++) {
                        if (pl > 0)
                                reload(keys, index);
                        rank_keys(keys, digit_place(seg.begin_bit, seg.end_bit, pl), ranks);
                        __syncthreads(); /* every warp's counts are in */
                        digit_starts();
                        scatter(keys, ranks, index);
                        __syncthreads(); /* the pass's order is in shared memory */
                }
                store();
        }
};

} /* namespace sortd_cuda */

#endif
