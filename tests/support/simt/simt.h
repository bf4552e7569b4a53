/*
 * A small SIMT emulator: compiles CUDA kernel source as plain C++ and runs
 * it on the CPU, so the kernels of kernels/cuda/ are tested without a GPU.
 *
 * Every CUDA thread is a Boost.Context fiber with its own stack, run by one
 * OS thread. A fiber runs until it reaches a point where a GPU thread could
 * wait on another (__syncthreads, __syncwarp, a warp intrinsic, a spin-wait
 * step, a global atomic); there it hands control back to the scheduler,
 * which picks the next runnable fiber at random (seeded, so a failure
 * replays). Several blocks are resident at once, so a block's look-back over
 * its predecessors really finds them half done.
 *
 * The emulation is sequentially consistent: it finds ordering bugs that
 * come from interleaving, not those that come from a weak memory model.
 *
 * What it provides, with the CUDA meaning:
 *   __global__ __device__ __host__ __forceinline__ __launch_bounds__
 *   threadIdx blockIdx blockDim gridDim dim3
 *   __syncthreads __syncwarp __ballot_sync __match_any_sync __shfl_sync
 *   __shfl_up_sync __popc __popcll __ffs __clz
 *   atomicAdd (32/64-bit, global and shared) __threadfence
 * Spin-waits: a kernel's wait step (compat.cuh's spin_pause) parks the
 * thread; stores that may end a wait (store_volatile, global atomics) wake
 * every parked thread. So waiting costs nothing, and a wait that nothing
 * can end is reported as a deadlock at once.
 * Shared memory: kernels declare it through SORTD_SHARED (kernels/cuda/
 * compat.cuh), which here becomes simt::block_shared<T>(): each block gets
 * its own arena, and the k-th declaration of every thread of a block maps to
 * the same bytes.
 *
 * Include this header before any kernel header; link simt.cc and
 * -lboost_context.
 */
#ifndef SORTD_SIMT_H
#define SORTD_SIMT_H

#include <cstddef>
#include <cstdint>
#include <functional>

#include "cost.h"

#define SORTD_SIMT 1

struct dim3 {
        unsigned x, y, z;
        constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_)
        {
        }
};

namespace simt
{

/* Scheduling knobs and what the last launches observed. */
struct config {
        uint64_t seed = 1;
        unsigned resident_blocks = 4; /* blocks interleaved at once */
};

struct stats {
        uint64_t launches = 0;
        uint64_t switches = 0;             /* fiber switches */
        uint64_t spin_yields = 0;          /* spin-wait steps that found nothing ready */
        uint64_t lookbacks = 0;            /* look-backs reported by kernels */
        uint64_t multi_step_lookbacks = 0; /* ... that read more than one predecessor */
        uint64_t homogeneous_tiles = 0;    /* binning tiles copied without staging */
};

void set_config(const config &c);
stats &counters();
void reset_counters();

struct thread_ctx; /* one emulated CUDA thread */

/* Runs body once per thread of a grid; returns when every thread ended. */
void launch(dim3 grid, dim3 block, const std::function<void()> &body);

/* The calling emulated thread; only valid inside a launch. */
thread_ctx *current();
/* Names the calling thread's warp uniquely within the launch. */
uint64_t warp_key();
const dim3 &thread_idx();
const dim3 &block_idx();
const dim3 &block_dim();
const dim3 &grid_dim();

/* Shared memory: next `bytes` of the calling block's arena (see above). */
void *block_shared_bytes(size_t bytes, size_t align);
template <class T> T &block_shared()
{
        return *static_cast<T *>(block_shared_bytes(sizeof(T), alignof(T)));
}

/* Scheduling points. */
void yield(); /* let others run; this thread stays runnable */
/* One step of a spin-wait: parks the thread until wake_spinners(). A kernel
   that spins on a word must write that word through a waking store
   (compat.cuh's store_volatile) or a global atomic. */
void spin_pause();
void wake_spinners();
void syncthreads();
/* A warp collective: every lane in mask deposits v; returns the 32 deposits
   (entries of lanes outside mask are undefined) once all of mask arrived. */
const uint64_t *warp_exchange(unsigned mask, uint64_t v);
void note_lookback(unsigned steps);

} /* namespace simt */

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

