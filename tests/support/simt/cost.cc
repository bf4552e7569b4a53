/*
 * The emulator's cost model: see cost.h for what it counts and why.
 */
#include "simt.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "cost.h"

namespace simt
{

namespace
{

constexpr unsigned WARP = 32;
constexpr unsigned SECTOR_SHIFT = 5; /* 32-byte sectors */
constexpr unsigned BANKS = 32;       /* of 4-byte words */

struct lane_access {
        uintptr_t addr;
        unsigned bytes;
        bool active;
};

/* One warp instruction being assembled from its lanes' calls. */
struct group {
        unsigned arrived = 0;
        bool shared = false, write = false, atomic = false;
        lane_access lane[WARP];
};

/* Per warp and source line: how many times each lane made the call, and the
   instructions some lanes have reached and others not yet. */
struct site_state {
        uint32_t calls[WARP] = {};
        std::map<uint32_t, group> open;
};

struct site_key {
        uint64_t warp;
        const char *file;
        unsigned line;
        bool operator==(const site_key &o) const
        {
                return warp == o.warp && file == o.file && line == o.line;
        }
};
struct site_hash {
        size_t operator()(const site_key &k) const
        {
                return std::hash<uint64_t>()(k.warp * 0x9e3779b97f4a7c15ull ^ (uintptr_t)k.file ^
                                             (uint64_t)k.line << 40);
        }
};

struct cost_state {
        bool on = false;
        std::vector<kernel_cost> done;
        kernel_cost cur;
        bool in_launch = false;
        std::unordered_map<site_key, site_state, site_hash> sites;
        std::unordered_set<uint64_t> read_sectors, written_sectors;
};

cost_state g;

void touch_dram(uintptr_t addr, unsigned bytes, bool write)
{
        for (uint64_t s = addr >> SECTOR_SHIFT; s <= (addr + bytes - 1) >> SECTOR_SHIFT; s++) {
                if (write)
                        g.written_sectors.insert(s);
                else if (!g.written_sectors.count(s))
                        g.read_sectors.insert(s);
        }
}

uint64_t global_sectors(const group &gr)
{
        uint64_t s[2 * WARP];
        unsigned n = 0;

        for (const lane_access &a : gr.lane) {
                if (!a.active)
                        continue;
                s[n++] = a.addr >> SECTOR_SHIFT;
                if ((a.addr + a.bytes - 1) >> SECTOR_SHIFT != a.addr >> SECTOR_SHIFT)
                        s[n++] = (a.addr + a.bytes - 1) >> SECTOR_SHIFT;
                touch_dram(a.addr, a.bytes, gr.write);
        }
        std::sort(s, s + n);
        return (uint64_t)(std::unique(s, s + n) - s);
}

/* The most distinct words one bank must deliver: each takes a wavefront.
   Atomics to one word are not merged: the hardware serialises them, so
   each lane's update counts. */
uint64_t shared_wavefronts(const group &gr)
{
        uint64_t words[4 * WARP];
        unsigned n = 0, per_bank[BANKS] = {}, most = 0;

        for (const lane_access &a : gr.lane) {
                if (!a.active)
                        continue;
                for (uintptr_t w = a.addr >> 2; w <= (a.addr + a.bytes - 1) >> 2; w++)
                        words[n++] = w;
        }
        if (!gr.atomic) {
                std::sort(words, words + n);
                n = (unsigned)(std::unique(words, words + n) - words);
        }
        for (unsigned i = 0; i < n; i++)
                most = std::max(most, ++per_bank[words[i] % BANKS]);
        return most;
}

void retire(const group &gr, const char *file, unsigned line)
{
        kernel_cost &c = g.cur;

        if (gr.shared) {
                uint64_t wf = shared_wavefronts(gr);
                const char *base = std::strrchr(file, '/');

                (gr.atomic ? c.atoms : gr.write ? c.sts : c.lds)++;
                c.shared_wavefronts += wf;
                c.wavefronts_at[std::string(base ? base + 1 : file) + ":" + std::to_string(line)] +=
                        wf;
                if (gr.atomic)
                        for (const lane_access &a : gr.lane)
                                c.shared_atomics += a.active;
        } else {
                (gr.write ? c.gst : c.gld)++;
                (gr.write ? c.gst_sectors : c.gld_sectors) += global_sectors(gr);
        }
}

} /* namespace */

bool cost_on()
{
        return g.on;
}

void cost_begin()
{
        g = cost_state();
        g.on = true;
}

std::vector<kernel_cost> cost_end()
{
        std::vector<kernel_cost> out = std::move(g.done);

        g = cost_state();
        return out;
}

void cost_launch_begin(unsigned threads_per_block, unsigned blocks)
{
        if (!g.on)
                return;
        g.cur = kernel_cost();
        g.cur.name = "kernel";
        g.cur.warps = (uint64_t)blocks * (threads_per_block / WARP);
        g.in_launch = true;
}

void cost_launch_end()
{
        if (!g.on)
                return;
        for (auto &kv : g.sites) {
                if (kv.second.open.empty())
                        continue;
                if (!g.cur.nonuniform)
                        g.cur.nonuniform_site =
                                std::string(kv.first.file) + ":" + std::to_string(kv.first.line);
                g.cur.nonuniform += kv.second.open.size();
        }
        g.cur.dram_read_sectors = g.read_sectors.size();
        g.cur.dram_write_sectors = g.written_sectors.size();
        g.done.push_back(std::move(g.cur));
        g.sites.clear();
        g.read_sectors.clear();
        g.written_sectors.clear();
        g.in_launch = false;
}

void cost_kernel_name(const char *name)
{
        if (g.on && g.in_launch)
                g.cur.name = name;
}

void cost_memset(const void *p, size_t bytes)
{
        if (!g.on || !bytes)
                return;
        kernel_cost c;
        uintptr_t a = (uintptr_t)p;

        c.name = "memset";
        c.dram_write_sectors = ((a + bytes - 1) >> SECTOR_SHIFT) - (a >> SECTOR_SHIFT) + 1;
        g.done.push_back(c);
}

void cost_access(bool shared, bool write, bool atomic, const void *p, unsigned bytes, bool active,
                 const char *file, unsigned line)
{
        if (!g.on || !g.in_launch)
                return;
        unsigned lane = simt_lane();
        site_state &st = g.sites[site_key{warp_key(), file, line}];
        uint32_t k = st.calls[lane]++;
        group &gr = st.open[k];

        gr.arrived |= 1u << lane;
        gr.shared = shared;
        gr.write = write;
        gr.atomic = atomic;
        gr.lane[lane] = lane_access{(uintptr_t)p, bytes, active};
        if (gr.arrived != 0xffffffffu)
                return;
        retire(gr, file, line);
        st.open.erase(k);
}

void cost_scalar_global(const void *p, unsigned bytes, bool write)
{
        if (!g.on || !g.in_launch)
                return;
        g.cur.scalar_global++;
        (write ? g.cur.gst_sectors : g.cur.gld_sectors)++;
        touch_dram((uintptr_t)p, bytes, write);
}

void cost_op(op o)
{
        if (!g.on || !g.in_launch)
                return;
        if (o == op::global_atomic) {
                g.cur.global_atomics++;
                return;
        }
        /* collectives and barriers: every lane calls, the warp issues one */
        uint64_t kernel_cost::*const per_warp[] = {&kernel_cost::match, &kernel_cost::ballot,
                                                   &kernel_cost::shfl, &kernel_cost::syncwarp,
                                                   &kernel_cost::barrier};
        g.cur.*per_warp[(int)o] += simt_lane() == 0;
}

} /* namespace simt */
