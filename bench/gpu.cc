/*
 * sortbench's GPU sweep: our Onesweep kernels ("cuda") against CUB's
 * DeviceRadixSort ("cub") on the same device and the same data, in one run.
 *
 * The engines sort host buffers, so each sort is timed twice: on the host,
 * end to end (the copies over PCIe dominate it), and on the device from the
 * end of the upload to the start of the download
 * (sortd_engine_last_device_seconds): what the kernels cost, and what the
 * bandwidth bound, peak / bytes_per_key, is about. sortbench --help, "GPU",
 * says what each column means. --memory adds rows with the data in the
 * engine's pinned host memory, or in device memory (sortd_engine_sort_device).
 */
#include <algorithm>
#include <cstdio>

#ifdef SORTD_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "bench.h"

namespace sortbench
{

namespace
{

struct gpu_engine {
        std::string kind;
        sortd_engine *e;
};

struct gpu_row {
        std::string engine;
        std::string memory; /* pageable, pinned, device */
        double e2e_s;       /* median host-timed sort */
        double device_s;    /* median device-timed sort; 0 if not measured */
        bool verified;
};

/* The device name comes from the driver: escape what JSON must. */
std::string json_escape(const char *s)
{
        std::string out;

        for (; *s; s++) {
                if (*s == '"' || *s == '\\')
                        out += '\\';
                if ((unsigned char)*s >= 0x20)
                        out += *s;
        }
        return out;
}

double rate_g(size_t n, double secs)
{
        return secs > 0 ? double(n) / secs / 1e9 : 0;
}

/* Host memory from sortd_engine_host_alloc (pinned on a GPU engine); get() is NULL if none. */
class pinned_buffer
{
      public:
        pinned_buffer(sortd_engine *e, size_t bytes) : e_(e), bytes_(bytes)
        {
                if (sortd_engine_host_alloc(e, bytes, &p_) != SORTD_OK)
                        p_ = nullptr;
        }
        ~pinned_buffer()
        {
                sortd_engine_host_free(e_, p_, bytes_);
        }
        pinned_buffer(const pinned_buffer &) = delete;
        pinned_buffer &operator=(const pinned_buffer &) = delete;
        void *get() const
        {
                return p_;
        }

      private:
        sortd_engine *e_;
        size_t bytes_;
        void *p_ = nullptr;
};

#ifdef SORTD_HAVE_CUDA
/*
 * sortd_engine_sort_device on device arrays laid out as the host work buffer (keys, then values
 * at vals_offset). The engine run on the work buffer stages the input and checks the result;
 * the copies up and down are untimed.
 */
class device_run : public run
{
      public:
        device_run(sortd_engine *e, const input &in, std::unique_ptr<run> host, void *work)
            : e_(e), in_(in), host_(std::move(host)), work_(work),
              bytes_(vals_offset(in) + in.n * in.val_bytes)
        {
                if (cudaMalloc(&dev_, bytes_) != cudaSuccess) {
                        (void)cudaGetLastError();
                        dev_ = nullptr;
                }
        }
        ~device_run() override
        {
                if (dev_)
                        (void)cudaFree(dev_);
        }
        bool ok() const
        {
                return dev_ != nullptr;
        }

        /* The engines' streams do not wait for this copy: it has finished on return. */
        void load() override
        {
                host_->load();
                copied_ = cudaMemcpy(dev_, work_, bytes_, cudaMemcpyHostToDevice) == cudaSuccess &&
                          cudaDeviceSynchronize() == cudaSuccess;
        }

        outcome sort(std::string &why) override
        {
                sortd_sort_desc d = {in_.type, in_.payload, SORTD_ASCENDING, 0, 0};
                char *vals = in_.val_bytes ? static_cast<char *>(dev_) + vals_offset(in_) : nullptr;

                if (!copied_) {
                        why = "copying the input to the device failed";
                        return outcome::failed;
                }
                sortd_status s = sortd_engine_sort_device(e_, &d, dev_, vals, in_.n);
                if (s == SORTD_OK)
                        return outcome::ok;
                why = std::string(sortd_strerror(s)) + ": " + sortd_engine_error(e_);
                return s == SORTD_E_UNSUPPORTED ? outcome::unsupported : outcome::failed;
        }

