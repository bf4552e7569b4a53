/*
 * sortbench: our engines and the best CPU sorts in Debian, side by side in
 * one process, on the same generated data; then our CUDA kernels against
 * CUB on the same GPU (gpu.cc). See usage() for what it measures, and for
 * the bandwidth bounds: an LSD sort with 8-bit digits over p = key bytes
 * digit places moves (2p + 1) x key bytes per key, plus 2p x value bytes
 * (values) or (2p - 1) x index bytes (argsort). The CPU bound divides the
 * measured memcpy rate by that; the GPU bound the device's peak bandwidth,
 * 2 x memory clock x bus width / 8 (sortd_engine_peak_bandwidth).
 */
#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <thread>

#include "bench.h"

namespace sortbench
{

namespace
{

const char *const our_engines[] = {"cpu", "cuda", "cub"};
const size_t gpu_default_sizes[] = {size_t(1) << 20, size_t(1) << 22, size_t(1) << 24,
                                    size_t(1) << 26, size_t(1) << 28};

struct options {
        case_lists cases; /* sizes empty: 2^24 for the CPU, gpu_default_sizes */
        std::vector<unsigned> threads;
        unsigned repeats = 5;
        std::vector<std::string> engines;
        uint64_t seed = 1;
        bool json = false;
};

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

void usage(FILE *f)
{
        fputs("usage: sortbench [options]\n"
              "Sorts the same generated data with our engines and the CPU sorting peers,\n"
              "and reports the median rate of --repeats timed sorts of each.\n"
              "\n"
              "  --type LIST      u8,i8,u16,i16,u32,i32,f32,u64,i64,f64 (default u32; the\n"
              "                   peers sort 32- and 64-bit keys only)\n"
              "  --payload LIST   none,v32,v64,argsort32,argsort64 (default none)\n"
              "  --dist LIST      uniform,q2,q4,q8,q16,equal,sorted,reverse,few,negative,special\n"
              "                   (default uniform)\n"
              "  --n LIST         sizes as numbers or 2^k (default 2^24; for cuda and cub\n"
              "                   2^20,2^22,2^24,2^26,2^28)\n"
              "  --threads LIST   thread counts (default: the online CPUs)\n"
              "  --repeats N      timed sorts per engine and case (default 5)\n"
              "  --engines LIST   any of cpu,cuda,cub,vqsort,vqsort-avx2,ips4o,tbb,boost-bis,\n"
              "                   spreadsort,std (default: all; an engine of ours that cannot\n"
              "                   be created here is skipped with a note on stderr)\n"
              "  --seed N         data generator seed (default 1)\n"
              "  --thp            madvise(MADV_HUGEPAGE) the input and work buffers\n"
              "  --json           one JSON object per line instead of a table\n"
              "  --help\n"
              "\n"
              "Each case (type, payload, dist, n) is generated once. Per engine and repeat\n"
              "the input is copied into the work buffer (untimed), sorted (timed with\n"
              "CLOCK_MONOTONIC) and verified. Repeats go round the engines (repeat 1 of\n"
              "each, then repeat 2, ...), so every median covers the same stretch of\n"
              "time. Our engines must match a stable reference exactly; peers\n"
              "(unstable) must be sorted by operator< and hold the input's multiset of\n"
              "(key, value) pairs. A failure is reported on stderr, the row says\n"
              "\"verified\": false, and sortbench exits 1.\n"
              "\n"
              "Peers: ips4o, tbb and boost-bis run with each --threads count; vqsort,\n"
              "vqsort-avx2 (Highway forced to its AVX2 target), spreadsort and std run\n"
              "single-threaded, once per case, reported with threads 1. With a payload\n"
              "peers sort {key, value} (or {key, index}) structs by key; vqsort only where\n"
              "its K32V32 / K64V64 types fit (u32 keys with v32/argsort32, u64 keys with\n"
              "v64/argsort64) and is skipped otherwise. With Highway 1.0.3 vqsort is also\n"
              "skipped, with a note, for float keys (unsorted results for skewed keys),\n"
              "vqsort-avx2 for K32V32 (values of equal keys lost), and K64V64 where a key\n"
              "is UINT64_MAX (its values overwritten): wrong results these checks found.\n"
              "\n"
              "Floats: the peers' operator< cannot order NaNs, so every engine gets float\n"
              "data with each NaN made finite (its lowest exponent bit cleared). -0.0 and\n"
              "+0.0 are equal for the peers; our engines order them by IEEE totalOrder.\n"
              "\n"
              "Bound: copy_gb_per_s is memcpy of 256 MiB with the largest --threads count,\n"
              "counting bytes read + written (median of 9). An LSD pass over p = key bytes\n"
              "digit places moves (2p + 1) x key bytes per key (one histogram read, p\n"
              "read+write passes), plus 2p x value bytes for values, (2p - 1) x index\n"
              "bytes for argsort; the bound in keys/s is copy_gb_per_s * 1e9 / that. An\n"
              "engine that skips digit places all keys share (equal, few, q8) can pass it.\n"
              "The table gives our engines' rate as a ratio to the fastest peer (at the\n"
              "same thread count, or single-threaded) and as a fraction of that bound.\n"
              "\n"
              "GPU: cuda (our Onesweep kernels) and cub (CUB's DeviceRadixSort) run in a\n"
              "sweep of their own after the CPU cases, on the same data and device. Each is\n"
              "created once, for the largest n its limit and the device's memory allow;\n"
              "larger n are skipped with a note. Per case each sorts repeats + 1 times,\n"
              "the first untimed, every result verified exactly as above. Generating the\n"
              "data, the reference sort and every check use the largest --threads count\n"
              "of host threads (default: the online CPUs). Reported\n"
              "(medians): e2e GKeys/s, host buffer to host buffer (PCIe copies included);\n"
              "kernel GKeys/s, the device time from the end of the upload to the start of\n"
              "the download (CUDA events, sortd_engine_last_device_seconds); vs cub, our\n"
              "kernel rate over CUB's; of bound, the kernel rate over peak / bytes per\n"
              "key, with peak = 2 x memory clock x bus width / 8 (the device's DDR\n"
              "bandwidth, sortd_engine_peak_bandwidth) and bytes per key as in Bound. The\n"
              "cub engine maps signed, float and descending keys with one elementwise\n"
              "kernel before DeviceRadixSort and one after (4 x key bytes per key more,\n"
              "inside its kernel time); unsigned ascending keys reach it unmapped.\n"
              "JSON rows of GPU engines carry gkeys_per_s (e2e), kernel_gkeys_per_s,\n"
              "of_bound and, for cuda, vs_cub. Without a CUDA device (or in a build\n"
              "without the CUDA engines) each of cuda and cub prints one line on stderr,\n"
              "\"sortbench: ENGINE: no GPU benchmark: WHY\" (in JSON also a {\"skipped\"}\n"
              "row), and sortbench exits 0: a missing GPU is not a failed benchmark.\n",
              f);
}

[[noreturn]] void bad_option(const char *what, const char *arg)
{
        fprintf(stderr, "sortbench: bad %s '%s' (see --help)\n", what, arg);
        exit(2);
}

std::vector<std::string> split(const char *list)
{
        std::vector<std::string> out;
        std::string item;

        for (const char *p = list;; p++) {
                if (*p == ',' || *p == '\0') {
                        if (!item.empty())
                                out.push_back(item);
                        item.clear();
                        if (!*p)
                                return out;
                } else {
                        item += *p;
                }
        }
}

bool parse_u64(const std::string &s, uint64_t *out)
{
        char *end;

        if (s.empty() || s[0] == '-')
                return false;
        errno = 0;
        unsigned long long v = strtoull(s.c_str(), &end, 10);
        if (errno || *end)
                return false;
        *out = v;
        return true;
}

/* A size as a number or 2^k; the reference permutation holds u32 indices. */
bool parse_size(const std::string &s, size_t *out)
{
        uint64_t v;

        if (s.rfind("2^", 0) == 0) {
                if (!parse_u64(s.substr(2), &v) || v > 32)
                        return false;
                v = uint64_t(1) << v;
        } else if (!parse_u64(s, &v)) {
                return false;
        }
        if (v < 1 || v > (uint64_t(1) << 32))
                return false;
        *out = size_t(v);
        return true;
}

bool is_ours(const std::string &name)
{
        for (const char *e : our_engines)
                if (name == e)
                        return true;
        return false;
}

bool is_gpu(const std::string &name)
{
        return name == "cuda" || name == "cub";
}

bool is_peer(const std::string &name)
{
        const auto &p = peer_names();

        return std::find(p.begin(), p.end(), name) != p.end();
}

options parse_options(int argc, char **argv)
{
        enum { o_type = 256, o_payload, o_dist, o_n, o_threads, o_repeats, o_engines, o_seed };
        static const struct option longopts[] = {
                {"type", required_argument, nullptr, o_type},
                {"payload", required_argument, nullptr, o_payload},
                {"dist", required_argument, nullptr, o_dist},
                {"n", required_argument, nullptr, o_n},
                {"threads", required_argument, nullptr, o_threads},
                {"repeats", required_argument, nullptr, o_repeats},
                {"engines", required_argument, nullptr, o_engines},
                {"seed", required_argument, nullptr, o_seed},
                {"thp", no_argument, nullptr, 't'},
                {"json", no_argument, nullptr, 'j'},
                {"help", no_argument, nullptr, 'h'},
                {nullptr, 0, nullptr, 0},
        };
        options o;
        uint64_t v;
        int c;

        while ((c = getopt_long(argc, argv, "", longopts, nullptr)) != -1) {
                switch (c) {
                case o_type:
                        o.cases.types.clear();
                        for (const auto &s : split(optarg)) {
                                int t = sortd_key_type_parse(s.c_str());
                                if (t < 0)
                                        bad_option("type", s.c_str());
                                o.cases.types.push_back(sortd_key_type(t));
                        }
                        break;
                case o_payload:
                        o.cases.payloads.clear();
                        for (const auto &s : split(optarg)) {
                                int p = sortd_payload_parse(s.c_str());
                                if (p < 0)
                                        bad_option("payload", s.c_str());
                                o.cases.payloads.push_back(sortd_payload(p));
                        }
                        break;
                case o_dist:
                        for (const auto &s : split(optarg)) {
                                dist_spec d;
                                char name[32];
                                if (datagen_parse(s.c_str(), &d.dist, &d.param) != 0)
                                        bad_option("dist", s.c_str());
                                d.name = datagen_name(d.dist, d.param, name, sizeof(name));
                                o.cases.dists.push_back(d);
                        }
                        break;
                case o_n:
                        o.cases.sizes.clear();
                        for (const auto &s : split(optarg)) {
                                size_t n;
                                if (!parse_size(s, &n))
                                        bad_option("n (1 to 2^32)", s.c_str());
                                o.cases.sizes.push_back(n);
                        }
                        break;
                case o_threads:
                        for (const auto &s : split(optarg)) {
                                if (!parse_u64(s, &v) || v < 1 || v > 1024)
                                        bad_option("thread count", s.c_str());
                                o.threads.push_back(unsigned(v));
                        }
                        break;
                case o_repeats:
                        if (!parse_u64(optarg, &v) || v < 1 || v > 1000)
                                bad_option("repeat count", optarg);
                        o.repeats = unsigned(v);
                        break;
                case o_engines:
                        for (const auto &s : split(optarg)) {
                                if (!is_ours(s) && !is_peer(s))
                                        bad_option("engine", s.c_str());
                                o.engines.push_back(s);
                        }
                        break;
                case o_seed:
                        if (!parse_u64(optarg, &o.seed))
                                bad_option("seed", optarg);
                        break;
                case 't':
                        buffer::use_huge_pages(true);
                        break;
                case 'j':
                        o.json = true;
                        break;
                case 'h':
                        usage(stdout);
                        exit(0);
                default:
                        usage(stderr);
                        exit(2);
                }
        }
        if (optind < argc)
                bad_option("argument", argv[optind]);
        if (o.cases.dists.empty())
                o.cases.dists.push_back({DATAGEN_UNIFORM, 0, "uniform"});
        if (o.threads.empty())
                o.threads.push_back(unsigned(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))));
        if (o.engines.empty()) {
                o.engines.assign(std::begin(our_engines), std::end(our_engines));
                for (const auto &p : peer_names())
                        o.engines.push_back(p);
        }
        return o;
}

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

                sortd_engine_config cfg = {capacity_, threads, 0};
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
