/*
 * The few things kernel source needs that differ between nvcc and the SIMT
 * emulator (tests/support/simt/simt.h, which must be included first there). Kernel
 * files include this and nothing device-specific of their own.
 */
#ifndef SORTD_CUDA_COMPAT_CUH
#define SORTD_CUDA_COMPAT_CUH

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
SORTD_DEVICE unsigned shared_atomic_add(unsigned *p, unsigned v)
{
        return atomicAdd(p, v);
}

} /* namespace sortd_cuda */

#elif defined(SORTD_SIMT)

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
inline unsigned shared_atomic_add(unsigned *p, unsigned v)
{
        return simt_atomic_add_local(p, v);
}

} /* namespace sortd_cuda */

#else
#error "kernels/cuda needs nvcc, or tests/support/simt/simt.h included first"
#endif

namespace sortd_cuda
{

constexpr unsigned FULL_MASK = 0xffffffffu;
constexpr int WARP_THREADS = 32;

/* Relaxed single-word accesses for the look-back's status counters: one
   32-bit word carries flag and count, so a reader never sees half of it.
   The emulator parks spin-waiting threads until such a store. */
SORTD_DEVICE uint32_t load_volatile(const uint32_t *p)
{
        return *(const volatile uint32_t *)p;
}
SORTD_DEVICE void store_volatile(uint32_t *p, uint32_t v)
{
        *(volatile uint32_t *)p = v;
#if defined(SORTD_SIMT)
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

} /* namespace sortd_cuda */

#endif