        bool verify(std::string &why) override
        {
                if (cudaMemcpy(work_, dev_, bytes_, cudaMemcpyDeviceToHost) != cudaSuccess) {
                        why = "copying the result from the device failed";
                        return false;
                }
                return host_->verify(why);
        }

      private:
        sortd_engine *e_;
        const input &in_;
        std::unique_ptr<run> host_;
        void *work_;
        size_t bytes_;
        void *dev_ = nullptr;
        bool copied_ = false;
};
#endif

/* An engine's run on a case with its data in the memory asked for, and that memory. */
struct placed_run {
        std::unique_ptr<pinned_buffer> pinned;
        std::unique_ptr<run> r; /* nullptr when the memory could not be had */
        std::string why;
};

class gpu_bench
{
      public:
        explicit gpu_bench(const gpu_request &r) : r_(r)
        {
        }
        ~gpu_bench()
        {
                for (auto &g : engines_)
                        sortd_engine_destroy(g.e);
        }
        gpu_bench(const gpu_bench &) = delete;
        gpu_bench &operator=(const gpu_bench &) = delete;

        int main()
        {
                for (const auto &kind : r_.engines)
                        if (!find(kind))
                                create(kind);
                if (engines_.empty())
                        return 0;
                if (!r_.json)
                        printf("%-6s %-8s %-4s %-9s %-8s %-6s %12s %15s %7s %9s\n", "engine",
                               "memory", "type", "payload", "dist", "n", "e2e GKeys/s",
                               "kernel GKeys/s", "vs cub", "of bound");
                fflush(stdout);
                r_.cases.for_each([this](sortd_key_type t, sortd_payload p, const dist_spec &d,
                                         size_t n) { run_case(t, p, d, n); });
                return failed_ ? 1 : 0;
        }

      private:
        const gpu_request &r_;
        std::vector<gpu_engine> engines_;
        bool failed_ = false;

        const gpu_engine *find(const std::string &kind) const
        {
                for (const auto &g : engines_)
                        if (g.kind == kind)
                                return &g;
                return nullptr;
        }

        /* For the largest n first: the engine's own limit or the device's memory may
           refuse a capacity, and each refusal tries the next smaller n. */
        void create(const std::string &kind)
        {
                std::vector<size_t> caps = r_.cases.sizes;
                std::string why;

                std::sort(caps.rbegin(), caps.rend());
                caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
                for (size_t cap : caps) {
                        sortd_engine_config cfg{};
                        cfg.capacity = cap;
                        /* The staged host<->device copies split each chunk over up to this
                           many threads: with 1, pageable memory moves at one core's memcpy. */
                        cfg.threads = r_.host_threads;
                        sortd_engine *e = nullptr;
                        char msg[256] = "";
                        sortd_status s =
                                sortd_engine_create(kind.c_str(), &cfg, &e, msg, sizeof(msg));
                        if (s == SORTD_OK) {
                                engines_.push_back({kind, e});
                                describe(engines_.back());
                                return;
                        }
                        why = msg[0] ? msg : sortd_strerror(s);
                        if (s != SORTD_E_NOMEM && s != SORTD_E_UNSUPPORTED)
                                break;
                        note(kind + " cannot be created for n = " + size_name(cap) + " (" + why +
                             "); trying a smaller capacity");
                }
                fprintf(stderr, "sortbench: %s: no GPU benchmark: %s\n", kind.c_str(), why.c_str());
                if (r_.json)
                        printf("{\"engine\":\"%s\",\"skipped\":\"%s\"}\n", kind.c_str(),
                               json_escape(why.c_str()).c_str());
        }

