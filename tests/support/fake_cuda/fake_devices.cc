/* The devices the fake runtime shows a process (fake_devices.h), and the controls that shape
   them (cuda_runtime.h). */
#include "fake_devices.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace fake_cuda
{

const cudaUUID_t fake_device_uuid = {
        {'s', 'i', 'm', 't', '-', 'f', 'a', 'k', 'e', '-', 'c', 'u', 'd', 'a', '0', '1'}};

namespace
{

constexpr size_t DEFAULT_MEMORY = (size_t)1 << 30;

struct Device {
        size_t total = DEFAULT_MEMORY;
        size_t used = 0;
        cudaError_t sticky = cudaSuccess; /* a CUDA context is per device, and so its loss */
        bool bad = false;
};

std::once_flag g_env_once;
std::mutex g_lock; /* guards everything below, and g_controls' counters */
controls g_controls;
Device g_dev[devices::MAX];
bool g_visible_set = false; /* CUDA_VISIBLE_DEVICES is set, g_visible_spec its text */
std::string g_visible_spec;
std::vector<int> g_visible; /* visible ordinal -> physical, for g_visible_for devices */
int g_visible_for = -1;
std::string g_fault_file;
thread_local int t_current = 0; /* as in CUDA, each host thread has its own current device */

[[noreturn]] void die(const char *var, const char *text, const char *what)
{
        fprintf(stderr, "fake CUDA runtime: %s=\"%s\": %s\n", var, text, what);
        abort();
}

/* The unsigned numbers in text, split at commas and blanks; false at anything else. */
bool numbers(const char *text, std::vector<unsigned long long> *out)
{
        const char *p = text;

        out->clear();
        for (;;) {
                while (*p == ',' || isspace((unsigned char)*p))
                        p++;
                if (!*p)
                        return true;
                if (!isdigit((unsigned char)*p))
                        return false;
                char *end;
                unsigned long long v = strtoull(p, &end, 10);

                if (*end && *end != ',' && !isspace((unsigned char)*end))
                        return false;
                out->push_back(v);
                p = end;
        }
}

/* The environment, as a process starting now would read it. Call with g_lock held. */
void read_env_locked()
{
        std::vector<unsigned long long> v;
        const char *s;

        g_controls.devices = 1;
        if ((s = getenv("FAKE_CUDA_DEVICES")) && *s) {
                if (!numbers(s, &v) || v.size() != 1 || v[0] > (unsigned)devices::MAX)
                        die("FAKE_CUDA_DEVICES", s, "one number of devices, 0 to 64");
                g_controls.devices = (int)v[0];
        }
        for (Device &d : g_dev)
                d = Device();
        if ((s = getenv("FAKE_CUDA_DEVICE_MEMORY")) && *s) {
                if (!numbers(s, &v) || v.empty() || v.size() > (size_t)devices::MAX)
                        die("FAKE_CUDA_DEVICE_MEMORY", s, "bytes, or a comma list of bytes");
                /* the last size holds for the devices the list does not reach */
                for (size_t k = 0; k < (size_t)devices::MAX; k++)
                        g_dev[k].total = (size_t)v[std::min(k, v.size() - 1)];
        }
        if ((s = getenv("FAKE_CUDA_BAD_DEVICES")) && *s) {
                if (!numbers(s, &v))
                        die("FAKE_CUDA_BAD_DEVICES", s, "a list of physical ordinals");
                for (unsigned long long k : v)
                        if (k < (unsigned)devices::MAX)
                                g_dev[k].bad = true;
        }
        s = getenv("CUDA_VISIBLE_DEVICES");
        g_visible_set = s != nullptr;
        g_visible_spec = s ? s : "";
        g_visible_for = -1;
        s = getenv("FAKE_CUDA_FAULT_FILE");
        g_fault_file = s ? s : "";
}

void ensure()
{
        std::call_once(g_env_once, [] {
                std::lock_guard<std::mutex> g(g_lock);

                read_env_locked();
        });
}

/* The physical device one entry of CUDA_VISIBLE_DEVICES names among n, or -1: an ordinal, or
   "GPU-" and a prefix of the UUID's text that only one device has, as the driver takes them. */
int entry_device(const std::string &e, int n)
{
        if (e.empty())
                return -1;
        if (std::all_of(e.begin(), e.end(), [](char c) { return isdigit((unsigned char)c); })) {
                unsigned long long k = e.size() > 3 ? ~0ull : strtoull(e.c_str(), nullptr, 10);

                return k < (unsigned long long)n ? (int)k : -1;
        }
        if (e.size() <= 4 || strncasecmp(e.c_str(), "GPU-", 4) != 0)
                return -1;
        int found = -1;

        for (int k = 0; k < n; k++) {
                if (strncasecmp(device_uuid_text(k).c_str(), e.c_str(), e.size()) != 0)
                        continue;
                if (found >= 0)
                        return -1; /* ambiguous */
                found = k;
        }
        return found;
}

std::string trim(const std::string &s)
{
        size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");

        return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

/* Visible ordinal -> physical for the devices now: the driver reads CUDA_VISIBLE_DEVICES up to
   its first entry that names no device (or one named before). Call with g_lock held. */
const std::vector<int> &visible_locked()
{
        int n = std::clamp(g_controls.devices, 0, devices::MAX);

        if (n == g_visible_for)
                return g_visible;
        g_visible.clear();
        g_visible_for = n;
        if (!g_visible_set) {
                for (int k = 0; k < n; k++)
                        g_visible.push_back(k);
                return g_visible;
        }
        for (size_t start = 0;;) {
                size_t end = g_visible_spec.find(',', start);
                int k = entry_device(trim(g_visible_spec.substr(start, end - start)), n);

                if (k < 0 || std::find(g_visible.begin(), g_visible.end(), k) != g_visible.end())
                        break;
                g_visible.push_back(k);
                if (end == std::string::npos)
                        break;
                start = end + 1;
        }
        return g_visible;
}

/* Whether the fault file names physical device k now: an empty file (or one that names no
   ordinal) names every device. Read at each launch, so a test can fault a running process. */
bool fault_file_names(const std::string &path, int k)
{
        std::vector<unsigned long long> v;
        char text[4096];
        FILE *f;
        size_t len;

        if (path.empty() || !(f = fopen(path.c_str(), "r")))
                return false;
        len = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[len] = '\0';
        /* anything but numbers reads as no list, so as every device */
        if (!numbers(text, &v) || v.empty())
                return true;
        return std::find(v.begin(), v.end(), (unsigned long long)k) != v.end();
}

} /* namespace */

controls &control()
{
        ensure();
        return g_controls;
}

void reset_counts()
{
        ensure();
        std::lock_guard<std::mutex> g(g_lock);
        controls c = g_controls;

        g_controls = controls();
        g_controls.devices = c.devices;
        g_controls.major = c.major;
        g_controls.minor = c.minor;
        g_controls.ptx_version = c.ptx_version;
        g_controls.sms = c.sms;
        g_controls.live_graph_execs = c.live_graph_execs; /* state, not a count */
}

void reset_devices()
{
        ensure();
        std::lock_guard<std::mutex> g(g_lock);

        read_env_locked();
        t_current = 0;
}

int ptx_version()
{
        ensure();
        return g_controls.ptx_version;
}

cudaUUID_t device_uuid(int physical)
{
        cudaUUID_t u = fake_device_uuid;

        u.bytes[14] = (char)('0' + (physical + 1) / 10 % 10);
        u.bytes[15] = (char)('0' + (physical + 1) % 10);
        return u;
}

std::string device_uuid_text(int physical)
{
        cudaUUID_t u = device_uuid(physical);
        const unsigned char *b = (const unsigned char *)u.bytes;
        char text[48];

        snprintf(text, sizeof(text),
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
        return text;
}

namespace devices
{

int visible_count()
{
        ensure();
        std::lock_guard<std::mutex> g(g_lock);

        return (int)visible_locked().size();
}

int physical(int visible)
{
        ensure();
        std::lock_guard<std::mutex> g(g_lock);
        const std::vector<int> &v = visible_locked();

        return visible >= 0 && (size_t)visible < v.size() ? v[visible] : -1;
}

int visible_of(int physical)
{
        ensure();
        std::lock_guard<std::mutex> g(g_lock);
        const std::vector<int> &v = visible_locked();
        auto it = std::find(v.begin(), v.end(), physical);

        return it == v.end() ? -1 : (int)(it - v.begin());
}

int current()
{
        return t_current;
}

void set_current(int visible)
{
        t_current = visible;
}

cudaError_t context(int *phys)
{
        int k = physical(t_current);

        if (k < 0)
                return cudaErrorNoDevice;
        *phys = k;
        return sticky(k);
}

cudaError_t sticky(int physical)
{
        std::lock_guard<std::mutex> g(g_lock);

        return g_dev[physical].sticky;
}

void lose(int physical, cudaError_t rc)
{
        std::lock_guard<std::mutex> g(g_lock);

        g_dev[physical].sticky = rc;
}

bool reserve(int physical, size_t bytes)
{
        std::lock_guard<std::mutex> g(g_lock);
        Device &d = g_dev[physical];

        if (bytes > d.total - std::min(d.used, d.total))
                return false;
        d.used += bytes;
        return true;
}

void release(int physical, size_t bytes)
{
        std::lock_guard<std::mutex> g(g_lock);

        g_dev[physical].used -= std::min(bytes, g_dev[physical].used);
}

void memory(int physical, size_t *free_bytes, size_t *total_bytes)
{
        std::lock_guard<std::mutex> g(g_lock);
        const Device &d = g_dev[physical];

        *total_bytes = d.total;
        *free_bytes = d.total - std::min(d.used, d.total);
}

bool bad(int physical)
{
        ensure();
        std::lock_guard<std::mutex> g(g_lock);

        return g_dev[physical].bad;
}

bool launch_faults(int physical)
{
        std::string path;

        ensure();
        {
                std::lock_guard<std::mutex> g(g_lock);

                if (g_controls.fail_launch_at && --g_controls.fail_launch_at == 0)
                        return true;
                path = g_fault_file;
        }
        return fault_file_names(path, physical);
}

bool malloc_fails()
{
        ensure();
        std::lock_guard<std::mutex> g(g_lock);

        return g_controls.fail_malloc_at && --g_controls.fail_malloc_at == 0;
}

void count(uint64_t controls::*counter)
{
        ensure();
        std::lock_guard<std::mutex> g(g_lock);

        g_controls.*counter += 1;
}

void uncount(uint64_t controls::*counter)
{
        ensure();
        std::lock_guard<std::mutex> g(g_lock);

        g_controls.*counter -= 1;
}

int pci_bus(int physical)
{
        return physical + 1;
}

} /* namespace devices */
} /* namespace fake_cuda */
