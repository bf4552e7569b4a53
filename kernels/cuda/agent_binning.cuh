/*
 * One Onesweep digit-binning pass over one tile (paper, section 3):
 *   take a tile ticket -> load keys -> rank (warp multi-split) -> count and
 *   publish -> look back -> scatter keys through shared staging -> move values.
 * A tile whose keys all share one digit skips the staging.
 *
 * Keys are 32- or 64-bit unsigned; the key-type, sign, float and order map
 * is applied on load by the first pass (tw_load) and undone on store by the
 * last (tw_store); between them both are the identity.
 */
#ifndef SORTD_CUDA_AGENT_BINNING_CUH
#define SORTD_CUDA_AGENT_BINNING_CUH

#include <type_traits>

#include "../keys.h"
#include "agent_histogram.cuh"
#include "block_scan.cuh"
#include "compat.cuh"
#include "policy.cuh"

namespace sortd_cuda
{

/* The value type of a keys-only sort. */
struct NoValue {
};

template <class K, class V> struct BinningParams {
        const K *keys_in;
        K *keys_out;
        const V *vals_in; /* unused when gen_index */
        V *vals_out;
        uint32_t n;
        const uint32_t *bins;  /* this place's global exclusive bin offsets */
        uint32_t *status;      /* [tile][RADIX] status counters, cleared */
        uint32_t *tile_ticket; /* cleared */
        DigitPlace place;
        sortd__twiddle tw_load, tw_store;
        bool gen_index; /* argsort, first pass: the value is the input index */
};

template <class Policy, class K, class V> struct AgentBinning {
        using P = typename Policy::binning;
        static constexpr int THREADS = P::THREADS;
        static constexpr int ITEMS = P::ITEMS;
        static constexpr int WARPS = P::WARPS;
        static constexpr int TILE = P::TILE;
        static constexpr int WARP_ITEMS = ITEMS * WARP_THREADS;
        static constexpr int DIGITS_PER_THREAD = (RADIX + THREADS - 1) / THREADS;
        static constexpr bool HAS_VALUES = !std::is_same<V, NoValue>::value;
        using Staged = typename std::conditional<HAS_VALUES, V, K>::type;

        /* Ranking's warp histograms, then staging of keys, then of values:
           phases that never overlap share the bytes. */
        union Exchange {
                uint32_t warp_hist[WARPS][RADIX];
                K keys[TILE];
                Staged vals[TILE];
        };

        struct TempStorage {
                Exchange x;
                uint32_t tile_start[RADIX]; /* exclusive scan of the tile's counts */
                uint32_t bin_off[RADIX];    /* global position - tile position, mod 2^32 */
                uint32_t tile;
                int homogeneous_digit; /* -1: the tile has more than one digit */
        };

        TempStorage &s;
        const BinningParams<K, V> &p;
        uint32_t tile, tile_base, valid;

        SORTD_DEVICE AgentBinning(TempStorage &s_, const BinningParams<K, V> &p_) : s(s_), p(p_)
        {
        }

        SORTD_DEVICE uint32_t digit(K key) const
        {
                return digit_of(key, p.place);
        }

        /* warp-striped: warp w owns WARP_ITEMS consecutive keys, lane l reads
           every 32nd of them, so item order is input order within a warp */
        SORTD_DEVICE uint32_t striped_index(int i) const
        {
                return warp_id() * WARP_ITEMS + i * WARP_THREADS + lane_id();
        }

        SORTD_DEVICE void take_ticket()
        {
                if (threadIdx.x == 0) {
                        s.tile = atomicAdd(p.tile_ticket, 1u);
                        s.homogeneous_digit = -1;
                }
                uint32_t *flat = &s.x.warp_hist[0][0];
                for (int i = threadIdx.x; i < WARPS * RADIX; i += THREADS)
                        flat[i] = 0;
                __syncthreads();
                tile = s.tile;
                tile_base = tile * TILE;
                valid = p.n - tile_base < (uint32_t)TILE ? p.n - tile_base : TILE;
        }

        /* Keys past n become all-ones: they rank last in the top digit, at
           tile positions >= valid, and are never stored. */
        SORTD_DEVICE void load_keys(K (&keys)[ITEMS]) const
        {
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t j = striped_index(i);
                        keys[i] =
                                j < valid ? twiddle_in(p.tw_load, p.keys_in[tile_base + j]) : ~(K)0;
                }
        }

