/*
 * sortbench's measuring: the copy bound, each case's race of our engines
 * against the best CPU sorts in Debian in one process on the same generated
 * data, and main, which then hands cuda and cub to their sweep (gpu.cc).
 * usage() (options.cc) says what is measured. The bandwidth bounds: an LSD
 * sort with 8-bit digits over p = key bytes digit places moves (2p + 1) x
 * key bytes per key, plus 2p x value bytes (values) or (2p - 1) x index
 * bytes (argsort). The CPU bound divides the measured memcpy rate by that;
 * the GPU bound the device's peak bandwidth, 2 x memory clock x bus width / 8
 * (sortd_engine_peak_bandwidth).
 */
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <thread>

#include "bench.h"

namespace sortbench
{

namespace
{

const size_t gpu_default_sizes[] = {size_t(1) << 20, size_t(1) << 22, size_t(1) << 24,
                                    size_t(1) << 26, size_t(1) << 28};

struct result {
        std::string engine;
        unsigned threads;
        double mkeys_per_s;
        bool verified;
};

/* An engine in one case's race: its run, its timings so far, and whether it
   gets a row (false once it could not sort the case). */
struct contestant {
        std::unique_ptr<run> r;
        result res;
        std::vector<double> secs;
        bool shown;
};

/* memcpy bandwidth (bytes read + written per second) of 256 MiB with `threads` threads. */
double copy_gb_per_s(unsigned threads)
{
        const size_t bytes = size_t(256) << 20, page = 4096;
        buffer src(bytes), dst(bytes);
        std::vector<double> rates;

        memset(src.as<void>(), 1, bytes);
        memset(dst.as<void>(), 0, bytes);
        for (int rep = 0; rep < 9; rep++) {
                std::vector<std::thread> pool;
                double t0 = now();

                for (unsigned t = 0; t < threads; t++) {
                        size_t lo = bytes / page * t / threads * page;
                        size_t hi = bytes / page * (t + 1) / threads * page;
                        pool.emplace_back([&, lo, hi] {
                                memcpy(dst.as<char>() + lo, src.as<char>() + lo, hi - lo);
                        });
                }
                for (auto &th : pool)
                        th.join();
                rates.push_back(2.0 * double(bytes) / (now() - t0) / 1e9);
        }
        return median(rates);
}

/* Our engines, created once per (kind, threads) for the largest n and reused. */
class engine_cache
{
      public:
        explicit engine_cache(size_t capacity) : capacity_(capacity)
        {
        }
        ~engine_cache()
        {
                for (auto &e : engines_)
                        sortd_engine_destroy(e.second);
        }
        engine_cache(const engine_cache &) = delete;
        engine_cache &operator=(const engine_cache &) = delete;

        /* nullptr (after a note) where the engine cannot be created. */
        sortd_engine *get(const std::string &kind, unsigned threads, bool json)
        {
                auto key = std::make_pair(kind, threads);
                auto it = engines_.find(key);
                if (it != engines_.end())
                        return it->second;

                sortd_engine_config cfg{};
                cfg.capacity = capacity_;
                cfg.threads = threads;
                sortd_engine *e = nullptr;
                char why[256] = "";
                sortd_status s = sortd_engine_create(kind.c_str(), &cfg, &e, why, sizeof(why));
                if (s != SORTD_OK) {
                        note("engine " + kind + " skipped: " + sortd_strerror(s) +
                             (why[0] ? std::string(": ") + why : std::string()));
                        e = nullptr;
                } else if (!json) {
                        printf("# engine %s, threads=%u: %s\n", kind.c_str(), threads,
                               sortd_engine_device(e));
                }
                engines_[key] = e;
                return e;
        }

      private:
        size_t capacity_;
        std::map<std::pair<std::string, unsigned>, sortd_engine *> engines_;
};

/* The case being run: its data, and the text every row and message names it by. */
struct bench_case {
        input in;
        std::string type, payload, dist;
        sorted_result want;
        bool have_want = false;
};

class bench
{
      public:
        explicit bench(options o) : o_(std::move(o)), engines_(max_size())
        {
        }

