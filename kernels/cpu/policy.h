/*
 * The CPU engine's tuning policy: every knob of kernels/cpu/, and beside each
 * the measurement that chose it (the commit that holds the figures in
 * brackets). "Not swept" says that a value was set once and no other value
 * was measured. Figures are from the 2-core development VM (AMD EPYC, Zen 5)
 * with 2 threads unless said otherwise.
 *
 * Knobs under #ifndef can be overridden at build time for such measurements,
 * e.g. -DSORTD__CPU_TILE_KEYS=262144.
 */
#ifndef SORTD_CPU_POLICY_H
#define SORTD_CPU_POLICY_H

/* ---- facts the policy rests on, not knobs ------------------------------ */

/* 8-bit digits: the histogram pass reads place k as byte k of a key. */
#define SORTD__RADIX 256u
#define SORTD__MAX_PLACES 8u
#define SORTD__LINE 64u

/* ---- tiles -------------------------------------------------------------- */

/* Keys per tile of a binning pass. A tile's keys stay in L2 between the
   counting and the ranking phase; 128 Ki amortises the per-tile costs (look-
   back over 256 digits, 256 runs written out): 2^26 u32, 32 Ki -> 128 Ki
   tiles took 345 -> 387 Mkeys/s, and 256 Ki gained 1% for u32 but lost for
   u64 (c6e8264). */
#ifndef SORTD__CPU_TILE_KEYS
#define SORTD__CPU_TILE_KEYS 131072u
#endif

/* Parts of a tile, counted and ranked side by side with their own counters,
   so that a run of one digit makes this many short dependency chains: one
   thread in cache, q = 8 keys 85 -> 147 Mkeys/s with four parts, uniform
   unchanged (29929e9). The dominant-digit table is built for four. */
#define SORTD__STREAMS 4u

/* A thread per this many keys at most: below it fork-join costs more than
   the work it shares. Not swept. */
#define SORTD__KEYS_PER_THREAD (2 * SORTD__CPU_TILE_KEYS)

/* ---- histogram pass ----------------------------------------------------- */

/* Counter sets taken in turn, so a run of equal digits makes eight chains:
   one thread, 2^25 u32, q = 8 keys 1.26 -> 0.98 ns/key from four sets to
   eight, uniform 0.80 either way; engine, 2^26 q8 380 -> 411-426 Mkeys/s
   (7274963). u64 keys keep four: eight sets of seven places would not fit in
   L1. */
#define SORTD__HIST_SETS 8u
#define SORTD__HIST_SETS_U64 (SORTD__HIST_SETS / 2)

/* A row of counters: 256 and a line of padding, so the counters of one digit
   in different sets and places never lie a multiple of 4 KiB apart. The core
   matches a load against pending stores by the low 12 address bits, so there
   a load waits on an unrelated store: q = 8 keys bump digit 0 of every set
   and place, and their pass took 42 ms instead of 37 (2^26 u32, 4e83a48). */
#define SORTD__HIST_ROW (SORTD__RADIX + 16u)

/* Keys sampled at the start of a tile's part for one value that would make
   up the part, then counted in a register: 2^26 all-equal u32 1600 -> 5200-
   5400 Mkeys/s, q16 +13% (1cd63c9). The sample size is not swept. */
#define SORTD__ONE_VALUE_SAMPLE 64u

/* ---- binning passes ----------------------------------------------------- */

/* How far ahead of the ranking loops their source is prefetched, in keys.
   The hardware's stream prefetcher alone let a loop that ranks a key in a
   few cycles wait on DRAM: 2^26 u32 1.11x, 2^25 u64 1.21x, u32 pairs and
   argsort 1.10x; 256, 1024 and 2048 were within 3% of 512 (1140dc3). */
#ifndef SORTD__PREFETCH_KEYS
#define SORTD__PREFETCH_KEYS 512u
#endif

/* From this many bytes moved per pass, full lines go out with non-temporal
   stores; below it they would push data out of the caches the next pass
   reads from. Set as "larger than the caches" with the first engine
   (488c244); not swept. */
#ifndef SORTD__STREAM_MIN_BYTES
#define SORTD__STREAM_MIN_BYTES (16u << 20)
#endif

/* ---- buckets (ranking without counting first) --------------------------- */

/* Buckets pay from this many keys: below, a pass has a tile or two, and
   planning them costs more than counting does. A 1,024-key sort took 17-19
   us with buckets and 10.8-10.9 without; sortd-bench's 8-client small sorts
   32-34k/s against 47.7k/s (7109723). */
#define SORTD__BUCKETS_MIN_KEYS (2 * SORTD__CPU_TILE_KEYS)

