/*
 * The stand-in CUDA runtime (../cuda_runtime.h) for C test code: the few runtime calls a GPU
 * test makes on its own side (device memory, IPC handles, the device's UUID), under CUDA's
 * names, so that one test source runs against a real GPU or the emulated daemon
 * (sortd-emulated-cuda). The types have the layout of fake_cuda's.
 */
#ifndef SORTD_FAKE_CUDA_C_RUNTIME_API_H
#define SORTD_FAKE_CUDA_C_RUNTIME_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int cudaError_t;
#define cudaSuccess 0

enum cudaMemcpyKind {
        cudaMemcpyHostToHost = 0,
        cudaMemcpyHostToDevice = 1,
        cudaMemcpyDeviceToHost = 2,
        cudaMemcpyDeviceToDevice = 3,
};

typedef struct cudaUUID_t {
        char bytes[16];
} cudaUUID_t;

typedef struct cudaIpcMemHandle_t {
        char reserved[64];
} cudaIpcMemHandle_t;

struct cudaDeviceProp {
        char name[256];
        cudaUUID_t uuid;
        size_t totalGlobalMem;
        int major, minor;
        int multiProcessorCount;
        int pciBusID, pciDeviceID, pciDomainID;
};

cudaError_t fake_cuda_c_get_device_count(int *count);
cudaError_t fake_cuda_c_get_device(int *device);
cudaError_t fake_cuda_c_set_device(int device);
cudaError_t fake_cuda_c_get_device_properties(struct cudaDeviceProp *prop, int device);
cudaError_t fake_cuda_c_malloc(void **p, size_t bytes);
cudaError_t fake_cuda_c_free(void *p);
cudaError_t fake_cuda_c_memset(void *p, int value, size_t bytes);
cudaError_t fake_cuda_c_memcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind k);
cudaError_t fake_cuda_c_device_synchronize(void);
cudaError_t fake_cuda_c_ipc_get_mem_handle(cudaIpcMemHandle_t *h, void *p);
const char *fake_cuda_c_get_error_string(cudaError_t rc);
/* The stand-in's faults, not CUDA's: the at-th cudaMalloc (or cudaMallocAsync) from now fails
   out of memory; the at-th kernel launch fails with a sticky illegal address. 0: none. */
void fake_cuda_c_fail_malloc_at(unsigned at);
void fake_cuda_c_fail_launch_at(unsigned at);

#define cudaGetDeviceCount fake_cuda_c_get_device_count
#define cudaGetDevice fake_cuda_c_get_device
#define cudaSetDevice fake_cuda_c_set_device
#define cudaGetDeviceProperties fake_cuda_c_get_device_properties
#define cudaMalloc fake_cuda_c_malloc
#define cudaFree fake_cuda_c_free
#define cudaMemset fake_cuda_c_memset
#define cudaMemcpy fake_cuda_c_memcpy
#define cudaDeviceSynchronize fake_cuda_c_device_synchronize
#define cudaIpcGetMemHandle fake_cuda_c_ipc_get_mem_handle
#define cudaGetErrorString fake_cuda_c_get_error_string

#ifdef __cplusplus
}
#endif

#endif
