/*
 * What bench/sortbench's parts share: one generated input, one timed run of a
 * contestant (our engine or a peer), the checks every run passes, and the
 * command line (options.cc) that picks the cases and the contestants.
 */
#ifndef SORTD_BENCH_H
#define SORTD_BENCH_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "datagen.h"
#include "engine.h"

namespace sortbench
{

/* An uninitialised byte buffer, 2 MiB aligned from 2 MiB up (64 below); madvise(MADV_HUGEPAGE)
   when use_huge_pages(true) was called. */
class buffer
{
      public:
        buffer() = default;
        explicit buffer(size_t bytes);
        template <class T> T *as() const
        {
                return static_cast<T *>(mem_.get());
        }
        size_t bytes() const
        {
                return bytes_;
        }
        static void use_huge_pages(bool on);

      private:
        struct release {
                void operator()(void *p) const;
        };
        std::unique_ptr<void, release> mem_;
        size_t bytes_ = 0;
};

/* One case's data, generated once and shared read-only by every run. */
struct input {
        sortd_key_type type;
        sortd_payload payload;
        size_t n;
        unsigned key_bytes, val_bytes;
        bool argsort;
        buffer keys;
        buffer vals;   /* VALUES32/64 payloads only */
        uint64_t hash; /* multiset hash of (key bits, value or input index) */
};

enum class outcome { ok, unsupported, failed };

/* A contestant prepared for one case: load and verify are untimed, sort is timed. */
class run
{
      public:
        virtual ~run() = default;
        /* Copies the input into the work buffer. */
        virtual void load() = 0;
        /* Sorts; on an error returns why, and whether the request is merely unsupported. */
        virtual outcome sort(std::string &why) = 0;
        /* Checks the work buffer after a sort; false and a message if wrong. */
        virtual bool verify(std::string &why) = 0;
};

/*
 * f(lo, hi) over [0, n) in up to `threads` contiguous parts, each on a thread
 * of its own (the caller runs the first). The host work around a GPU sort of
 * 2^28 keys (generating, the reference, checking) took longer than the sorts
 * on one thread; parts under 2^16 items are not worth a thread.
 */
template <class F> void parallel_for(size_t n, unsigned threads, const F &f)
{
        const size_t min_part = size_t(1) << 16;
        size_t parts = std::max<size_t>(1, std::min<size_t>(threads, n / min_part));
        std::vector<std::thread> pool;

        for (size_t p = 1; p < parts; p++) {
                size_t lo = n * p / parts, hi = n * (p + 1) / parts;
                try {
                        pool.emplace_back([&f, lo, hi] { f(lo, hi); });
                } catch (const std::system_error &) {
                        f(lo, hi); /* no thread to be had: the part still gets done */
                }
        }
        f(0, n / parts);
        for (auto &t : pool)
                t.join();
}

/* Element i of an array of 1-, 2-, 4- or 8-byte words, zero-extended. */
uint64_t load_word(const void *base, size_t i, unsigned bytes);

/* Hash of one (key bits, value) pair; a multiset hash is the sum over pairs. */
uint64_t pair_hash(uint64_t key_bits, uint64_t val);

/* The input's multiset hash: pairs (key, value), (key, index) for argsort, (key, 0) for none. */
uint64_t input_hash(const input &in, unsigned threads);

/* Maps the NaNs among keys [lo, hi) to finite values (lowest exponent bit cleared); see --help. */
void remove_nans(input &in, size_t lo, size_t hi);

/*
 * The one result a stable sort of the input in the engines' key order
 * (totalOrder for floats) can have: its keys, and its values or argsort
 * indices (empty without a payload), from the reference sort.
 */
struct sorted_result {
        buffer keys;
        buffer vals;
};
sorted_result stable_result(const input &in, unsigned threads);

/* The byte offset of the first difference between a and b, or `bytes` if there is none. */
size_t first_difference(const void *a, const void *b, size_t bytes, unsigned threads);

/* Writes zeros over the buffer: its pages are faulted in before anything is timed. */
void fault_in(buffer &b, unsigned threads);

/* Bytes of the work buffer that fits any contestant's layout for this input. */
size_t work_bytes(const input &in);

/* Where our engines' runs put the values in the work buffer: after the keys, 64-byte aligned. */
size_t vals_offset(const input &in);

/* The CPU sorting peers, in report order, and whether each uses more than one thread. */
const std::vector<std::string> &peer_names();
bool peer_is_threaded(const std::string &name);

/*
 * A peer's run on in, sorting in work with `threads` threads (threaded peers
 * only). nullptr and a reason when the peer has no form for this input.
 */
std::unique_ptr<run> peer_prepare(const std::string &name, const input &in, unsigned threads,
                                  void *work, std::string &why);

/* A --dist item: the generator's distribution and parameter, and its name. */
struct dist_spec {
        datagen_dist dist;
        unsigned param;
        std::string name;
};

/* Generates a case's input (floats without NaNs, see remove_nans) and its hash; the data
   depends on the seed only, not on the number of threads. */
void fill_input(input &in, sortd_key_type t, sortd_payload p, const dist_spec &d, size_t n,
                uint64_t seed, unsigned threads);

/* One of our engines on in, sorting in work; verify demands the bytes of want exactly.
   Loading and checking use `threads` threads. */
std::unique_ptr<run> make_engine_run(sortd_engine *e, const input &in, const sorted_result &want,
                                     void *work, unsigned threads);

/* Memory traffic per key of an LSD sort with 8-bit digits (sortbench --help, "Bound"). */
double bytes_per_key(const input &in);

/* CLOCK_MONOTONIC seconds. */
double now();
double median(std::vector<double> v);
/* Prints "sortbench: note: text" to stderr once per distinct text. */
void note(const std::string &text);
/* 2^k for powers of two, else the number. */
std::string size_name(size_t n);

/* The lists whose product is a run's cases. */
struct case_lists {
        std::vector<sortd_key_type> types{SORTD_KEY_U32};
        std::vector<sortd_payload> payloads{SORTD_PAYLOAD_NONE};
        std::vector<dist_spec> dists;
        std::vector<size_t> sizes;

