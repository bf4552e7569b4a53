/*
 * One Onesweep digit-binning pass over one tile (paper, section 3):
 *   take a tile ticket -> load keys -> rank (warp multi-split) -> count and
 *   publish -> stage keys in rank order -> look back -> write keys out ->
 *   move values the same way.
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

/* One strip's binning pass: its keys (and values) in, every strip's out. */
template <class K, class V> struct BinningParams {
        const K *keys_in; /* the strip's first key */
        K *keys_out;
        const V *vals_in; /* unused when gen_index */
        V *vals_out;
        uint32_t n;            /* the strip's keys */
        uint32_t index_base;   /* the whole input's index of keys_in[0], for gen_index */
        const uint32_t *bins;  /* where this strip's keys of each digit go */
        uint32_t *next_bins;   /* the next strip's, written by the last tile; or null */
        uint32_t *status;      /* [tile][RADIX] status counters, cleared */
        uint32_t *status_next; /* the next binning launch's, which this one clears; or null */
        uint32_t next_tiles;   /* that launch's tiles */
        uint32_t *tile_ticket; /* cleared */
        DigitPlace place;
        sortd__twiddle tw_load, tw_store;
        bool gen_index; /* argsort, first pass: the value is the input index */
};

template <class Policy, class K, class V> struct AgentBinning {
        static constexpr bool HAS_VALUES = !std::is_same<V, NoValue>::value;
        static constexpr int VALUE_BYTES = HAS_VALUES ? (int)sizeof(V) : 0;
        using P = typename Policy::template binning_for<VALUE_BYTES>;
        static constexpr int THREADS = P::THREADS;
        static constexpr int ITEMS = P::ITEMS;
        static constexpr int WARPS = P::WARPS;
        static constexpr int TILE = P::TILE;
        static constexpr int WARP_ITEMS = ITEMS * WARP_THREADS;
        static constexpr int DIGITS_PER_THREAD = (RADIX + THREADS - 1) / THREADS;
        /* predecessors' status words read at once by the look-back */
        static constexpr int LOOKBACK_WINDOW = 4;
        using Staged = typename std::conditional<HAS_VALUES, V, K>::type;
        /* Ranks within the warp (< WARP_ITEMS), packed as tightly as whole
           fields fit a register: three to one up to 32 keys a thread. Tile
           positions (< TILE), two to one. */
        static constexpr int RANK_BITS = bits_for(WARP_ITEMS - 1);
        static constexpr int RANK_WORDS = packed_words(ITEMS, RANK_BITS);
        static constexpr int POS_BITS = 16;
        static constexpr int POS_WORDS = packed_words(ITEMS, POS_BITS);
        static constexpr int DIGIT_WORDS = packed_words(ITEMS, RADIX_BITS);
        /* The warp counters are 16 bits, two digits to a word: half the
           words to clear, sum and rewrite per tile. Sums of two halves never
           carry, as no count or position reaches 2^16. */
        static constexpr int PAIRS = RADIX / 2;
        static_assert(TILE < (1 << 16), "counts and tile positions fit 16 bits");
        static constexpr int PAIR_ROUNDS = (PAIRS + THREADS - 1) / THREADS;
        static constexpr int PAIR_CHUNKS = PAIRS / WARP_THREADS; /* a warp's pairs in a round */

        /* Keys are staged, then values over them; the warp counters stay
           apart so a warp may stage its keys while others still read theirs. */
        union Exchange {
                K keys[TILE];
                Staged vals[TILE];
        };

        /* stored by a pair's owner in one 64-bit access */
        struct alignas(8) DigitPair {
                uint32_t digit[2];
        };

        struct TempStorage {
                Exchange x;
                /* digit counts per warp, then each warp's first position per
                   digit in the tile (16-bit, digit 2q in the low half of q) */
                uint32_t warp_hist[WARPS][PAIRS];
                uint32_t chunk_totals[PAIR_CHUNKS]; /* for the digit scan */
                DigitPair digit_tile[PAIRS];        /* count << 16 | first tile position */
                uint32_t bin_off[RADIX];            /* global position - tile position, mod 2^32 */
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

        SORTD_DEVICE uint32_t *status_word(uint32_t t, int d) const
        {
                return &p.status[(size_t)t * RADIX + d];
        }

        /* digit d's 16-bit counter in its pair's word */
        SORTD_DEVICE static uint32_t half(uint32_t word, uint32_t d)
        {
                return word >> 16 * (d & 1) & 0xffff;
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
                static_assert(WARPS * PAIRS % THREADS == 0, "every lane clears");
#pragma unroll
                for (int i = 0; i < WARPS * PAIRS / THREADS; i++)
                        shared_store(&s.warp_hist[0][0] + i * THREADS + threadIdx.x, 0u);
                __syncthreads();
                tile = s.tile;
                tile_base = tile * TILE;
                valid = p.n - tile_base < (uint32_t)TILE ? p.n - tile_base : TILE;
        }

        /* The next launch's status counters, rows blockIdx, blockIdx + blocks, ... (the next
           strip may have more tiles): the launch before this one used them and has ended, and
           the next one starts after this one ends, so no memset is needed between the two. By
           block index, not tile, so that nothing stays live in registers for it. */
        SORTD_DEVICE void clear_next_status() const
        {
                for (uint32_t t = blockIdx.x; t < p.next_tiles; t += gridDim.x)
#pragma unroll
                        for (int j = 0; j < DIGITS_PER_THREAD; j++) {
                                int d = (int)threadIdx.x + j * THREADS;

                                global_store_if(d < RADIX, p.status_next + (size_t)t * RADIX + d,
                                                0u);
                        }
        }

        /* Keys past n become all-ones: they rank last in the top digit, at
           tile positions >= valid, and are never stored. */
        SORTD_DEVICE void load_keys(K (&keys)[ITEMS]) const
        {
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t j = striped_index(i);
                        K raw = global_load_if(j < valid, p.keys_in + tile_base + j, K());

                        keys[i] = j < valid ? twiddle_in(p.tw_load, raw) : ~(K)0;
                }
        }

        /* Warp-level multi-split: the lowest of each digit's peers bumps the
           warp's counter for all of them; the order of items and lanes is
           the input order, so ranks are stable. The ranks within the warp
           are packed (RANK_BITS); staging takes each digit from its
           key again, which costs less than the registers to hold it. */
        SORTD_DEVICE void rank_keys(const K (&keys)[ITEMS], uint32_t (&ranks)[RANK_WORDS]) const
        {
                uint32_t *hist = s.warp_hist[warp_id()];

#pragma unroll
                for (int i = 0; i < RANK_WORDS; i++)
                        ranks[i] = 0;
#pragma unroll
                for (int i = 0; i < ITEMS; i++)
                        pack_put<RANK_BITS>(ranks, i, warp_rank(hist, digit(keys[i])));
        }

        /* The digits (look-back) or digit pairs (counting) this thread owns
           in round j. */
        SORTD_DEVICE static int owned(int j)
        {
                return (int)threadIdx.x + j * THREADS;
        }

        /* Per owned pair: the tile's two counts, published at once for the
           look-backs of later tiles, and the pair's first position among the
           pairs of its warp (a warp scan; chunk_totals carry the rest).
           Both halves are summed at once. Notes a homogeneous tile. */
        SORTD_DEVICE void count_digits(uint32_t (&totals)[PAIR_ROUNDS],
                                       uint32_t (&starts)[PAIR_ROUNDS])
        {
                const uint32_t flag = tile == 0 ? STATUS_GLOBAL : STATUS_LOCAL;

#pragma unroll
                for (int j = 0; j < PAIR_ROUNDS; j++) {
                        int q = owned(j);
                        uint32_t sum = 0;

                        if (q < PAIRS) {
#pragma unroll
                                for (int w = 0; w < WARPS; w++)
                                        sum += shared_load(&s.warp_hist[w][q]);
                                uint32_t lo = sum & 0xffff, hi = sum >> 16;
                                store_volatile(status_word(tile, 2 * q), flag | lo);
                                store_volatile(status_word(tile, 2 * q + 1), flag | hi);
                                if (lo == (uint32_t)TILE || hi == (uint32_t)TILE)
                                        s.homogeneous_digit = 2 * q + (hi == (uint32_t)TILE);
                        }
                        uint32_t pair = (sum & 0xffff) + (sum >> 16);
                        uint32_t inclusive = warp_inclusive_sum(pair);
                        totals[j] = sum;
                        starts[j] = inclusive - pair;
                        shared_store_if(q < PAIRS && lane_id() == WARP_THREADS - 1,
                                        &s.chunk_totals[q / WARP_THREADS % PAIR_CHUNKS], inclusive);
                }
        }

        /* Adds the chunks before each pair's, so starts become tile
           positions; then each warp's counters become its first tile
           position per digit (one shared read per key finishes a rank), and
           each digit's count and start go to digit_tile for its look-back.
           The counts are read again rather than held in registers through
           the barrier. */
        SORTD_DEVICE void warp_starts(const uint32_t (&totals)[PAIR_ROUNDS],
                                      uint32_t (&starts)[PAIR_ROUNDS])
        {
#pragma unroll
                for (int j = 0; j < PAIR_ROUNDS; j++) {
                        int q = owned(j);

                        if (q >= PAIRS) /* warp-uniform: whole warps */
                                break;
                        uint32_t chunk = shared_load(&s.chunk_totals[lane_id() % PAIR_CHUNKS]);
#pragma unroll
                        for (int c = 0; c < PAIR_CHUNKS; c++) {
                                uint32_t t = __shfl_sync(FULL_MASK, chunk, c);
                                if (c < q / WARP_THREADS)
                                        starts[j] += t;
                        }
                        uint32_t lo = totals[j] & 0xffff, hi = totals[j] >> 16;
                        uint32_t run = starts[j] | (starts[j] + lo) << 16;
#pragma unroll
                        for (int w = 0; w < WARPS; w++) {
                                uint32_t c = shared_load(&s.warp_hist[w][q]);
                                shared_store(&s.warp_hist[w][q], run);
                                run += c;
                        }
                        DigitPair info = {{lo << 16 | starts[j], hi << 16 | (starts[j] + lo)}};
                        shared_store(&s.digit_tile[q], info);
                }
        }

        /* Keys go to shared memory in rank order, so that the write-out reads
           them back in order and a run of one digit lands in one run of
           global memory. */
        SORTD_DEVICE void stage_keys(const K (&keys)[ITEMS], const uint32_t (&ranks)[RANK_WORDS],
                                     uint32_t (&pos)[POS_WORDS]) const
        {
                const uint32_t *starts = s.warp_hist[warp_id()];

#pragma unroll
                for (int i = 0; i < POS_WORDS; i++)
                        pos[i] = 0;
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t d = digit(keys[i]);
                        uint32_t r = pack_get<RANK_BITS>(ranks, i) +
                                     half(shared_load(&starts[d / 2]), d);

                        shared_store(&s.x.keys[r], keys[i]);
                        pack_put<POS_BITS>(pos, i, r);
                }
        }

        /* The first read was counted by the caller; how often a spin reads
           again depends on timing, which the emulator does not model. */
        SORTD_DEVICE static uint32_t wait_status(const uint32_t *counter)
        {
                uint32_t st;

                do
                        spin_pause();
                while (((st = reload_volatile(counter)) & STATUS_FLAG_MASK) == STATUS_NOT_READY);
                return st;
        }

        /* Decoupled look-back for one digit: add predecessors' counts until
           one carries an inclusive global prefix. The status words of a
           window of predecessors are read together, so their latencies
           overlap; only a word not yet published is waited on. Tile 0 is
           always global, so the walk ends there at the latest. */
        SORTD_DEVICE uint32_t look_back_digit(int d, uint32_t count) const
        {
                uint32_t exclusive = 0;
                unsigned steps = 0;

                for (uint32_t pred = tile;;) {
                        uint32_t st[LOOKBACK_WINDOW];
#pragma unroll
                        for (int w = 0; w < LOOKBACK_WINDOW; w++)
                                st[w] = pred > (uint32_t)w
                                                ? load_volatile(status_word(pred - 1 - w, d))
                                                : STATUS_GLOBAL;
#pragma unroll
                        for (int w = 0; w < LOOKBACK_WINDOW; w++) {
                                if ((st[w] & STATUS_FLAG_MASK) == STATUS_NOT_READY)
                                        st[w] = wait_status(status_word(pred - 1 - w, d));
                                exclusive += st[w] & STATUS_VALUE_MASK;
                                steps++;
                                if ((st[w] & STATUS_FLAG_MASK) == STATUS_GLOBAL) {
                                        note_lookback(steps);
                                        store_volatile(status_word(tile, d),
                                                       STATUS_GLOBAL | (exclusive + count));
                                        return exclusive;
                                }
                        }
                        pred -= LOOKBACK_WINDOW;
                }
        }

        /* f(d, info) for each digit d this thread owns, with its count and
           tile start from digit_tile (count << 16 | start). */
        template <class F> SORTD_DEVICE void each_owned_digit(F f) const
        {
#pragma unroll
                for (int j = 0; j < DIGITS_PER_THREAD; j++) {
                        int d = owned(j);

                        if (d >= RADIX)
                                break;
                        f(d, shared_load(&s.digit_tile[d / 2].digit[d & 1]));
                }
        }

        SORTD_DEVICE void look_back()
        {
                each_owned_digit([this](int d, uint32_t info) {
                        uint32_t exclusive = tile > 0 ? look_back_digit(d, info >> 16) : 0;
                        shared_store(&s.bin_off[d],
                                     global_load(p.bins + d) + exclusive - (info & 0xffff));
                });
        }

        /* The strip's last tile: where each digit's keys of the next strip
           go, after this strip's. Done last, when registers are free. */
        SORTD_DEVICE void next_strip_bins() const
        {
                if (!p.next_bins || tile + 1 != gridDim.x)
                        return;
                each_owned_digit([this](int d, uint32_t info) {
                        /* the padding keys (all ones) were counted in the top digit */
                        uint32_t padding = (uint32_t)d == p.place.mask ? TILE - valid : 0;

                        global_store(p.next_bins + d, shared_load(&s.bin_off[d]) + (info & 0xffff) +
                                                              (info >> 16) - padding);
                });
        }

        SORTD_DEVICE Staged load_value(uint32_t j) const
        {
                if constexpr (HAS_VALUES) {
                        if (p.gen_index)
                                return (Staged)(p.index_base + tile_base + j);
                        return global_load_if(j < valid, p.vals_in + tile_base + j, Staged());
                } else {
                        return Staged();
                }
        }

        /* The whole tile goes to one bin, in input order: no staging. The
           keys are read again (from L2) rather than held in registers
           through the look-back. */
        SORTD_DEVICE void copy_homogeneous() const
        {
                uint32_t base = s.bin_off[s.homogeneous_digit];

                if (threadIdx.x == 0)
                        note_homogeneous_tile();
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t j = striped_index(i);
                        K key = global_load_if(j < valid, p.keys_in + tile_base + j, K());

                        global_store_if(j < valid, p.keys_out + base + j,
                                        twiddle_out(p.tw_store, twiddle_in(p.tw_load, key)));
                }
                if constexpr (HAS_VALUES) {
#pragma unroll
                        for (int i = 0; i < ITEMS; i++) {
                                uint32_t j = striped_index(i);
                                global_store_if(j < valid, p.vals_out + base + j, load_value(j));
                        }
                }
        }

        /* Consecutive threads read consecutive staged keys: runs of one digit
           store coalesced. The digits, four to a word, are kept for the
           values: fewer registers than their destinations. */
        SORTD_DEVICE void write_keys(uint32_t (&digits)[DIGIT_WORDS]) const
        {
#pragma unroll
                for (int i = 0; i < DIGIT_WORDS; i++)
                        digits[i] = 0;
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t k = i * THREADS + threadIdx.x;
                        K key = shared_load(&s.x.keys[k]);
                        uint32_t d = digit(key);

                        pack_put<RADIX_BITS>(digits, i, d);
                        global_store_if(k < valid, p.keys_out + shared_load(&s.bin_off[d]) + k,
                                        twiddle_out(p.tw_store, key));
                }
        }

        /* Values follow their keys' ranks; loaded only now, so they hold no
           registers through ranking and look-back. */
        SORTD_DEVICE void move_values(const uint32_t (&pos)[POS_WORDS],
                                      const uint32_t (&digits)[DIGIT_WORDS])
        {
                __syncthreads(); /* staged keys are all read */
#pragma unroll
                for (int i = 0; i < ITEMS; i++)
                        shared_store(&s.x.vals[pack_get<POS_BITS>(pos, i)],
                                     load_value(striped_index(i)));
                __syncthreads();
#pragma unroll
                for (int i = 0; i < ITEMS; i++) {
                        uint32_t k = i * THREADS + threadIdx.x;
                        uint32_t d = pack_get<RADIX_BITS>(digits, i);

                        global_store_if(k < valid, p.vals_out + shared_load(&s.bin_off[d]) + k,
                                        shared_load(&s.x.vals[k]));
                }
        }

        SORTD_DEVICE void process()
        {
                K keys[ITEMS];
                uint32_t ranks[RANK_WORDS];

                clear_next_status();
                take_ticket();
                load_keys(keys);
                rank_keys(keys, ranks);
                __syncthreads();
                {
                        uint32_t totals[PAIR_ROUNDS] = {}, starts[PAIR_ROUNDS] = {};

                        count_digits(totals, starts);
                        __syncthreads(); /* chunk_totals complete */
                        warp_starts(totals, starts);
                }
                __syncthreads(); /* warp_hist holds each warp's starts */
                if (s.homogeneous_digit >= 0) {
                        look_back();
                        __syncthreads();
                        copy_homogeneous();
                        next_strip_bins();
                        return;
                }
                uint32_t pos[POS_WORDS]; /* tile positions */
                stage_keys(keys, ranks, pos);
                look_back();
                __syncthreads(); /* keys staged, bin_off complete */
                uint32_t digits[DIGIT_WORDS];
                write_keys(digits);
                if constexpr (HAS_VALUES)
                        move_values(pos, digits);
                next_strip_bins();
        }
};

} /* namespace sortd_cuda */

#endif
