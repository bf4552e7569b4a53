/*
 * sortbench --segments, at the engine level: rows of u32 keys (with the first --payload's
 * values or indices) sorted in one sortd_engine_sort_segments call against one
 * sortd_engine_sort call a row, and the top-k of
 * n u32 keys (sortd_engine_topk) against a full sort of them, on each engine of ours asked for,
 * keys in host memory. Each pair of timings is taken back to back, the order alternating from
 * pair to pair (--repeats pairs), and the ratio reported is the median of the pairs' ratios:
 * the machine's speed drifts over seconds, and a pair sees one speed. Every result is checked
 * (the segmented rows equal the separate sorts', each row sorted; the top-k equals the full
 * sort's first k).
 */
#include <cstdio>
#include <cstring>
#include <functional>

#include "bench.h"

namespace sortbench
{

namespace
{

const sortd_sort_desc u32_desc = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};

/* The medians of a's and b's timings and of their pairs' ratio a / b, over `pairs` pairs,
   a first in even pairs, check() after each pair. Each returns false on a failure (a and b
   after a note, check after an error). */
struct paired {
        double a, b, ratio;
};

using timed_fn = std::function<bool(double &)>;

bool time_pairs(unsigned pairs, const timed_fn &a, const timed_fn &b,
                const std::function<bool()> &check, paired &out)
{
        std::vector<double> ta(pairs), tb(pairs), r(pairs);

        for (unsigned i = 0; i < pairs; i++) {
                bool ok = i % 2 ? b(tb[i]) && a(ta[i]) : a(ta[i]) && b(tb[i]);
                if (!ok || !check())
                        return false;
                r[i] = ta[i] / tb[i];
        }
        out = {median(ta), median(tb), median(r)};
        return true;
}

/* f's seconds, or false after a note naming the engine's error (unsupported included). */
bool timed_call(sortd_engine *e, const std::string &what, double &secs,
                const std::function<sortd_status()> &f)
{
        double t0 = now();
        sortd_status s = f();

        secs = now() - t0;
        if (s != SORTD_OK)
                note(what + ": " + sortd_strerror(s) + ": " + sortd_engine_error(e));
        return s == SORTD_OK;
}

class segments_bench
{
      public:
        explicit segments_bench(const options &o)
            : o_(o), rows_n_(o.rows * o.row_len),
              topk_n_(o.cases.sizes.empty() ? size_t(1) << 24 : o.cases.sizes[0]),
              input_(std::max(rows_n_, topk_n_) * 4), one_(input_.bytes()),
              many_(input_.bytes()), rows_desc_{SORTD_KEY_U32, o.cases.payloads[0], SORTD_ASCENDING,
                                                0, 0},
              vb_(sortd_payload_size(rows_desc_.payload)), vals_(rows_n_ * vb_ + 1),
              one_v_(vals_.bytes()), many_v_(vals_.bytes())
        {
                datagen_fill(input_.as<void>(), std::max(rows_n_, topk_n_), SORTD_KEY_U32,
                             DATAGEN_UNIFORM, 0, o.seed);
                if (vb_)
                        datagen_fill_values(vals_.as<void>(), rows_n_, (unsigned)vb_, o.seed + 1);
                fault_in(one_, threads());
                fault_in(many_, threads());
        }

        /* 0, or 1 after a wrong result; an engine that cannot run a part says so. */
        int run(const std::string &kind)
        {
                sortd_engine *e = create(kind);
                int rc = 0;

                if (!e)
                        return 0;
                if (o_.rows)
                        rc |= rows(e, kind);
                if (o_.k)
                        rc |= topk(e, kind);
                sortd_engine_destroy(e);
                return rc;
        }

      private:
        const options &o_;
        size_t rows_n_, topk_n_;
        buffer input_, one_, many_;
        sortd_sort_desc rows_desc_; /* the rows' keys and their payload */
        size_t vb_;
        buffer vals_, one_v_, many_v_; /* the rows' values as generated, and after each form */

        unsigned threads() const
        {
                return *std::max_element(o_.threads.begin(), o_.threads.end());
        }

        sortd_engine *create(const std::string &kind)
        {
                sortd_engine_config cfg{};
                sortd_engine *e = nullptr;
                char why[256] = "";

                cfg.capacity = std::max(rows_n_, topk_n_);
                cfg.threads = threads();
                sortd_status s = sortd_engine_create(kind.c_str(), &cfg, &e, why, sizeof(why));
                if (s != SORTD_OK) {
                        note("engine " + kind + " skipped: " + sortd_strerror(s) + ": " + why);
                        return nullptr;
                }
                printf("# engine %s, threads=%u: %s\n", kind.c_str(), threads(),
                       sortd_engine_device(e));
                return e;
        }

        bool segmented(sortd_engine *e, const std::string &kind, double &secs)
        {
                sortd_segments seg{o_.rows, o_.row_len, nullptr, 0};
                memcpy(one_.as<void>(), input_.as<void>(), rows_n_ * 4);
                memcpy(one_v_.as<void>(), vals_.as<void>(), rows_n_ * vb_);
                return timed_call(e, kind + " segmented sort", secs, [&] {
                        return sortd_engine_sort_segments(e, &rows_desc_, &seg, SORTD_MEMORY_HOST,
                                                          one_.as<void>(), vals_of(one_v_),
                                                          rows_n_);
                });
        }

