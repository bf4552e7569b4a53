/*
 * Tuning policies: plain constexpr structs, template parameters of the
 * agents. Every size an agent uses derives from its policy.
 *
 * The production policies are a Tuning per range of architectures (one
 * policy per key width), chosen at run time by the code the device runs
 * (with_tuning); each architecture's build compiles only its own. Static
 * shared memory stays under 48 KiB and the tile one multiple of the block for
 * the binning kernel's staging.
 * ptxas figures (nvcc 13.0, -Xptxas -v) are in kernels/cuda/PTXAS.md; the
 * build fails on any spill in our kernels (-Xptxas -warn-spills -Werror).
 * Only the binning kernel may take a tile over 48 KiB (dynamic shared memory);
 * production's all fit static shared memory.
 */
#ifndef SORTD_CUDA_POLICY_CUH
#define SORTD_CUDA_POLICY_CUH

#include <limits.h>
#include <stdint.h>

#include <algorithm>
#include <type_traits>

namespace sortd_cuda
{

constexpr int RADIX_BITS = 8;
constexpr int RADIX = 1 << RADIX_BITS;
constexpr int MAX_PLACES = 8; /* 64-bit keys */

/* Status counter: 2-bit flag over a 30-bit count (paper, figure 6). */
constexpr uint32_t STATUS_NOT_READY = 0u << 30;
constexpr uint32_t STATUS_LOCAL = 1u << 30;
constexpr uint32_t STATUS_GLOBAL = 2u << 30;
constexpr uint32_t STATUS_FLAG_MASK = 3u << 30;
constexpr uint32_t STATUS_VALUE_MASK = (1u << 30) - 1;

template <int THREADS_, int ITEMS_> struct HistogramPolicy {
        static constexpr int THREADS = THREADS_;
        static constexpr int ITEMS = ITEMS_;
        static constexpr int TILE = THREADS * ITEMS;
        static_assert(THREADS % 32 == 0, "whole warps");
};

/* MIN_BLOCKS_: blocks per SM that ptxas must leave room for (registers);
   1 leaves it free. */
template <int THREADS_, int ITEMS_, int MIN_BLOCKS_ = 1> struct BinningPolicy {
        static constexpr int THREADS = THREADS_;
        static constexpr int ITEMS = ITEMS_;
        static constexpr int MIN_BLOCKS = MIN_BLOCKS_;
        static constexpr int WARPS = THREADS / 32;
        static constexpr int TILE = THREADS * ITEMS;
        static_assert(THREADS % 32 == 0, "whole warps");
        static_assert(TILE <= (1 << 16), "a tile is a small fraction of the 30-bit counts");
};

/* The look-back's counts are 30 bits, so one chained scan bins at most
   STRIP keys. Larger sorts go strip by strip (the Onesweep paper's strips):
   one binning launch per strip and digit place, each strip's keys of a digit
   placed after the previous strip's, where that strip's last tile left the
   offsets. The histogram's counts are 32-bit and need no strips. The
   paper's offsets are 64-bit; ours stay 32-bit, as n < 2^32 (MAX_KEYS): the
   engine's buffers take 32 bytes a key, so 2^32 keys would need 128 GiB of
   device memory. */
constexpr uint32_t DEFAULT_STRIP = (1u << 30) - (1u << 16);

/*
 * A sort of at least ROUND_TRIP_MIN keys waits for its histogram and leaves out the digit places
 * whose keys all share one digit (keys of a small range, bit ranges wider than the data); a
 * smaller one runs every place and never waits, so its launches queue back to back. The wait
 * costs a stream synchronisation and an idle device until the host queues the next launch (tens
 * of microseconds), a binning pass over 2^22 u32 keys about as much (32 MiB of traffic at
 * 3-4 TB/s). The tune step builds a variant that always waits (-Dtune_off=no-round-trip).
 */
#ifndef SORTD_TUNE_ROUND_TRIP_MIN
#define SORTD_TUNE_ROUND_TRIP_MIN (1u << 22)
#endif
constexpr uint32_t ROUND_TRIP_MIN_KEYS = SORTD_TUNE_ROUND_TRIP_MIN;

/*
 * Programmatic dependent launch between a sort's kernels on devices and kernels of sm_90 and
 * later (cuda_backend.cuh: launch): each launch's latency hides behind its predecessor's last
 * blocks, which counts where a sort is a few microseconds a launch. The tune step builds a
 * variant without it (-Dtune_off=pdl).
 */
#ifndef SORTD_TUNE_PDL
#define SORTD_TUNE_PDL true
#endif
constexpr bool PDL = SORTD_TUNE_PDL;
constexpr int PDL_MIN_ARCH = 900;

/* Sorts repeated at one shape replay a CUDA graph of their launches (graph_cache.h). The tune
   step builds a variant without (-Dtune_off=graph). */
#ifndef SORTD_TUNE_GRAPHS
#define SORTD_TUNE_GRAPHS true
#endif
constexpr bool GRAPHS = SORTD_TUNE_GRAPHS;
/* Graphs an engine keeps: a few clients' repeated shapes; each is a few KiB of the driver's. */
constexpr unsigned GRAPH_CACHE_SIZE = 8;

/* The paths a tune build leaves out (-Dtune_off), in the device name its engine reports, so
   that scripts/test can tell each build by a string it holds. */
#define SORTD_STRINGIZE(x) #x
#define SORTD_STRING(x) SORTD_STRINGIZE(x)
#ifdef SORTD_TUNE_OFF
#define SORTD_TUNE_NOTE ", tune off " SORTD_STRING(SORTD_TUNE_OFF)
#else
#define SORTD_TUNE_NOTE ""
#endif

/* Binning for keys alone, with 4-byte values and with 8-byte values: values
   need staging bytes and registers of their own, so they may want a smaller
   tile, and 8-byte values twice the staging of 4-byte ones.
   A policy is for every architecture unless ArchPolicy names its own. */
template <class Histogram, class Binning, class BinningPairs = Binning,
          class BinningWidePairs = BinningPairs, uint32_t STRIP_ = DEFAULT_STRIP>
struct OnesweepPolicy {
        using histogram = Histogram;
        /* for values of VALUE_BYTES (0: keys alone) */
        template <int VALUE_BYTES>
        using binning_for =
                typename std::conditional<VALUE_BYTES == 0, Binning,
                                          typename std::conditional<VALUE_BYTES <= 4, BinningPairs,
                                                                    BinningWidePairs>::type>::type;
        static constexpr int MIN_TILE =
                std::min({Binning::TILE, BinningPairs::TILE, BinningWidePairs::TILE});
        static constexpr int MAX_TILE =
                std::max({Binning::TILE, BinningPairs::TILE, BinningWidePairs::TILE});
        static constexpr uint32_t STRIP = STRIP_;
        static constexpr uint32_t ROUND_TRIP_MIN = ROUND_TRIP_MIN_KEYS;
        static constexpr int ARCH_BEGIN = 0, ARCH_END = INT_MAX;
        static_assert((uint64_t)STRIP + 2 * MAX_TILE <= (1u << 30),
                      "a strip's counts, last tile's padding included, fit 30 bits");
};

/* Policy for the code of architectures [BEGIN, END) (__CUDA_ARCH__ values):
   on the device its kernels are built only there (kernels.cuh). */
template <int BEGIN, int END, class Policy> struct ArchPolicy : Policy {
        static constexpr int ARCH_BEGIN = BEGIN, ARCH_END = END;
};

/* 32-bit keys. 256 threads at <= 64 registers keep 4 blocks, half an SM's
   warps, resident on sm_75..sm_90. With values the kernel needs 80
   registers (3 blocks) even at 12 keys a thread. */
using Policy32 = OnesweepPolicy<HistogramPolicy<256, 16>, BinningPolicy<256, 16, 4>,
                                BinningPolicy<256, 12, 3>>;

/* scripts/gpu-check's tune step measures other sm_90 binning policies on a
   GPU: a build with -Dtune_sm90_keys / -Dtune_sm90_pairs=THREADS,ITEMS,MIN_BLOCKS
   (meson_options.txt) defines these. Production defines none. */
#ifdef SORTD_TUNE_SM90_KEYS_THREADS
using BinningSm90 = BinningPolicy<SORTD_TUNE_SM90_KEYS_THREADS, SORTD_TUNE_SM90_KEYS_ITEMS,
                                  SORTD_TUNE_SM90_KEYS_MIN_BLOCKS>;
#else
/* On an H100, 20 keys a thread instead of 16 sorted u32 2^28 10% faster
   (docs/performance.md). They keep 4 blocks (64 registers) without
   spilling because each thread's ranks are packed three to a register
   (agent_binning.cuh); two to one, 19 and 20 spilled. */
using BinningSm90 = BinningPolicy<256, 20, 4>;
#endif
#ifdef SORTD_TUNE_SM90_PAIRS_THREADS
using BinningPairsSm90 = BinningPolicy<SORTD_TUNE_SM90_PAIRS_THREADS, SORTD_TUNE_SM90_PAIRS_ITEMS,
                                       SORTD_TUNE_SM90_PAIRS_MIN_BLOCKS>;
#else
using BinningPairsSm90 = BinningPolicy<256, 12, 3>;
#endif
/* sm_90: bigger keys-only tiles. 8-byte values keep the 4-byte values' tile
   of the other architectures, whose staging fits static shared memory. */
using Policy32Sm90 = OnesweepPolicy<HistogramPolicy<256, 16>, BinningSm90, BinningPairsSm90,
                                    BinningPolicy<256, 12, 3>>;
/* 64-bit keys (twice the registers per key). Left uncapped, ptxas spends
   all 255 registers on the kernels with values (one block an SM); capped at
   128 they keep 2 blocks without spilling. */
using Policy64 = OnesweepPolicy<HistogramPolicy<256, 8>, BinningPolicy<256, 12, 2>>;
/* sm_90's 64-bit keys: the tune step measures others, alone (-Dtune_sm90_keys64) and with values
   of either width (-Dtune_sm90_pairs64). A tile of more than 48 KiB of shared memory takes the
   launch's dynamic shared memory (compat.cuh: temp_storage), as CUB's 384 x 15 needs. */
#ifdef SORTD_TUNE_SM90_KEYS64_THREADS
using Binning64Sm90 = BinningPolicy<SORTD_TUNE_SM90_KEYS64_THREADS, SORTD_TUNE_SM90_KEYS64_ITEMS,
                                    SORTD_TUNE_SM90_KEYS64_MIN_BLOCKS>;
#else
using Binning64Sm90 = BinningPolicy<256, 12, 2>;
#endif
#ifdef SORTD_TUNE_SM90_PAIRS64_THREADS
using BinningPairs64Sm90 =
        BinningPolicy<SORTD_TUNE_SM90_PAIRS64_THREADS, SORTD_TUNE_SM90_PAIRS64_ITEMS,
                      SORTD_TUNE_SM90_PAIRS64_MIN_BLOCKS>;
#else
using BinningPairs64Sm90 = BinningPolicy<256, 12, 2>;
#endif
using Policy64Sm90 = OnesweepPolicy<HistogramPolicy<256, 8>, Binning64Sm90, BinningPairs64Sm90>;
/* sm_100: nvcc 13.0's ptxas spills the capped kernels there where sm_75..sm_90
   do not (u32 keys alone: 8 bytes at caps of 64, 80 and 128 registers), so
   the caps are lifted until one is tuned on a B200. */
using Policy32Uncapped =
        OnesweepPolicy<HistogramPolicy<256, 16>, BinningPolicy<256, 16>, BinningPolicy<256, 12>>;
using Policy64Uncapped = OnesweepPolicy<HistogramPolicy<256, 8>, BinningPolicy<256, 12>>;

/* The policies for 32- and 64-bit keys of the code built for architectures
   [BEGIN, END). */
template <int BEGIN, int END, class P32_, class P64_> struct Tuning {
        static constexpr int ARCH_BEGIN = BEGIN, ARCH_END = END;
        using P32 = ArchPolicy<BEGIN, END, P32_>;
        using P64 = ArchPolicy<BEGIN, END, P64_>;
};

using TuningSm75 = Tuning<750, 900, Policy32, Policy64>; /* Turing and Ampere, Ada */
using TuningSm90 = Tuning<900, 1000, Policy32Sm90, Policy64Sm90>;
using TuningSm100 = Tuning<1000, INT_MAX, Policy32Uncapped, Policy64Uncapped>;

/* What TuningList::pick() chooses is what built_here() builds: no gaps, no overlaps. */
template <class... T> constexpr bool tunings_contiguous()
{
        const int begin[] = {T::ARCH_BEGIN...}, end[] = {T::ARCH_END...};

        for (int i = 1; i < (int)sizeof...(T); i++)
                if (end[i] != begin[i - 1])
                        return false;
        return end[0] == INT_MAX;
}

/* The tunings, newest architectures first: each covers the architectures from its own
   ARCH_BEGIN up to the next newer one's (the engine refuses devices older than sm_75). */
template <class... T> struct TuningList {
        static_assert(tunings_contiguous<T...>(),
                      "each tuning ends where the next newer one begins");

        template <class F> static void each(F &&f)
        {
                (f(T()), ...);
        }

        template <class F> static auto pick(int arch, F &&f)
        {
                return pick_from<T...>(arch, f);
        }

      private:
        template <class First, class... Rest, class F> static auto pick_from(int arch, F &f)
        {
                if constexpr (sizeof...(Rest) == 0)
                        return f(First());
                else
                        return arch >= First::ARCH_BEGIN ? f(First()) : pick_from<Rest...>(arch, f);
        }
};

using Tunings = TuningList<TuningSm100, TuningSm90, TuningSm75>;

/* f(Tuning()) with the tuning of code built for arch (as __CUDA_ARCH__
   counts: 900 for sm_90). That is the kernels' PTX version, not the device's
   compute capability: an sm_89 device runs sm_80 code, and a device newer
   than every build runs the newest PTX, compiled for it. */
template <class F> auto with_tuning(int arch, F &&f)
{
        return Tunings::pick(arch, f);
}

/* f(Tuning()) for every tuning: the emulated tests run them all. */
template <class F> void each_tuning(F &&f)
{
        Tunings::each(f);
}

/*
 * The segmented kernel (agent_block_sort.cuh): one block sorts one small member of a batch
 * whole, every digit place in its registers and shared memory, one launch for a whole batch.
 */
template <int THREADS_, int ITEMS_> struct BlockSortPolicy {
        static constexpr int THREADS = THREADS_;
        static constexpr int ITEMS = ITEMS_;
        static constexpr int WARPS = THREADS / 32;
        static constexpr int TILE = THREADS * ITEMS;
        static_assert(THREADS % 32 == 0, "whole warps");
        static_assert(TILE < (1 << 16), "counts, positions and input indices fit 16 bits");
};

/*
 * Production: members of up to 4096 keys (256 threads x 16) take the segmented kernel. Why 4096:
 * - it is the tile of Onesweep's u32 keys-only binning pass (5120 on sm_90), so such a member
 *   would be one tile there anyway, and Onesweep would spend on it a histogram launch, a scan, a
 * host round trip for the histogram and a binning launch per digit place (4 to 8), each after the
 * last;
 * - 4096 u64 keys (32 KiB), their 16-bit input indices (8 KiB) and the warps' digit counters
 *   (4 KiB) take 44 of the 48 KiB of static shared memory a block may have: two tiles would
 *   not fit.
 * Larger members (the daemon batches up to 64Ki keys) go through Onesweep one at a time.
 */
using SegmentPolicy = BlockSortPolicy<256, 16>;

/*
 * Segmented sort's small class (segment_sort.cuh): one warp sorts a segment of up to 256 keys.
 * Its 3 KiB of shared memory (u64: 2 KiB of keys, 512 bytes of indices, 512 of counters) and
 * 87 registers (sm_90, PTXAS.md) let an SM run about 23 such segments at once, where the medium
 * policy's 256 threads x 108 registers run 2: a segment of tens of keys would leave 7 of a
 * block's 8 warps idle.
 */
using SmallSegmentPolicy = BlockSortPolicy<32, 8>;

/*
 * A single sort of up to SMALL_SORT_MAX keys is one launch of the segmented kernel, one warp or
 * one block (dispatch.cuh: small_sort), not Onesweep's sequence of memsets, launches and a wait
 * for the histogram, whose fixed cost is most of a small sort's time on a GPU. The tune step
 * builds a variant without it (-Dtune_small_sort=0, meson_options.txt), to measure the gain.
 */
#ifndef SORTD_TUNE_SMALL_SORT_MAX
#define SORTD_TUNE_SMALL_SORT_MAX SegmentPolicy::TILE
#endif
constexpr uint32_t SMALL_SORT_MAX = SORTD_TUNE_SMALL_SORT_MAX;
static_assert(SMALL_SORT_MAX <= (uint32_t)SegmentPolicy::TILE, "one block holds the sort");

/*
 * Radix select's stable gather (agent_select.cuh): a block counts, then writes, the selected keys
 * of a tile of THREADS x ITEMS consecutive keys, in ITEMS rounds. The tiles' counts live in the
 * engine's status counters, which hold as many words as the smallest binning tile fits in the
 * capacity (at least 3,072 keys a tile, x RADIX words): a tile of 4096 keys needs fewer.
 */
template <int THREADS_, int ITEMS_> struct SelectPolicy {
        static constexpr int THREADS = THREADS_;
        static constexpr int ITEMS = ITEMS_;
        static constexpr int TILE = THREADS * ITEMS;
        static_assert(THREADS % 32 == 0, "whole warps");
};

using RadixSelectPolicy = SelectPolicy<256, 16>;

/* Largest n the kernels take: counts, indices and launch arithmetic are
   32-bit, with room for a tile's rounding. */
constexpr uint64_t MAX_KEYS = (1ull << 32) - (1u << 16);

} /* namespace sortd_cuda */

#endif