        int main()
        {
                copy_gbps_ = copy_gb_per_s(max_threads());
                print_bound(max_threads());
                for (const auto &name : o_.engines)
                        for (auto t : o_.threads)
                                if (is_ours(name))
                                        engines_.get(name, t, o_.json);
                if (!o_.json)
                        printf("%-12s %-4s %-9s %-8s %-10s %3s %10s  %-20s %8s\n", "engine", "type",
                               "payload", "dist", "n", "thr", "Mkeys/s", "vs fastest peer",
                               "of bound");
                fflush(stdout);
                o_.cases.for_each([this](sortd_key_type t, sortd_payload p, const dist_spec &d,
                                         size_t n) { run_case(t, p, d, n); });
                return failed_ ? 1 : 0;
        }

      private:
        options o_;
        engine_cache engines_;
        double copy_gbps_ = 0;
        bool failed_ = false;

        void print_bound(unsigned threads) const
        {
                if (o_.json)
                        printf("{\"bound\": {\"copy_gb_per_s\": %.3f, \"threads\": %u}}\n",
                               copy_gbps_, threads);
                else
                        printf("# copy bound: %.1f GB/s read+write (memcpy of 256 MiB, %u "
                               "threads)\n",
                               copy_gbps_, threads);
        }

        unsigned max_threads() const
        {
                return *std::max_element(o_.threads.begin(), o_.threads.end());
        }

        size_t max_size() const
        {
                return *std::max_element(o_.cases.sizes.begin(), o_.cases.sizes.end());
        }

        void run_case(sortd_key_type t, sortd_payload p, const dist_spec &d, size_t n)
        {
                bench_case c;
                std::vector<result> results;

                fill_input(c.in, t, p, d, n, o_.seed, max_threads());
                c.type = sortd_key_type_name(t);
                c.payload = sortd_payload_name(p);
                c.dist = d.name;
                buffer work(work_bytes(c.in));
                /* Fault the pages in now: argsort output is the first write to its part. */
                fault_in(work, max_threads());

                for (size_t ti = 0; ti < o_.threads.size(); ti++) {
                        std::vector<contestant> field;

                        for (const auto &name : o_.engines) {
                                if (is_peer(name) && !peer_is_threaded(name) && ti > 0)
                                        continue;
                                std::unique_ptr<run> r = prepare(c, name, o_.threads[ti], work);
                                if (!r)
                                        continue;
                                unsigned threads = is_peer(name) && !peer_is_threaded(name)
                                                           ? 1
                                                           : o_.threads[ti];
                                field.push_back({std::move(r), {name, threads, 0, true}, {}, true});
                        }
                        race(c, field);
                        for (auto &f : field)
                                if (f.shown) {
                                        f.res.mkeys_per_s = double(c.in.n) / median(f.secs) / 1e6;
                                        results.push_back(f.res);
                                }
                }
                for (const auto &r : results)
                        print(c, r, results);
        }

        std::unique_ptr<run> prepare(bench_case &c, const std::string &name, unsigned threads,
                                     buffer &work)
        {
                std::string why;

                if (is_peer(name)) {
                        std::unique_ptr<run> r =
                                peer_prepare(name, c.in, threads, work.as<void>(), why);
                        if (!r)
                                note(name + " skipped for " + c.type + "/" + c.payload + ": " +
                                     why);
                        return r;
                }
                sortd_engine *e = engines_.get(name, threads, o_.json);
                if (!e)
                        return nullptr;
                if (!c.have_want) {
                        c.want = stable_result(c.in, max_threads());
                        c.have_want = true;
                }
                return make_engine_run(e, c.in, c.want, work.as<void>(), max_threads());
        }

        /* Times --repeats sorts of each contestant, verifying each. The
           repeats go round the field, so every engine's median comes from
           the same stretch of time: on a shared or virtual machine the
           speed of the whole machine drifts over minutes, and timing one
           engine's repeats after another's measured that drift. */
        void race(const bench_case &c, std::vector<contestant> &field)
        {
                for (unsigned rep = 0; rep < o_.repeats; rep++)
                        for (auto &f : field)
                                if (f.shown && f.res.verified)
                                        time_one(c, f);
        }