        void describe(const gpu_engine &g) const
        {
                double peak = sortd_engine_peak_bandwidth(g.e) / 1e9;
                size_t cap = sortd_engine_capacity(g.e);
                char peak_text[64] = "unknown";

                if (peak > 0)
                        snprintf(peak_text, sizeof(peak_text),
                                 "%.1f GB/s (2 x memory clock x bus width)", peak);
                if (r_.json)
                        printf("{\"gpu\":{\"engine\":\"%s\",\"device\":\"%s\","
                               "\"peak_gb_per_s\":%.1f,\"capacity\":%zu}}\n",
                               g.kind.c_str(), json_escape(sortd_engine_device(g.e)).c_str(), peak,
                               cap);
                else
                        printf("# GPU engine %s: %s; peak %s; capacity %s\n", g.kind.c_str(),
                               sortd_engine_device(g.e), peak_text, size_name(cap).c_str());
        }

        void run_case(sortd_key_type t, sortd_payload p, const dist_spec &d, size_t n)
        {
                std::vector<const gpu_engine *> on;
                std::vector<gpu_row> rows;
                input in;

                for (const auto &g : engines_) {
                        if (n <= sortd_engine_capacity(g.e))
                                on.push_back(&g);
                        else
                                note(g.kind + " skips n = " + size_name(n) +
                                     ": above its capacity");
                }
                if (on.empty())
                        return;
                fill_input(in, t, p, d, n, r_.seed, r_.host_threads);
                sorted_result want = stable_result(in, r_.host_threads);
                buffer work(work_bytes(in));
                /* Fault the pages in now: argsort output is the first write to its part. */
                fault_in(work, r_.host_threads);
                for (const gpu_engine *g : on)
                        for (const auto &memory : r_.memory) {
                                gpu_row row;
                                if (measure(*g, in, want, work, d.name, memory, row))
                                        rows.push_back(row);
                        }
                for (const auto &row : rows)
                        print(in, d.name, row, rows);
        }

        placed_run place(const gpu_engine &g, const input &in, const sorted_result &want,
                         buffer &work, const std::string &memory) const
        {
                placed_run p;
                void *at = work.as<void>();

                if (memory == "pinned") {
                        p.pinned = std::make_unique<pinned_buffer>(g.e, work.bytes());
                        at = p.pinned->get();
                        if (!at) {
                                p.why = sortd_engine_error(g.e);
                                return p;
                        }
                }
                p.r = make_engine_run(g.e, in, want, at, r_.host_threads);
                if (memory != "device")
                        return p;
#ifdef SORTD_HAVE_CUDA
                auto d = std::make_unique<device_run>(g.e, in, std::move(p.r), at);
                if (d->ok())
                        p.r = std::move(d);
                else
                        p.why = "cudaMalloc of the device arrays failed";
#else
                p.r = nullptr;
                p.why = "this build has no CUDA";
#endif
                return p;
        }

        /* repeats + 1 sorts, the first untimed (module loading, first touch); all verified. */
        bool measure(const gpu_engine &g, const input &in, const sorted_result &want, buffer &work,
                     const std::string &dist, const std::string &memory, gpu_row &row)
        {
                placed_run p = place(g, in, want, work, memory);
                std::unique_ptr<run> &r = p.r;
                std::vector<double> e2e, dev;
                std::string why;

                if (!r) {
                        note(g.kind + " skips " + memory + " memory: " + p.why);
                        return false;
                }
                row = {g.kind, memory, 0, 0, true};
                for (unsigned rep = 0; rep <= r_.repeats; rep++) {
                        r->load();
                        double t0 = now();
                        outcome s = r->sort(why);
                        double t1 = now();
                        if (s == outcome::unsupported) {
                                note(g.kind + " skipped for " + sortd_key_type_name(in.type) + "/" +
                                     sortd_payload_name(in.payload) + ": " + why);
                                return false;
                        }
                        if (s == outcome::failed) {
                                error(in, dist, g.kind, "sort failed: " + why);
                                return false;
                        }
                        if (rep > 0) {
                                e2e.push_back(t1 - t0);
                                dev.push_back(sortd_engine_last_device_seconds(g.e));
                        }
                        if (!r->verify(why)) {
                                error(in, dist, g.kind, "verification failed: " + why);
                                row.verified = false;
                                break;
                        }
                }
                row.e2e_s = e2e.empty() ? 0 : median(e2e);
                row.device_s = dev.empty() ? 0 : median(dev);
                return true;
        }