#define threadIdx (::simt::thread_idx())
#define blockIdx (::simt::block_idx())
#define blockDim (::simt::block_dim())
#define gridDim (::simt::grid_dim())

inline unsigned simt_lane()
{
        return threadIdx.x & 31u;
}

inline void __syncthreads()
{
        ::simt::cost_op(::simt::op::barrier);
        ::simt::syncthreads();
}
inline void __syncwarp(unsigned mask = 0xffffffffu)
{
        ::simt::cost_op(::simt::op::syncwarp);
        (void)::simt::warp_exchange(mask, 0);
}
inline void __threadfence()
{
        ::simt::yield();
}
inline void __threadfence_block()
{
}

inline unsigned __ballot_sync(unsigned mask, int pred)
{
        ::simt::cost_op(::simt::op::ballot);
        const uint64_t *v = ::simt::warp_exchange(mask, pred != 0);
        unsigned r = 0;

        for (unsigned l = 0; l < 32; l++)
                if ((mask >> l & 1u) && v[l])
                        r |= 1u << l;
        return r;
}

template <class T> inline unsigned __match_any_sync(unsigned mask, T value)
{
        static_assert(sizeof(T) <= 8, "match_any on a 32- or 64-bit value");
        uint64_t mine = (uint64_t)value;
        ::simt::cost_op(::simt::op::match);
        const uint64_t *v = ::simt::warp_exchange(mask, mine);
        unsigned r = 0;

        for (unsigned l = 0; l < 32; l++)
                if ((mask >> l & 1u) && v[l] == mine)
                        r |= 1u << l;
        return r;
}

template <class T> inline T simt_shfl_pick(const uint64_t *v, unsigned src)
{
        T out;
        uint64_t raw = v[src];

        static_assert(sizeof(T) <= 8, "shfl of a 32- or 64-bit value");
        __builtin_memcpy(&out, &raw, sizeof(T));
        return out;
}

template <class T> inline uint64_t simt_shfl_raw(T value)
{
        uint64_t raw = 0;

        __builtin_memcpy(&raw, &value, sizeof(T));
        return raw;
}

template <class T> inline T __shfl_sync(unsigned mask, T value, int src, int width = 32)
{
        ::simt::cost_op(::simt::op::shfl);
        const uint64_t *v = ::simt::warp_exchange(mask, simt_shfl_raw(value));
        unsigned lane = simt_lane();
        unsigned base = lane & ~(unsigned)(width - 1);

        return simt_shfl_pick<T>(v, base + ((unsigned)src & (unsigned)(width - 1)));
}

template <class T> inline T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32)
{
        ::simt::cost_op(::simt::op::shfl);
        const uint64_t *v = ::simt::warp_exchange(mask, simt_shfl_raw(value));
        unsigned lane = simt_lane();
        unsigned in_seg = lane & (unsigned)(width - 1);

        return in_seg >= delta ? simt_shfl_pick<T>(v, lane - delta) : value;
}

inline int __popc(unsigned x)
{
        return __builtin_popcount(x);
}
inline int __popcll(unsigned long long x)
{
        return __builtin_popcountll(x);
}
inline int __ffs(int x)
{
        return __builtin_ffs(x);
}
inline int __clz(int x)
{
        return x ? __builtin_clz((unsigned)x) : 32;
}

/* One OS thread runs every fiber, so a read-modify-write is atomic as long
   as it does not yield in the middle; the yield before it lets other
   threads race for the same word. */
template <class T> inline T simt_atomic_add(T *p, T v)
{
        ::simt::cost_op(::simt::op::global_atomic);
        ::simt::cost_scalar_global(p, sizeof(T), true);
        ::simt::yield();
        T old = *p;
        *p = old + v;
        ::simt::wake_spinners();
        return old;
}

inline unsigned atomicAdd(unsigned *p, unsigned v)
{
        return simt_atomic_add(p, v);
}
inline int atomicAdd(int *p, int v)
{
        return simt_atomic_add(p, v);
}
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
        return simt_atomic_add(p, v);
}

/* Shared-memory atomics need no yield to be interesting; keep them cheap. */
template <class T> inline T simt_atomic_add_local(T *p, T v)
{
        T old = *p;
        *p = old + v;
        return old;
}

#endif