        /* One timed and verified sort; a contestant that cannot sort this
           case gets no row, a wrong result a row that says so. */
        void time_one(const bench_case &c, contestant &f)
        {
                const std::string &name = f.res.engine;
                std::string why;

                f.r->load();
                double t0 = now();
                outcome s = f.r->sort(why);
                double t1 = now();
                if (s == outcome::unsupported) {
                        note(name + " skipped for " + c.type + "/" + c.payload + ": " + why);
                        f.shown = false;
                        return;
                }
                if (s == outcome::failed) {
                        error(c, name, f.res.threads, "sort failed: " + why);
                        f.shown = false;
                        return;
                }
                f.secs.push_back(t1 - t0);
                if (!f.r->verify(why)) {
                        error(c, name, f.res.threads, "verification failed: " + why);
                        f.res.verified = false;
                }
        }

        void error(const bench_case &c, const std::string &name, unsigned threads,
                   const std::string &what)
        {
                fprintf(stderr, "sortbench: error: %s %s/%s %s n=%s threads=%u: %s\n", name.c_str(),
                        c.type.c_str(), c.payload.c_str(), c.dist.c_str(),
                        size_name(c.in.n).c_str(), threads, what.c_str());
                failed_ = true;
        }

        /* The fastest verified peer at `threads`, counting single-threaded peers everywhere. */
        static const result *fastest_peer(const std::vector<result> &all, unsigned threads)
        {
                const result *best = nullptr;

                for (const auto &r : all) {
                        if (!is_peer(r.engine) || !r.verified)
                                continue;
                        if (peer_is_threaded(r.engine) && r.threads != threads)
                                continue;
                        if (!best || r.mkeys_per_s > best->mkeys_per_s)
                                best = &r;
                }
                return best;
        }

        void print(const bench_case &c, const result &r, const std::vector<result> &all)
        {
                if (o_.json) {
                        printf("{\"engine\":\"%s\",\"type\":\"%s\",\"payload\":\"%s\","
                               "\"dist\":\"%s\",\"n\":%zu,\"threads\":%u,\"mkeys_per_s\":%.3f,"
                               "\"verified\":%s}\n",
                               r.engine.c_str(), c.type.c_str(), c.payload.c_str(), c.dist.c_str(),
                               c.in.n, r.threads, r.mkeys_per_s, r.verified ? "true" : "false");
                        fflush(stdout);
                        return;
                }
                char vs[64] = "", bound[16] = "";
                if (is_ours(r.engine)) {
                        const result *best = fastest_peer(all, r.threads);
                        double bound_mkeys = copy_gbps_ * 1e3 / bytes_per_key(c.in);
                        if (best)
                                snprintf(vs, sizeof(vs), "%.2fx %s",
                                         r.mkeys_per_s / best->mkeys_per_s, best->engine.c_str());
                        snprintf(bound, sizeof(bound), "%.0f%%", 100 * r.mkeys_per_s / bound_mkeys);
                }
                printf("%-12s %-4s %-9s %-8s %-10s %3u %10.1f  %-20s %8s%s\n", r.engine.c_str(),
                       c.type.c_str(), c.payload.c_str(), c.dist.c_str(), size_name(c.in.n).c_str(),
                       r.threads, r.mkeys_per_s, vs, bound, r.verified ? "" : "  WRONG");
                fflush(stdout);
        }
};

/* The CPU engines and peers first, then the GPU sweep, each where asked for. */
int run_all(options o)
{
        gpu_request g;
        options cpu = o;
        int rc = 0;

        if (o.model)
                return run_model(o);
        if (o.segments)
                return run_segments(o);
        cpu.engines.clear();
        for (const auto &name : o.engines)
                (is_gpu(name) ? g.engines : cpu.engines).push_back(name);
        if (cpu.cases.sizes.empty())
                cpu.cases.sizes.push_back(size_t(1) << 24);
        if (!cpu.engines.empty())
                rc = bench(cpu).main();
        if (g.engines.empty())
                return rc;
        g.cases = o.cases;
        if (g.cases.sizes.empty())
                g.cases.sizes.assign(std::begin(gpu_default_sizes), std::end(gpu_default_sizes));
        g.repeats = o.repeats;
        g.host_threads = *std::max_element(o.threads.begin(), o.threads.end());
        g.seed = o.seed;
        g.json = o.json;
        g.memory = o.memory;
        return gpu_sweep(g) | rc;
}

} // namespace

} // namespace sortbench

int main(int argc, char **argv)
{
        try {
                return sortbench::run_all(sortbench::parse_options(argc, argv));
        } catch (const std::bad_alloc &) {
                fprintf(stderr, "sortbench: out of memory\n");
                return 1;
        }
}
