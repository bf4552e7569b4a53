/*
 * sortbench's command line: what each option means (usage(), which is also
 * the description of every measurement), and turning argv into the options
 * sortbench.cc runs with, defaults filled in.
 */
#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "bench.h"

namespace sortbench
{

namespace
{

const char *const our_engines[] = {"cpu", "cuda", "cub"};

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
              "  --memory LIST    where cuda and cub find the data: pageable,pinned,device\n"
              "                   (default pageable; see GPU)\n"
              "  --model          no timing: the cuda kernels' cost model on the SIMT emulator\n"
              "                   (DRAM bytes, L2 sectors, shared wavefronts, warp operations\n"
              "                   per key and launch; default n 2^18, --type/--payload/--dist)\n"
              "  --arch LIST      --model: the policies of code built for these architectures\n"
              "                   (75 for sm_75, 80, 90, 100; default 90)\n"
              "  --segments       rows and top-k instead, on our engines in --engines (see\n"
              "                   Segments)\n"
              "  --rows N, --row-len N, --k N\n"
              "                   --segments: N rows (default 10000; 0: none) of N u32 keys\n"
              "                   (default 1024), the top N (default 1000; 0: none) of --n\n"
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
              "of host threads (default: the online CPUs), as do the GPU engines' copies\n"
              "of pageable memory through their pinned staging (at most 8). Reported\n"
              "(medians): e2e GKeys/s, host buffer to host buffer (PCIe copies included);\n"
              "kernel GKeys/s, the device time from the end of the upload to the start of\n"
              "the download (CUDA events, sortd_engine_last_device_seconds); vs cub, our\n"
              "kernel rate over CUB's; of bound, the kernel rate over peak / bytes per\n"
              "key, with peak = 2 x memory clock x bus width / 8 (the device's DDR\n"
              "bandwidth, sortd_engine_peak_bandwidth) and bytes per key as in Bound. The\n"
              "cub engine maps signed, float and descending keys with one elementwise\n"
              "kernel before DeviceRadixSort and one after (4 x key bytes per key more,\n"
              "inside its kernel time); unsigned ascending keys reach it unmapped.\n"
              "--memory: pageable sorts ordinary host buffers (staged through the\n"
              "engine's pinned slots), pinned sorts buffers from sortd_engine_host_alloc\n"
              "(DMA'd directly), device sorts device arrays with sortd_engine_sort_device\n"
              "(input copied up and result down untimed; e2e is the call's host time,\n"
              "kernel its device time). Each kind is a row of its own.\n"
              "JSON rows of GPU engines carry memory, gkeys_per_s (e2e), kernel_gkeys_per_s,\n"
              "of_bound and, for cuda, vs_cub. Without a CUDA device (or in a build\n"
              "without the CUDA engines) each of cuda and cub prints one line on stderr,\n"
              "\"sortbench: ENGINE: no GPU benchmark: WHY\" (in JSON also a {\"skipped\"}\n"
              "row), and sortbench exits 0: a missing GPU is not a failed benchmark.\n"
              "\n"
              "Segments: --segments times, on each engine of ours, --rows rows of\n"
              "--row-len uniform u32 keys (with the first --payload's values or indices)\n"
              "sorted in one sortd_engine_sort_segments call against one\n"
              "sortd_engine_sort call a row, and sortd_engine_topk of --k of\n"
              "the first --n size (default 2^24) against sortd_engine_sort of the same\n"
              "keys, keys in host memory, the engine's threads the largest --threads count.\n"
              "--repeats pairs, alternated (one of each form back to back, the first form\n"
              "switching from pair to pair): the medians and the median of the pairs'\n"
              "ratios. The segmented rows must equal the separate sorts' and be sorted,\n"
              "the top-k the full sort's first k. An engine without the call (cub: no\n"
              "segmented sort or top-k) says so on stderr and gets no line.\n",
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

} // namespace

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
        enum {
                o_type = 256,
                o_payload,
                o_dist,
                o_n,
                o_threads,
                o_repeats,
                o_engines,
                o_seed,
                o_memory,
                o_model,
                o_arch,
                o_segments,
                o_rows,
                o_row_len,
                o_k
        };
        static const struct option longopts[] = {
                {"type", required_argument, nullptr, o_type},
                {"payload", required_argument, nullptr, o_payload},
                {"dist", required_argument, nullptr, o_dist},
                {"n", required_argument, nullptr, o_n},
                {"threads", required_argument, nullptr, o_threads},
                {"repeats", required_argument, nullptr, o_repeats},
                {"engines", required_argument, nullptr, o_engines},
                {"seed", required_argument, nullptr, o_seed},
                {"memory", required_argument, nullptr, o_memory},
                {"model", no_argument, nullptr, o_model},
                {"arch", required_argument, nullptr, o_arch},
                {"segments", no_argument, nullptr, o_segments},
                {"rows", required_argument, nullptr, o_rows},
                {"row-len", required_argument, nullptr, o_row_len},
                {"k", required_argument, nullptr, o_k},
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
                case o_memory:
                        o.memory.clear();
                        for (const auto &s : split(optarg)) {
                                if (s != "pageable" && s != "pinned" && s != "device")
                                        bad_option("memory", s.c_str());
                                o.memory.push_back(s);
                        }
                        break;
                case o_model:
                        o.model = true;
                        break;
                case o_arch:
                        o.archs.clear();
                        for (const auto &s : split(optarg)) {
                                if (!parse_u64(s, &v) || v < 75 || v > 1000)
                                        bad_option("arch (75 to 1000, e.g. 90)", s.c_str());
                                o.archs.push_back(unsigned(v));
                        }
                        break;
                case o_segments:
                        o.segments = true;
                        break;
                case o_rows:
                case o_row_len:
                case o_k:
                        if (!parse_u64(optarg, &v) || v > (uint64_t(1) << 26) ||
                            (c == o_row_len && v < 1))
                                bad_option(c == o_rows ? "rows (0 to 2^26)"
                                           : c == o_k  ? "k (0 to 2^26)"
                                                       : "row-len (1 to 2^26)",
                                           optarg);
                        (c == o_rows ? o.rows : c == o_k ? o.k : o.row_len) = size_t(v);
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

} // namespace sortbench
