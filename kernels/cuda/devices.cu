/*
 * The CUDA devices this process sees (engine.h: sortd_devices_list), as the runtime lists them:
 * nvcc, or for the tests the stand-in runtime of tests/support/fake_cuda
 * (emulated_cuda_devices.cc there). Host code only; kernels/devices.c checked the arguments.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "../engine_impl.h"

static_assert(sizeof(cudaUUID_t) == SORTD_DEVICE_UUID_BYTES, "engine.h's device UUID");

namespace
{

/* What the runtime answers where there is nothing to list: no driver (a machine without a GPU,
   or a libcuda older than the runtime needs) or no device (none, or CUDA_VISIBLE_DEVICES hides
   them all). Any other error is a driver that is there and fails, which the caller must hear. */
bool no_device(cudaError_t rc)
{
        return rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver;
}

sortd_status failed(cudaError_t rc, const char *what, char *why, size_t why_len)
{
        (void)cudaGetLastError();
        if (why_len)
                snprintf(why, why_len, "%s: %s", what, cudaGetErrorString(rc));
        return SORTD_E_DEVICE;
}

/* Free memory is the context's to tell; a device whose context cannot be made now (held by
   another process in exclusive mode, or lost) is still there, so it is listed with what its
   properties say and nothing free. */
void memory(int ordinal, size_t total, sortd_device_info *d)
{
        size_t free_bytes = 0, total_bytes = 0;

        if (cudaSetDevice(ordinal) != cudaSuccess ||
            cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
                (void)cudaGetLastError();
                free_bytes = 0;
                total_bytes = total;
        }
        d->free_bytes = free_bytes;
        d->total_bytes = total_bytes;
}

/* Device i's row; cudaSetDevice(i) on the way (memory). */
sortd_status describe(int i, sortd_device_info *d, char *why, size_t why_len)
{
        cudaDeviceProp prop;
        cudaError_t rc = cudaGetDeviceProperties(&prop, i);

        memset(d, 0, sizeof(*d));
        if (rc != cudaSuccess)
                return failed(rc, "cudaGetDeviceProperties", why, why_len);
        d->ordinal = i;
        memcpy(d->uuid, prop.uuid.bytes, SORTD_DEVICE_UUID_BYTES);
        snprintf(d->name, sizeof(d->name), "%.255s", prop.name);
        if (cudaDeviceGetPCIBusId(d->pci_bus_id, (int)sizeof(d->pci_bus_id), i) != cudaSuccess) {
                (void)cudaGetLastError();
                d->pci_bus_id[0] = '\0';
        }
        d->major = prop.major;
        d->minor = prop.minor;
        memory(i, prop.totalGlobalMem, d);
        return SORTD_OK;
}

} /* namespace */

extern "C" sortd_status sortd__cuda_devices_list(sortd_device_info *out, size_t max, size_t *count,
                                                 char *why, size_t why_len)
{
        int n = 0, current = 0;
        cudaError_t rc = cudaGetDeviceCount(&n);
        sortd_status s = SORTD_OK;

        if (rc != cudaSuccess && !no_device(rc))
                return failed(rc, "cudaGetDeviceCount", why, why_len);
        if (rc != cudaSuccess || n <= 0) {
                (void)cudaGetLastError();
                *count = 0;
                return SORTD_OK;
        }
        if (max == 0) {
                *count = (size_t)n;
                return SORTD_OK;
        }
        /* describe() makes each device current in turn: the caller's comes back after */
        if (cudaGetDevice(&current) != cudaSuccess) {
                (void)cudaGetLastError();
                current = 0;
        }
        for (int i = 0; i < n && (size_t)i < max && s == SORTD_OK; i++)
                s = describe(i, &out[i], why, why_len);
        if (cudaSetDevice(current) != cudaSuccess)
                (void)cudaGetLastError();
        if (s == SORTD_OK)
                *count = (size_t)n;
        return s;
}