        /* Warp-level multi-split: peers with the same digit find each other
           with match_any; the lowest peer bumps the warp's counter for all. */
        SORTD_DEVICE void rank_keys(const K (&keys)[ITEMS], uint32_t (&ranks)[ITEMS]) const
        {
                uint32_t *hist = s.x.warp_hist[warp_id()];
                const unsigned lane = lane_id();

#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t d = digit(keys[i]);
                        unsigned peers = __match_any_sync(FULL_MASK, d);
                        int leader = __ffs(peers) - 1;
                        uint32_t before = 0;

                        if ((int)lane == leader) {
                                before = hist[d];
                                hist[d] = before + __popc(peers);
                        }
                        before = __shfl_sync(FULL_MASK, before, leader);
                        ranks[i] = before + __popc(peers & lanemask_lt());
                        __syncwarp(); /* the next item's leader reads hist */
                }
        }

        /* Per digit: scan the warp counts in place (warp offsets), publish
           the tile count, note a homogeneous tile. */
        SORTD_DEVICE void count_and_publish(uint32_t (&counts)[DIGITS_PER_THREAD])
        {
#pragma unroll
                for (int j = 0; j < DIGITS_PER_THREAD; j++) {
                        int d = threadIdx.x + j * THREADS;
                        if (d >= RADIX)
                                break;
                        uint32_t sum = 0;
#pragma unroll
                        for (int w = 0; w < WARPS; w++) {
                                uint32_t c = s.x.warp_hist[w][d];
                                s.x.warp_hist[w][d] = sum;
                                sum += c;
                        }
                        counts[j] = sum;
                        s.tile_start[d] = sum;
                        store_volatile(&p.status[(size_t)tile * RADIX + d],
                                       (tile == 0 ? STATUS_GLOBAL : STATUS_LOCAL) | sum);
                        if (sum == (uint32_t)TILE)
                                s.homogeneous_digit = d;
                }
        }

        SORTD_DEVICE void finish_ranks(const K (&keys)[ITEMS], uint32_t (&ranks)[ITEMS]) const
        {
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t d = digit(keys[i]);
                        ranks[i] += s.tile_start[d] + s.x.warp_hist[warp_id()][d];
                }
        }

        /* Decoupled look-back, one thread per digit: add predecessors' counts
           until one carries an inclusive global prefix. */
        SORTD_DEVICE void look_back(const uint32_t (&counts)[DIGITS_PER_THREAD])
        {
#pragma unroll
                for (int j = 0; j < DIGITS_PER_THREAD; j++) {
                        int d = threadIdx.x + j * THREADS;
                        if (d >= RADIX)
                                break;
                        uint32_t exclusive = 0;
                        if (tile > 0) {
                                unsigned steps = 0;
                                for (uint32_t pred = tile - 1;; pred--) {
                                        uint32_t st =
                                                wait_status(&p.status[(size_t)pred * RADIX + d]);
                                        exclusive += st & STATUS_VALUE_MASK;
                                        steps++;
                                        if ((st & STATUS_FLAG_MASK) == STATUS_GLOBAL)
                                                break;
                                }
                                note_lookback(steps);
                                store_volatile(&p.status[(size_t)tile * RADIX + d],
                                               STATUS_GLOBAL | (exclusive + counts[j]));
                        }
                        s.bin_off[d] = p.bins[d] + exclusive - s.tile_start[d];
                }
        }

        SORTD_DEVICE static uint32_t wait_status(const uint32_t *counter)
        {
                uint32_t st;

                while (((st = load_volatile(counter)) & STATUS_FLAG_MASK) == STATUS_NOT_READY)
                        spin_pause();
                return st;
        }

        SORTD_DEVICE Staged load_value(uint32_t j) const
        {
                if constexpr (HAS_VALUES) {
                        if (p.gen_index)
                                return (Staged)(tile_base + j);
                        return p.vals_in[tile_base + j];
                } else {
                        return Staged();
                }
        }

        /* The whole tile goes to one bin, in input order: no staging. */
        SORTD_DEVICE void copy_homogeneous(const K (&keys)[ITEMS]) const
        {
                uint32_t base = s.bin_off[s.homogeneous_digit];

                if (threadIdx.x == 0)
                        note_homogeneous_tile();
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t j = striped_index(i);
                        if (j < valid) {
                                p.keys_out[base + j] = twiddle_out(p.tw_store, keys[i]);
                                if constexpr (HAS_VALUES)
                                        p.vals_out[base + j] = load_value(j);
                        }
                }
        }

        /* Keys are written to shared memory in rank order, then read back in
           order by consecutive threads: a run of one digit lands in one run of
           global memory, so the stores coalesce. */
        SORTD_DEVICE void scatter_keys(const K (&keys)[ITEMS], const uint32_t (&ranks)[ITEMS],
                                       uint32_t (&dest)[ITEMS])
        {
#pragma unroll
                for (int i = 0; i < ITEMS; i++)
                        s.x.keys[ranks[i]] = keys[i];
                __syncthreads();
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t k = i * THREADS + threadIdx.x;
                        K key = s.x.keys[k];
                        dest[i] = s.bin_off[digit(key)] + k;
                        if (k < valid)
                                p.keys_out[dest[i]] = twiddle_out(p.tw_store, key);
                }
        }

        /* Values follow their keys' ranks; loaded only now, so they hold no
           registers through ranking and look-back. */
        SORTD_DEVICE void scatter_values(const uint32_t (&ranks)[ITEMS],
                                         const uint32_t (&dest)[ITEMS])
        {
                __syncthreads(); /* staged keys are all read */
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t j = striped_index(i);
                        if (j < valid)
                                s.x.vals[ranks[i]] = load_value(j);
                }
                __syncthreads();
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t k = i * THREADS + threadIdx.x;
                        if (k < valid)
                                p.vals_out[dest[i]] = s.x.vals[k];
                }
        }

        SORTD_DEVICE void process()
        {
                K keys[ITEMS];
                uint32_t ranks[ITEMS], counts[DIGITS_PER_THREAD];

                take_ticket();
                load_keys(keys);
                rank_keys(keys, ranks);
                __syncthreads();
                count_and_publish(counts);
                __syncthreads();
                if (warp_id() == 0)
                        warp_exclusive_scan_radix(s.tile_start, s.tile_start);
                __syncthreads();
                finish_ranks(keys, ranks);
                look_back(counts);
                __syncthreads(); /* bin_off is complete; warp_hist is dead */
                if (s.homogeneous_digit >= 0) {
                        copy_homogeneous(keys);
                        return;
                }
                uint32_t dest[ITEMS];
                scatter_keys(keys, ranks, dest);
                if constexpr (HAS_VALUES)
                        scatter_values(ranks, dest);
        }
};

} /* namespace sortd_cuda */

#endif
