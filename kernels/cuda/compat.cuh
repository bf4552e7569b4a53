/*
 * The few things kernel source needs that differ between nvcc and the SIMT
 * emulator (tests/support/simt/simt.h, which must be included first there). Kernel
 * files include this and nothing device-specific of their own.
 */
#ifndef SORTD_CUDA_COMPAT_CUH
#define SORTD_CUDA_COMPAT_CUH

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#define SORTD_DEVICE __device__ __forceinline__
#define SORTD_HOST_DEVICE __host__ __device__ __forceinline__
/* All shared memory of a kernel is one TempStorage, declared through this. */
#define SORTD_SHARED(Type, name) __shared__ Type name

namespace sortd_cuda
{

/* One step of a spin-wait. A plain re-read: the status counters live in L2
   and a sleep would only add latency to the chain. */
SORTD_DEVICE void spin_pause()
{
}
/* note_*: what the emulated tests count to prove a path ran; nothing here. */
SORTD_DEVICE void note_lookback(unsigned steps)
{
        (void)steps;
}
SORTD_DEVICE void note_homogeneous_tile()
{
}
/*
 * Every kernel's first statement. On sm_90 and later a kernel launched with programmatic
 * dependent launch (cuda_backend.cuh: launch) may start while its predecessor in the stream still
 * runs, so it waits here for that grid to end and its writes to show before reading anything;
 * without the launch attribute the wait returns at once. The emulator names the launch for its
 * cost model instead (it runs launches one after another).
 */
SORTD_DEVICE void begin_kernel(const char *name)
{
        (void)name;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
/* A kernel launched with another architecture's policy (kernels.cuh
   built_here): a sticky error, never a wrong result. */
SORTD_DEVICE void not_built_here()
{
        __trap();
}

/* Memory accessors: every lane of a warp calls them, with any guard as an
   argument, so that the emulator's cost model (tests/support/simt/cost.h)
   sees whole warp instructions. Here they are the plain accesses. */
#define SORTD_SITE

} /* namespace sortd_cuda */

#elif defined(SORTD_SIMT)

#include <cstdlib>

#define SORTD_DEVICE inline
#define SORTD_HOST_DEVICE inline
#define SORTD_SHARED(Type, name) Type &name = ::simt::block_shared<Type>()

namespace sortd_cuda
{

inline void spin_pause()
{
        ::simt::spin_pause();
}
inline void note_lookback(unsigned steps)
{
        ::simt::note_lookback(steps);
}
inline void note_homogeneous_tile()
{
        ::simt::counters().homogeneous_tiles++;
}
/* Names the running launch in the cost model's report. */
inline void begin_kernel(const char *name)
{
        ::simt::cost_kernel_name(name);
}
/* The emulator builds every policy (kernels.cuh built_here). */
[[noreturn]] inline void not_built_here()
{
        std::abort();
}

/* The calling source line names the warp instruction for the cost model. */
#define SORTD_SITE , const char *site_file = __builtin_FILE(), unsigned site_line = __builtin_LINE()

} /* namespace sortd_cuda */

#else
#error "kernels/cuda needs nvcc, or tests/support/simt/simt.h included first"
#endif

namespace sortd_cuda
{

constexpr unsigned FULL_MASK = 0xffffffffu;
constexpr int WARP_THREADS = 32;

/*
 * A block may declare 48 KiB of static shared memory; a larger TempStorage lives in the launch's
 * dynamic shared memory (sm_90 allows 227 KiB a block), which the launch must ask for:
 * dynamic_shared_bytes<T>() (cuda_backend.cuh: launch_with also raises the kernel's limit).
 */
constexpr size_t STATIC_SHARED_MAX = 48 * 1024;

template <class T> SORTD_HOST_DEVICE constexpr size_t dynamic_shared_bytes()
{
        return sizeof(T) > STATIC_SHARED_MAX ? sizeof(T) : 0;
}

/* The block's T, in static or dynamic shared memory as its size needs. */
template <class T> SORTD_DEVICE T &temp_storage()
{
#if defined(__CUDACC__)
        if constexpr (dynamic_shared_bytes<T>() == 0) {
                __shared__ T s;
                return s;
        } else {
                extern __shared__ __align__(16) unsigned char sortd_dynamic_shared[];
                return *reinterpret_cast<T *>(sortd_dynamic_shared);
        }
#else
        return ::simt::block_shared<T>();
#endif
}

/* Relaxed single-word accesses for the look-back's status counters: one
   32-bit word carries flag and count, so a reader never sees half of it.
   The emulator parks spin-waiting threads until such a store. */
SORTD_DEVICE uint32_t load_volatile(const uint32_t *p)
{
#if defined(SORTD_SIMT)
        ::simt::cost_scalar_global(p, sizeof(*p), false);
#endif
        return *(const volatile uint32_t *)p;
}
/* A spin-wait's re-read: the cost model leaves it out. */
SORTD_DEVICE uint32_t reload_volatile(const uint32_t *p)
{
        return *(const volatile uint32_t *)p;
}
SORTD_DEVICE void store_volatile(uint32_t *p, uint32_t v)
{
        *(volatile uint32_t *)p = v;
#if defined(SORTD_SIMT)
        ::simt::cost_scalar_global(p, sizeof(*p), true);
        ::simt::wake_spinners();
#endif
}

SORTD_DEVICE unsigned lane_id()
{
        return threadIdx.x % WARP_THREADS;
}
SORTD_DEVICE unsigned warp_id()
{
        return threadIdx.x / WARP_THREADS;
}
SORTD_DEVICE unsigned lanemask_lt()
{
        return (1u << lane_id()) - 1u;
}

/* What one lane reports of an access; nothing outside the emulator. */
SORTD_DEVICE void note_access(bool shared, bool write, bool atomic, const void *p, unsigned bytes,
                              bool active, const char *file, unsigned line)
{
#if defined(SORTD_SIMT)
        ::simt::cost_access(shared, write, atomic, p, bytes, active, file, line);
#else
        (void)shared, (void)write, (void)atomic, (void)p, (void)bytes, (void)active, (void)file,
                (void)line;
#endif
}

#if defined(SORTD_SIMT)
#define SORTD_NOTE(shared, write, atomic, p, bytes, active)                                        \
        note_access(shared, write, atomic, p, bytes, active, site_file, site_line)
#else
#define SORTD_NOTE(shared, write, atomic, p, bytes, active) ((void)0)
#endif

template <class T> SORTD_DEVICE T global_load_if(bool pred, const T *p, T other SORTD_SITE)
{
        SORTD_NOTE(false, false, false, p, sizeof(T), pred);
        return pred ? *p : other;
}
template <class T> SORTD_DEVICE T global_load(const T *p SORTD_SITE)
{
        SORTD_NOTE(false, false, false, p, sizeof(T), true);
        return *p;
}
template <class T> SORTD_DEVICE void global_store_if(bool pred, T *p, T v SORTD_SITE)
{
        SORTD_NOTE(false, true, false, p, sizeof(T), pred);
        if (pred)
                *p = v;
}
template <class T> SORTD_DEVICE void global_store(T *p, T v SORTD_SITE)
{
        SORTD_NOTE(false, true, false, p, sizeof(T), true);
        *p = v;
}
template <class T> SORTD_DEVICE T shared_load(const T *p SORTD_SITE)
{
        SORTD_NOTE(true, false, false, p, sizeof(T), true);
        return *p;
}
template <class T> SORTD_DEVICE void shared_store_if(bool pred, T *p, T v SORTD_SITE)
{
        SORTD_NOTE(true, true, false, p, sizeof(T), pred);
        if (pred)
                *p = v;
}
template <class T> SORTD_DEVICE void shared_store(T *p, T v SORTD_SITE)
{
        SORTD_NOTE(true, true, false, p, sizeof(T), true);
        *p = v;
}
/* Returns the old value where pred holds, 0 elsewhere. */
SORTD_DEVICE unsigned shared_atomic_add_if(bool pred, unsigned *p, unsigned v SORTD_SITE)
{
        SORTD_NOTE(true, true, true, p, sizeof(unsigned), pred);
        if (!pred)
                return 0;
#if defined(SORTD_SIMT)
        return simt_atomic_add_local(p, v);
#else
        return atomicAdd(p, v);
#endif
}

} /* namespace sortd_cuda */

#endif