/* A bucket holds a full tile's expected count of its digit plus this many
   standard deviations and SORTD__BUCKET_SLACK keys, so independent keys
   overrun one only by the rarest chance. Buckets instead of counting first:
   2^26 u32 405 -> 450 Mkeys/s, 2^25 u64 160 -> 181, u32 pairs 259 -> 290,
   argsort 265 -> 296 (28c43b1). The five is not swept. */
#define SORTD__BUCKET_SIGMAS 5u
#define SORTD__BUCKET_SLACK 16u

/* Tiles of a pass whose keys may overrun their buckets before a thread goes
   back to counting first: keys that overrun again and again cluster
   (28c43b1). Not swept. */
#define SORTD__MAX_OVERRUNS 4u

/* A place is ranked by buckets only while no digit expects more than this
   share of a tile's keys (1 / this): on a skewed place one counter is bumped
   key after key, which the four parts of a counted tile spread (28c43b1).
   Not swept. */
#ifndef SORTD__BUCKETS_MAX_SHARE
#define SORTD__BUCKETS_MAX_SHARE 16u
#endif

/* ... unless one digit holds all but this share (1 / this) of them in a
   keys-only sort: its slot is kept in a register, 2^26 q8 298 -> 403-406
   Mkeys/s (0e0312f). With values, the second loop cost the plain one 15%
   (u32 argsort 2^25 305 -> 258 Mkeys/s, acd78ba), so such a place counts
   first. The share is not swept. */
#ifndef SORTD__DOMINANT_MIN_SHARE
#define SORTD__DOMINANT_MIN_SHARE 16u
#endif

/* Slots of a thread's local buffers: a tile ranked into buckets can overrun
   its last bucket by up to a tile before the overrun is seen, so buckets are
   planned to leave a tile free; for any histogram they take at most 1.26
   tiles (plan.c). */
#define SORTD__LOCAL_KEYS (5 * SORTD__CPU_TILE_KEYS / 2)

/* ---- look-back ---------------------------------------------------------- */

/* Pauses while a predecessor's status word is not ready before the thread
   yields instead: a tile behind has taken its ticket, so it runs, but an
   oversubscribed machine may need the core handed over. Not swept. */
#define SORTD__SPINS_BEFORE_YIELD 256u

/* ---- segments and top-k (segments.c, select.c) -------------------------- */

/* Segments of up to this many keys are sorted (or selected from) by a stable
   insertion sort over their images in registers and L1: below a few dozen
   keys it beats the small sort's fixed cost of 256-bin counts per place. Not
   swept. */
#ifndef SORTD__TINY_KEYS
#define SORTD__TINY_KEYS 32u
#endif

/* Chunks of segments that a call's threads take by ticket: enough to balance
   segments of unequal lengths, few enough that 10^6 one-key segments cost a
   few thousand atomics, not 10^6. Not swept. */
#define SORTD__SEG_CHUNKS 4096u

/* A segment's fixed cost (finding it, dispatching it) in keys' worth of
   work, when a call decides how many threads to wake. Not swept. */
#define SORTD__SEG_COST_KEYS 16u

/* The widest digit a radix select histograms: 4,096 u64 counters stay in
   L1/L2, and 2^24 keys then leave ~4,096 per bucket after one pass. */
#define SORTD__SELECT_MAX_BITS 12u

/* A select stops narrowing and sorts what it gathered (the keys before the
   k-th key's bucket and that bucket) once that is at most this many keys,
   twice k, or 1/SORTD__SELECT_GATHER_SHARE of the segment: another
   histogram pass reads the whole segment, sorting the gather only it. Not
   swept. */
#define SORTD__SELECT_GATHER_KEYS 4096u
#define SORTD__SELECT_GATHER_SHARE 64u

/* A select of a large segment wakes a thread per this many keys at most: its
   passes stream the keys with little work on each, and pay for a wake-up
   sooner than a sort's. Not swept. */
#define SORTD__SELECT_KEYS_PER_THREAD 65536u

/* A copy of a select (its results, or keys that changed under it) is split
   over the threads in shares of at least this many bytes, as the GPU
   engines' staging copies are. */
#define SORTD__SELECT_COPY_MIN ((size_t)512 << 10)

/* ---- what must hold ----------------------------------------------------- */

_Static_assert(SORTD__CPU_TILE_KEYS <= (1u << 30), "a tile's counts fit 32-bit counters");
_Static_assert(SORTD__LOCAL_KEYS >= 2 * SORTD__CPU_TILE_KEYS,
               "a dominant digit's bucket (a tile) and a tile of overrun fit");

#endif
