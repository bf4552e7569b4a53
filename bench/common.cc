/*
 * What the CPU benchmark (sortbench.cc) and the GPU sweep (gpu.cc) share: a
 * case's generated input, our engines as contestants with their exact check
 * against the stable reference, the traffic model of the bound, and timing.
 */
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "bench.h"

namespace sortbench
{

namespace
{

/* One of our engines on one case: keys, then values at the next 64-byte boundary. */
class engine_run : public run
{
      public:
        engine_run(sortd_engine *e, const input &in, const sorted_result &want, void *work,
                   unsigned threads)
            : e_(e), in_(in), want_(want), keys_(work),
              vals_(static_cast<char *>(work) + vals_offset(in)), threads_(threads)
        {
        }

        void load() override
        {
                copy(keys_, in_.keys.as<void>(), in_.n * in_.key_bytes);
                if (in_.val_bytes && !in_.argsort)
                        copy(vals_, in_.vals.as<void>(), in_.n * in_.val_bytes);
        }

        outcome sort(std::string &why) override
        {
                sortd_sort_desc d = {in_.type, in_.payload, SORTD_ASCENDING, 0, 0};
                sortd_status s =
                        sortd_engine_sort(e_, &d, keys_, in_.val_bytes ? vals_ : nullptr, in_.n);
                if (s == SORTD_OK)
                        return outcome::ok;
                why = std::string(sortd_strerror(s)) + ": " + sortd_engine_error(e_);
                return s == SORTD_E_UNSUPPORTED ? outcome::unsupported : outcome::failed;
        }

        /* Our sorts are stable: the result has one possible value, byte for byte. */
        bool verify(std::string &why) override
        {
                size_t kb = in_.n * in_.key_bytes, vb = in_.n * in_.val_bytes;
                size_t k = first_difference(keys_, want_.keys.as<void>(), kb, threads_);
                size_t v =
                        k < kb ? vb : first_difference(vals_, want_.vals.as<void>(), vb, threads_);

                if (k < kb)
                        why = "key at position " + std::to_string(k / in_.key_bytes);
                else if (v < vb)
                        why = std::string(in_.argsort ? "index" : "value") + " at position " +
                              std::to_string(v / in_.val_bytes);
                else
                        return true;
                why += " differs from the stable reference";
                return false;
        }

      private:
        sortd_engine *e_;
        const input &in_;
        const sorted_result &want_;
        void *keys_;
        void *vals_;
        unsigned threads_;

        void copy(void *dst, const void *src, size_t bytes) const
        {
                parallel_for(bytes, threads_, [&](size_t lo, size_t hi) {
                        memcpy(static_cast<char *>(dst) + lo, static_cast<const char *>(src) + lo,
                               hi - lo);
                });
        }
};

} // namespace

std::unique_ptr<run> make_engine_run(sortd_engine *e, const input &in, const sorted_result &want,
                                     void *work, unsigned threads)
{
        return std::make_unique<engine_run>(e, in, want, work, threads);
}

size_t vals_offset(const input &in)
{
        return (in.n * in.key_bytes + 63) / 64 * 64;
}

double now()
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> v)
{
        std::sort(v.begin(), v.end());
        size_t h = v.size() / 2;
        return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

/* Prints a note to stderr once per distinct text. */
void note(const std::string &text)
{
        static std::set<std::string> seen;

        if (seen.insert(text).second)
                fprintf(stderr, "sortbench: note: %s\n", text.c_str());
}

/* Memory traffic per key of an LSD sort with 8-bit digits (see --help). */
double bytes_per_key(const input &in)
{
        double p = in.key_bytes, k = in.key_bytes, v = in.val_bytes;

        return (2 * p + 1) * k + (in.argsort ? 2 * p - 1 : in.val_bytes ? 2 * p : 0) * v;
}

void fill_input(input &in, sortd_key_type t, sortd_payload p, const dist_spec &d, size_t n,
                uint64_t seed, unsigned threads)
{
        bool values;

        in.type = t;
        in.payload = p;
        in.n = n;
        in.key_bytes = unsigned(sortd_key_size(t));
        in.val_bytes = unsigned(sortd_payload_size(p));
        in.argsort = p == SORTD_PAYLOAD_ARGSORT32 || p == SORTD_PAYLOAD_ARGSORT64;
        values = in.val_bytes && !in.argsort;
        in.keys = buffer(n * in.key_bytes);
        if (values)
                in.vals = buffer(n * in.val_bytes);
        parallel_for(n, threads, [&](size_t lo, size_t hi) {
                datagen_fill_range(in.keys.as<void>(), n, lo, hi, t, d.dist, d.param, seed);
                if (values)
                        datagen_fill_values_range(in.vals.as<void>(), lo, hi, in.val_bytes,
                                                  seed + 1);
                remove_nans(in, lo, hi);
        });
        in.hash = input_hash(in, threads);
}

std::string size_name(size_t n)
{
        if (n && !(n & (n - 1)))
                return "2^" + std::to_string(__builtin_ctzll(n));
        return std::to_string(n);
}

} // namespace sortbench
