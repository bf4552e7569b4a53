/*
 * The emulator's cost model: what the kernels would ask of a GPU's memory
 * system and warp units, counted while they run on the emulator.
 *
 * Kernels touch memory through compat.cuh's accessors (global_load,
 * shared_store, ...). In the emulator each accessor reports here; every lane
 * of a warp must call it (a guard is an argument, not a branch around the
 * call), so the k-th call of one source line by each of the 32 lanes is one
 * warp instruction, which is how the hardware sees it:
 *   global: the 32-byte sectors the coalescer asks of L2 for the active lanes;
 *   shared: the wavefronts, the largest number of distinct 4-byte words any
 *           of the 32 banks must serve (a word read by several lanes is one);
 *   DRAM:   distinct sectors a launch reads (less those it wrote first: L2
 *           holds them) and writes, so partial sectors written by
 *           neighbouring tiles merge in L2 as they do on the GPU.
 * Warp collectives and barriers count once per warp; atomics once per lane.
 * A call that not every lane of its warp makes is reported (uniformity), so
 * the counts cannot silently drift.
 */
#ifndef SORTD_SIMT_COST_H
#define SORTD_SIMT_COST_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace simt
{

/* In this order: cost_op indexes the warp counters by it. */
enum class op { match, ballot, shfl, syncwarp, barrier, global_atomic };

/* One launch (or one memset of the backend). */
struct kernel_cost {
        std::string name;
        uint64_t warps = 0;
        /* global memory: warp instructions and the sectors they ask of L2 */
        uint64_t gld = 0, gst = 0, gld_sectors = 0, gst_sectors = 0;
        /* per-lane accesses outside the accessors: status words, atomics */
        uint64_t scalar_global = 0;
        uint64_t dram_read_sectors = 0, dram_write_sectors = 0;
        /* shared memory: warp instructions and their wavefronts */
        uint64_t lds = 0, sts = 0, atoms = 0, shared_wavefronts = 0;
        /* warp instructions */
        uint64_t match = 0, ballot = 0, shfl = 0, syncwarp = 0, barrier = 0;
        /* lane operations */
        uint64_t global_atomics = 0, shared_atomics = 0;
        /* shared wavefronts by source line ("file:line"): where they go */
        std::map<std::string, uint64_t> wavefronts_at;
        /* accessor calls not made by every lane of their warp; where first */
        uint64_t nonuniform = 0;
        std::string nonuniform_site;

        uint64_t dram_bytes() const
        {
                return 32 * (dram_read_sectors + dram_write_sectors);
        }
};

/* Starts counting (and clears what was counted); while on, every launch and
   memset appends one kernel_cost. */
void cost_begin();
/* Stops counting; returns what was counted since cost_begin. */
std::vector<kernel_cost> cost_end();
bool cost_on();

/* Reports from the accessors (compat.cuh) and intrinsics (simt.h). */
void cost_access(bool shared, bool write, bool atomic, const void *p, unsigned bytes, bool active,
                 const char *file, unsigned line);
void cost_scalar_global(const void *p, unsigned bytes, bool write);
void cost_op(op o);
void cost_kernel_name(const char *name);
void cost_memset(const void *p, size_t bytes);

/* Called by simt::launch around a grid. */
void cost_launch_begin(unsigned threads_per_block, unsigned blocks);
void cost_launch_end();

} /* namespace simt */

#endif
