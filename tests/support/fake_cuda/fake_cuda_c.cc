/* c/cuda_runtime_api.h over the fake runtime: device memory is host memory here, so the
   synchronous copies and memsets are plain ones, after checking that the device side is. */
#include "cuda_runtime.h"

#include <cstring>

namespace c_api
{
#include "c/cuda_runtime_api.h"
}
/* The C header's names for this file's own calls: here they are fake_cuda's. */
#undef cudaSuccess
#undef cudaGetDeviceCount
#undef cudaGetDevice
#undef cudaSetDevice
#undef cudaGetDeviceProperties
#undef cudaMalloc
#undef cudaFree
#undef cudaMemset
#undef cudaMemcpy
#undef cudaDeviceSynchronize
#undef cudaIpcGetMemHandle
#undef cudaGetErrorString

static_assert(sizeof(c_api::cudaDeviceProp) == sizeof(fake_cuda::cudaDeviceProp), "one layout");
static_assert(sizeof(c_api::cudaIpcMemHandle_t) == sizeof(fake_cuda::cudaIpcMemHandle_t),
              "one layout");

namespace
{

bool device_span(const void *p, size_t bytes)
{
        cudaPointerAttributes a;

        return bytes == 0 || (fake_cuda::cudaPointerGetAttributes(&a, p) == cudaSuccess &&
                              a.type == cudaMemoryTypeDevice &&
                              fake_cuda::cudaPointerGetAttributes(&a, (const char *)p + bytes -
                                                                              1) == cudaSuccess &&
                              a.type == cudaMemoryTypeDevice);
}

} /* namespace */

extern "C" {

int fake_cuda_c_get_device_count(int *count)
{
        return fake_cuda::cudaGetDeviceCount(count);
}

int fake_cuda_c_get_device(int *device)
{
        return fake_cuda::cudaGetDevice(device);
}

int fake_cuda_c_set_device(int device)
{
        return fake_cuda::cudaSetDevice(device);
}

int fake_cuda_c_get_device_properties(c_api::cudaDeviceProp *prop, int device)
{
        return fake_cuda::cudaGetDeviceProperties((fake_cuda::cudaDeviceProp *)prop, device);
}

int fake_cuda_c_malloc(void **p, size_t bytes)
{
        return fake_cuda::cudaMalloc(p, bytes);
}

int fake_cuda_c_free(void *p)
{
        return fake_cuda::cudaFree(p);
}

int fake_cuda_c_memset(void *p, int value, size_t bytes)
{
        if (!device_span(p, bytes))
                return cudaErrorInvalidValue;
        memset(p, value, bytes);
        return cudaSuccess;
}

int fake_cuda_c_memcpy(void *dst, const void *src, size_t bytes, c_api::cudaMemcpyKind k)
{
        bool dst_dev = k == c_api::cudaMemcpyHostToDevice || k == c_api::cudaMemcpyDeviceToDevice;
        bool src_dev = k == c_api::cudaMemcpyDeviceToHost || k == c_api::cudaMemcpyDeviceToDevice;

        if ((dst_dev && !device_span(dst, bytes)) || (src_dev && !device_span(src, bytes)))
                return cudaErrorInvalidValue;
        memcpy(dst, src, bytes);
        return cudaSuccess;
}

int fake_cuda_c_device_synchronize(void)
{
        return cudaSuccess;
}

int fake_cuda_c_ipc_get_mem_handle(c_api::cudaIpcMemHandle_t *h, void *p)
{
        return fake_cuda::cudaIpcGetMemHandle((fake_cuda::cudaIpcMemHandle_t *)h, p);
}

const char *fake_cuda_c_get_error_string(int rc)
{
        return fake_cuda::cudaGetErrorString((fake_cuda::cudaError_t)rc);
}

void fake_cuda_c_fail_malloc_at(unsigned at)
{
        fake_cuda::control().fail_malloc_at = at;
}

void fake_cuda_c_fail_launch_at(unsigned at)
{
        fake_cuda::control().fail_launch_at = at;
}

} /* extern "C" */
