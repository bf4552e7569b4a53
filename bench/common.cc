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
        engine_run(sortd_engine *e, const input &in, const std::vector<uint32_t> &ref, void *work)
            : e_(e), in_(in), ref_(ref), keys_(work),
              vals_(static_cast<char *>(work) + (in.n * in.key_bytes + 63) / 64 * 64)
        {
        }

        void load() override
        {
                memcpy(keys_, in_.keys.as<void>(), in_.n * in_.key_bytes);
                if (in_.val_bytes && !in_.argsort)
                        memcpy(vals_, in_.vals.as<void>(), in_.n * in_.val_bytes);
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

        /* Our sorts are stable: the result must equal the reference exactly. */
        bool verify(std::string &why) override
        {
                const void *in_keys = in_.keys.as<void>(), *in_vals = in_.vals.as<void>();

                for (size_t i = 0; i < in_.n; i++) {
                        size_t from = ref_[i];
                        if (load_word(keys_, i, in_.key_bytes) !=
                            load_word(in_keys, from, in_.key_bytes)) {
                                why = "key at position " + std::to_string(i) +
                                      " differs from the stable reference";
                                return false;
                        }
                        if (!in_.val_bytes)
                                continue;
                        uint64_t want =
                                in_.argsort ? from : load_word(in_vals, from, in_.val_bytes);
                        if (load_word(vals_, i, in_.val_bytes) != want) {
                                why = std::string(in_.argsort ? "index" : "value") +
                                      " at position " + std::to_string(i) +
                                      " differs from the stable reference";
                                return false;
                        }
                }
                return true;
        }

      private:
        sortd_engine *e_;
        const input &in_;
        const std::vector<uint32_t> &ref_;
        void *keys_;
        void *vals_;
};

} // namespace

std::unique_ptr<run> make_engine_run(sortd_engine *e, const input &in,
                                     const std::vector<uint32_t> &ref, void *work)
{
        return std::make_unique<engine_run>(e, in, ref, work);
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
                uint64_t seed)
{
        in.type = t;
        in.payload = p;
        in.n = n;
        in.key_bytes = unsigned(sortd_key_size(t));
        in.val_bytes = unsigned(sortd_payload_size(p));
        in.argsort = p == SORTD_PAYLOAD_ARGSORT32 || p == SORTD_PAYLOAD_ARGSORT64;
        in.keys = buffer(n * in.key_bytes);
        datagen_fill(in.keys.as<void>(), n, t, d.dist, d.param, seed);
        if (in.val_bytes && !in.argsort) {
                in.vals = buffer(n * in.val_bytes);
                datagen_fill_values(in.vals.as<void>(), n, in.val_bytes, seed + 1);
        }
        remove_nans(in);
        in.hash = input_hash(in);
}

std::string size_name(size_t n)
{
        if (n && !(n & (n - 1)))
                return "2^" + std::to_string(__builtin_ctzll(n));
        return std::to_string(n);
}

} // namespace sortbench