        void error(const input &in, const std::string &dist, const std::string &kind,
                   const std::string &what)
        {
                fprintf(stderr, "sortbench: error: %s %s/%s %s n=%s: %s\n", kind.c_str(),
                        sortd_key_type_name(in.type), sortd_payload_name(in.payload), dist.c_str(),
                        size_name(in.n).c_str(), what.c_str());
                failed_ = true;
        }

        void print(const input &in, const std::string &dist, const gpu_row &row,
                   const std::vector<gpu_row> &all)
        {
                const gpu_row *cub = nullptr;
                double kernel = rate_g(in.n, row.device_s);
                double peak = sortd_engine_peak_bandwidth(find(row.engine)->e);
                double bound = peak / bytes_per_key(in) / 1e9; /* GKeys/s */
                double of_bound = kernel > 0 && bound > 0 ? kernel / bound : -1;
                double vs_cub = -1;

                for (const auto &r : all)
                        if (r.engine == "cub" && r.memory == row.memory && r.verified &&
                            r.device_s > 0)
                                cub = &r;
                if (cub && row.engine != "cub" && kernel > 0)
                        vs_cub = kernel / rate_g(in.n, cub->device_s);
                if (r_.json)
                        print_json(in, dist, row, kernel, of_bound, vs_cub);
                else
                        print_text(in, dist, row, kernel, of_bound, vs_cub);
                fflush(stdout);
        }

        static void print_json(const input &in, const std::string &dist, const gpu_row &row,
                               double kernel, double of_bound, double vs_cub)
        {
                char rate[32] = "null", bound[32] = "null", ratio[48] = "";

                if (kernel > 0)
                        snprintf(rate, sizeof(rate), "%.4f", kernel);
                if (of_bound >= 0)
                        snprintf(bound, sizeof(bound), "%.4f", of_bound);
                if (vs_cub >= 0)
                        snprintf(ratio, sizeof(ratio), ",\"vs_cub\":%.4f", vs_cub);
                printf("{\"engine\":\"%s\",\"memory\":\"%s\",\"type\":\"%s\",\"payload\":\"%s\","
                       "\"dist\":\"%s\",\"n\":%zu,\"gkeys_per_s\":%.4f,\"kernel_gkeys_per_s\":%s,"
                       "\"of_bound\":%s%s,\"verified\":%s}\n",
                       row.engine.c_str(), row.memory.c_str(), sortd_key_type_name(in.type),
                       sortd_payload_name(in.payload), dist.c_str(), in.n, rate_g(in.n, row.e2e_s),
                       rate, bound, ratio, row.verified ? "true" : "false");
        }

        static void print_text(const input &in, const std::string &dist, const gpu_row &row,
                               double kernel, double of_bound, double vs_cub)
        {
                char rate[24] = "-", bound[16] = "-", ratio[16] = "";

                if (kernel > 0)
                        snprintf(rate, sizeof(rate), "%.3f", kernel);
                if (of_bound >= 0)
                        snprintf(bound, sizeof(bound), "%.0f%%", 100 * of_bound);
                if (vs_cub >= 0)
                        snprintf(ratio, sizeof(ratio), "%.2fx", vs_cub);
                printf("%-6s %-8s %-4s %-9s %-8s %-6s %12.3f %15s %7s %9s%s\n", row.engine.c_str(),
                       row.memory.c_str(), sortd_key_type_name(in.type),
                       sortd_payload_name(in.payload), dist.c_str(), size_name(in.n).c_str(),
                       rate_g(in.n, row.e2e_s), rate, ratio, bound, row.verified ? "" : "  WRONG");
        }
};

} // namespace

int gpu_sweep(const gpu_request &r)
{
        return gpu_bench(r).main();
}

} // namespace sortbench
