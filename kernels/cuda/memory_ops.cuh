/*
 * The memory operations of engine.h that both CUDA engines share, as templates on an engine
 * struct E with members base and be (cuda_backend.cuh): host memory (pinned allocations and
 * registrations) and device memory (the device's UUID, CUDA IPC handles opened and closed).
 * nvcc, or the stand-in runtime of tests/support/fake_cuda.
 */
#ifndef SORTD_CUDA_MEMORY_OPS_CUH
#define SORTD_CUDA_MEMORY_OPS_CUH

#include "cuda_backend.cuh"

namespace sortd_cuda
{

/*
 * Host memory (engine.h) for an engine struct E with members base and be. Portable, so that a
 * daemon with one engine per device can hand a buffer to any of them; allocated and registered
 * with our device current so no other device gets a context for it.
 */
template <class E> sortd_status host_alloc(sortd_engine *e, size_t bytes, void **out)
{
        CudaBackend &be = ((E *)e)->be;
        void *p = nullptr;
        cudaError_t rc;

        if (!be.select())
                return SORTD_E_DEVICE;
        rc = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
        if (rc == cudaSuccess) {
                *out = p;
                return SORTD_OK;
        }
        (void)cudaGetLastError();
        return sortd__engine_fail(e, SORTD_E_NOMEM, "cudaHostAlloc of %zu bytes: %s", bytes,
                                  cudaGetErrorString(rc));
}

inline void host_free(sortd_engine *, void *p, size_t)
{
        if (cudaFreeHost(p) != cudaSuccess)
                (void)cudaGetLastError();
}

/* The caller's mistakes (registering twice, unregistering what is not registered) are INVAL. */
inline sortd_status host_register_failed(sortd_engine *e, cudaError_t rc, const char *what)
{
        bool caller = rc == cudaErrorHostMemoryAlreadyRegistered ||
                      rc == cudaErrorHostMemoryNotRegistered || rc == cudaErrorInvalidValue;

        (void)cudaGetLastError();
        return sortd__engine_fail(e,
                                  caller                            ? SORTD_E_INVAL
                                  : rc == cudaErrorMemoryAllocation ? SORTD_E_NOMEM
                                                                    : SORTD_E_DEVICE,
                                  "%s: %s", what, cudaGetErrorString(rc));
}

template <class E> sortd_status host_register(sortd_engine *e, void *p, size_t bytes)
{
        CudaBackend &be = ((E *)e)->be;
        cudaError_t rc;

        if (!be.select())
                return SORTD_E_DEVICE;
        rc = cudaHostRegister(p, bytes, cudaHostRegisterPortable);
        return rc == cudaSuccess ? SORTD_OK : host_register_failed(e, rc, "cudaHostRegister");
}

template <class E> sortd_status host_unregister(sortd_engine *e, void *p)
{
        CudaBackend &be = ((E *)e)->be;
        cudaError_t rc;

        if (!be.select())
                return SORTD_E_DEVICE;
        rc = cudaHostUnregister(p);
        return rc == cudaSuccess ? SORTD_OK : host_register_failed(e, rc, "cudaHostUnregister");
}

/* ---- device memory (engine.h) for an engine struct E with members base and be ---- */

static_assert(sizeof(cudaUUID_t) == SORTD_DEVICE_UUID_BYTES, "engine.h's device UUID");
static_assert(sizeof(cudaIpcMemHandle_t) == SORTD_CUDA_IPC_HANDLE_BYTES, "engine.h's IPC handle");

template <class E> sortd_status device_uuid(sortd_engine *e, uint8_t *uuid)
{
        memcpy(uuid, ((E *)e)->be.uuid.bytes, SORTD_DEVICE_UUID_BYTES);
        return SORTD_OK;
}

/*
 * Whether the driver refused the handle itself rather than failed: the handle is the caller's
 * to fix (engine.h: SORTD_E_INVAL).
 */
inline bool handle_refused(cudaError_t rc)
{
        switch (rc) {
        case cudaErrorInvalidValue:          /* not a handle, freed since, another GPU */
        case cudaErrorInvalidResourceHandle: /* not a handle this driver knows */
        case cudaErrorMapBufferObjectFailed: /* another container or PID namespace */
        case cudaErrorInvalidDevice:         /* exported on a device we cannot reach */
        case cudaErrorPeerAccessUnsupported: /* ... or map */
        case cudaErrorDeviceUninitialized:   /* "invalid device context": this same process */
        case cudaErrorAlreadyMapped:         /* a mapping in the way */
                return true;
        default:
                return false;
        }
}

inline sortd_status ipc_failed(sortd_engine *e, cudaError_t rc, const char *what)
{
        (void)cudaGetLastError();
        return sortd__engine_fail(e, handle_refused(rc) ? SORTD_E_INVAL : SORTD_E_DEVICE,
                                  "%s: %s (%s)", what, cudaGetErrorString(rc),
                                  cudaGetErrorName(rc));
}

/* Lazy peer access: a handle from a peer device maps without our enabling peer access first. */
template <class E>
sortd_status ipc_open(sortd_engine *e, const uint8_t *handle, void **base, size_t *bytes)
{
        CudaBackend &be = ((E *)e)->be;
        cudaIpcMemHandle_t h;
        void *p = nullptr;
        size_t size = 0;
        cudaError_t rc;

        memcpy(&h, handle, sizeof(h));
        if (!be.select())
                return SORTD_E_DEVICE;
        rc = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
        if (rc != cudaSuccess)
                return ipc_failed(e, rc, "cudaIpcOpenMemHandle");
        if (!be.allocation_size(p, &size)) {
                if (cudaIpcCloseMemHandle(p) != cudaSuccess)
                        (void)cudaGetLastError();
                return SORTD_E_DEVICE;
        }
        *base = p;
        *bytes = size;
        return SORTD_OK;
}

template <class E> sortd_status ipc_close(sortd_engine *e, void *base)
{
        CudaBackend &be = ((E *)e)->be;
        cudaError_t rc;

        if (!be.select())
                return SORTD_E_DEVICE;
        rc = cudaIpcCloseMemHandle(base);
        return rc == cudaSuccess ? SORTD_OK : ipc_failed(e, rc, "cudaIpcCloseMemHandle");
}

} /* namespace sortd_cuda */

#endif