        bool separate(sortd_engine *e, const std::string &kind, double &secs)
        {
                memcpy(many_.as<void>(), input_.as<void>(), rows_n_ * 4);
                memcpy(many_v_.as<void>(), vals_.as<void>(), rows_n_ * vb_);
                return timed_call(e, kind + " sort of a row", secs, [&] {
                        sortd_status s = SORTD_OK;
                        for (size_t i = 0; i < o_.rows && s == SORTD_OK; i++) {
                                size_t at = i * o_.row_len;
                                void *v = vb_ ? many_v_.as<unsigned char>() + at * vb_ : nullptr;

                                s = sortd_engine_sort(e, &rows_desc_, many_.as<uint32_t>() + at, v,
                                                      o_.row_len);
                        }
                        return s;
                });
        }

        void *vals_of(const buffer &b) const
        {
                return vb_ ? b.as<void>() : nullptr;
        }

        bool rows_right() const
        {
                const uint32_t *a = one_.as<uint32_t>();

                if (memcmp(a, many_.as<void>(), rows_n_ * 4) != 0 ||
                    memcmp(one_v_.as<void>(), many_v_.as<void>(), rows_n_ * vb_) != 0)
                        return false;
                for (size_t i = 1; i < rows_n_; i++)
                        if (i % o_.row_len && a[i - 1] > a[i])
                                return false;
                return true;
        }

        /* A wrong result makes sortbench exit 1; an unsupported part is a note. */
        bool wrong(const std::string &what)
        {
                fprintf(stderr, "sortbench: error: %s\n", what.c_str());
                failed_ = true;
                return false;
        }

        int rows(sortd_engine *e, const std::string &kind)
        {
                paired p;
                auto one = [&](double &s) { return segmented(e, kind, s); };
                auto many = [&](double &s) { return separate(e, kind, s); };
                auto check = [&] {
                        return rows_right() || wrong(kind + ": segmented rows differ from the "
                                                            "separate sorts' or are unsorted");
                };

                if (!time_pairs(o_.repeats, many, one, check, p))
                        return failed_ ? 1 : 0;
                /* No target here: the 5x target is of one request against 10^4 requests
                   through the daemon (sortd-bench --segments), which pay what a call does not. */
                printf("%-5s rows %zu x %zu u32%s%s: segmented %9.2f ms, a call a row %9.2f ms: "
                       "%.2fx faster (median of %u pairs)\n",
                       kind.c_str(), o_.rows, o_.row_len, vb_ ? " + " : "",
                       vb_ ? sortd_payload_name(rows_desc_.payload) : "", p.b * 1e3, p.a * 1e3,
                       p.ratio, o_.repeats);
                fflush(stdout);
                return 0;
        }

        bool top(sortd_engine *e, const std::string &kind, double &secs)
        {
                return timed_call(e, kind + " top-k", secs, [&] {
                        return sortd_engine_topk(e, &u32_desc, nullptr, o_.k, SORTD_MEMORY_HOST,
                                                 input_.as<void>(), nullptr, one_.as<void>(),
                                                 nullptr, topk_n_);
                });
        }

        bool full(sortd_engine *e, const std::string &kind, double &secs)
        {
                memcpy(many_.as<void>(), input_.as<void>(), topk_n_ * 4);
                return timed_call(e, kind + " full sort", secs, [&] {
                        return sortd_engine_sort(e, &u32_desc, many_.as<void>(), nullptr, topk_n_);
                });
        }

        int topk(sortd_engine *e, const std::string &kind)
        {
                paired p;
                auto t = [&](double &s) { return top(e, kind, s); };
                auto f = [&](double &s) { return full(e, kind, s); };
                auto check = [&] {
                        return memcmp(one_.as<void>(), many_.as<void>(), o_.k * 4) == 0 ||
                               wrong(kind + ": the top-k differs from the full sort's first k");
                };

                if (!time_pairs(o_.repeats, t, f, check, p))
                        return failed_ ? 1 : 0;
                printf("%-5s top-k %zu of %s u32: top-k %9.2f ms, full sort %9.2f ms: %.3fx the "
                       "time (median of %u pairs%s)\n",
                       kind.c_str(), o_.k, size_name(topk_n_).c_str(), p.a * 1e3, p.b * 1e3,
                       p.ratio, o_.repeats,
                       topk_n_ == size_t(1) << 24 && o_.k == 1000 ? "; target <= 0.3x" : "");
                fflush(stdout);
                return 0;
        }

        bool failed_ = false;
};

} // namespace

int run_segments(const options &o)
{
        int rc = 0;

        if (o.k > (o.cases.sizes.empty() ? size_t(1) << 24 : o.cases.sizes[0])) {
                fprintf(stderr, "sortbench: --k is more than --n's keys\n");
                return 2;
        }
        segments_bench b(o);
        for (const auto &name : o.engines)
                if (is_ours(name))
                        rc |= b.run(name);
        return rc;
}

} // namespace sortbench
