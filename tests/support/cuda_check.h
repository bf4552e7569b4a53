/*
 * What the tests that call the CUDA runtime (the real one, or tests/support/fake_cuda's C API)
 * share: a failed call fails the test with the runtime's message, and a run without a device is
 * a skip. Include after the runtime's header and check.h.
 */
#ifndef SORTD_TESTS_CUDA_CHECK_H
#define SORTD_TESTS_CUDA_CHECK_H

#include <stdio.h>
#include <string.h>

#define CUDA_OK(call)                                                                              \
        do {                                                                                       \
                cudaError_t rc_ = (call);                                                          \
                ck_assert_msg(rc_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(rc_));       \
        } while (0)

/* 77 (skipped) without a CUDA device: any error from the runtime here means none. */
static inline int cuda_probe(void)
{
        int count = 0;
        cudaError_t e = cudaGetDeviceCount(&count);

        if (e != cudaSuccess || count == 0) {
                printf("SKIP: no CUDA device: %s\n",
                       e != cudaSuccess ? cudaGetErrorString(e) : "none found");
                return 77;
        }
        return 0;
}

/* bytes of device memory on the current device at *p, to share with a daemon: the allocation's
   IPC handle (handle_bytes long) and the device's UUID (16 bytes). */
static inline void cuda_shared_alloc(size_t bytes, void **p, void *handle, size_t handle_bytes,
                                     void *uuid)
{
        struct cudaDeviceProp prop;
        cudaIpcMemHandle_t h;
        int dev;

        CUDA_OK(cudaGetDevice(&dev));
        CUDA_OK(cudaGetDeviceProperties(&prop, dev));
        memcpy(uuid, prop.uuid.bytes, sizeof(prop.uuid.bytes));
        CUDA_OK(cudaMalloc(p, bytes));
        /* A handle names a whole allocation, whatever piece of it is registered. */
        CUDA_OK(cudaIpcGetMemHandle(&h, *p));
        memcpy(handle, &h, handle_bytes < sizeof(h) ? handle_bytes : sizeof(h));
}

#endif