        /* f(type, payload, dist, n) for each case, sizes varying fastest. */
        template <class F> void for_each(F f) const
        {
                for (auto t : types)
                        for (auto p : payloads)
                                for (const auto &d : dists)
                                        for (auto n : sizes)
                                                f(t, p, d, n);
        }
};

/* sortbench's command line (options.cc). */
struct options {
        case_lists cases; /* sizes empty: each of run_all's sweeps takes its own default */
        std::vector<unsigned> threads;
        unsigned repeats = 5;
        std::vector<std::string> engines;
        uint64_t seed = 1;
        bool json = false;
        std::vector<std::string> memory{"pageable"}; /* GPU engines: pageable, pinned, device */
        bool model = false;              /* the kernels' cost model on the emulator, no timing */
        std::vector<unsigned> archs{90}; /* --model's architectures: 90 for sm_90 */
        bool segments = false;           /* rows and top-k instead (segments.cc) */
        size_t rows = 10000, row_len = 1024; /* --segments: rows x row-len (rows 0: none) */
        size_t k = 1000;                     /* --segments: top-k of --n (0: none) */
};

/* argv with the defaults filled in. A bad option exits 2 after one line on
   stderr, --help exits 0 after the usage text: the process is sortbench. */
options parse_options(int argc, char **argv);

/* --model: the cuda engine's kernels on the SIMT emulator, per launch and per
   key, beside the Onesweep minimum (tests/support/simt/kernel_model.h);
   1 if a modelled sort is wrong, 2 where the build has no emulator. */
int run_model(const options &o);

/* --segments (segments.cc): on each engine of ours in --engines, --rows rows of --row-len u32
   keys in one segmented call against a call a row, and the top --k of --n (its first size,
   default 2^24) u32 keys against a full sort; 0, 1 after a wrong result, 2 for a bad --k. */
int run_segments(const options &o);

/* Whether an --engines name is one of ours (cpu, cuda, cub), one of ours on
   the GPU, a CPU sorting peer. */
bool is_ours(const std::string &name);
bool is_gpu(const std::string &name);
bool is_peer(const std::string &name);

/* What the GPU sweep (gpu.cc) runs: every case on each engine that holds its n. */
struct gpu_request {
        std::vector<std::string> engines; /* "cuda", "cub", in --engines order */
        case_lists cases;
        unsigned repeats;
        unsigned host_threads; /* for generating, the reference sort and checking on the host */
        uint64_t seed;
        bool json;
        std::vector<std::string> memory; /* pageable, pinned, device: a row each */
};

/* 0, also when no engine could be created (one line each says why); 1 after a
   failed sort or check. */
int gpu_sweep(const gpu_request &r);

} // namespace sortbench

#endif
