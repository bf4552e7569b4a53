/* The driver API types that kernels/cuda/cuda_backend.cuh takes from CUDA's cudaTypedefs.h:
   the fake runtime (cuda_runtime.h here) hands out its own cuMemGetAddressRange. */
#ifndef SORTD_FAKE_CUDA_TYPEDEFS_H
#define SORTD_FAKE_CUDA_TYPEDEFS_H

#include <cstddef>

typedef unsigned long long CUdeviceptr;
enum CUresult {
        CUDA_SUCCESS = 0,
        CUDA_ERROR_INVALID_VALUE = 1,
        CUDA_ERROR_NOT_FOUND = 500,
};
typedef CUresult (*PFN_cuMemGetAddressRange_v3020)(CUdeviceptr *base, size_t *size, CUdeviceptr p);

#endif
