/*
 * A stand-in for the CUDA runtime, so that the cuda engine's host code
 * (kernels/cuda/cuda_backend.cuh, memory_ops.cuh, cuda_engine.cu, devices.cu)
 * runs here, with its kernels on the SIMT emulator (tests/support/simt). Only
 * what that code calls, with the runtime's documented behaviour where our
 * code depends on it:
 *   - device memory is host memory the runtime tracks; a copy whose pointers
 *     are not of the kind its direction says fails with cudaErrorInvalidValue,
 *     as a host pointer handed to the device would fault;
 *   - work on a stream (copies, memsets, launches, event records) is queued
 *     and runs only when the host waits for it (cudaStreamSynchronize,
 *     cudaEventSynchronize), so a host that touches memory a queued copy
 *     still reads or writes sees the wrong bytes, as it could on a GPU;
 *   - an async copy to or from pageable memory runs at once, as the runtime
 *     stages it, and is counted: the engines must make none;
 *   - CUDA IPC handles name memory of another process (device memory is a
 *     memfd); opening one of the same process fails as the driver's does, and
 *     one opened again returns the same pointer, counted;
 *   - a kernel that faults leaves a sticky error on its device: every call
 *     on that device fails from then on, in this process, as its context is
 *     lost; the other devices work on.
 *
 * Devices, as a process on a server of several GPUs sees them:
 *   - control().devices physical devices, $FAKE_CUDA_DEVICES (default 1).
 *     Physical device k has its own UUID (device_uuid(k): fake_device_uuid
 *     with its last two characters k + 1 in two digits, "simt-fake-cuda01",
 *     "simt-fake-cuda02", ...), name ("SIMT emulator k"), PCI address
 *     ("0000:<k + 1, two hex digits>:00.0") and memory: 1 GiB, or
 *     $FAKE_CUDA_DEVICE_MEMORY bytes (one size for all, or a comma list, the
 *     last size holding for the devices after it). cudaMalloc takes from it
 *     and fails when it is used up; cudaMemGetInfo says what is left.
 *   - $CUDA_VISIBLE_DEVICES as the driver reads it: a comma list of physical
 *     ordinals or UUIDs as nvidia-smi prints them ("GPU-73696d74-2d66-...",
 *     device_uuid_text(k), or a prefix of it that one device alone has),
 *     which become visible ordinals 0, 1, ... in that order; the list ends
 *     at its first entry that names no device, or one named before. Unset:
 *     every device. Every call takes visible ordinals.
 *   - the current device is per host thread, as in CUDA, and each
 *     allocation, stream and event belongs to the device current when it was
 *     made: a launch on a stream of another device fails
 *     (cudaErrorInvalidResourceHandle), cudaPointerGetAttributes names the
 *     allocation's device, and cudaMemGetInfo counts its bytes there.
 *   - $FAKE_CUDA_FAULT_FILE names a file whose existence makes launches
 *     fault (read at every launch, so a test can fault a running process):
 *     every launch when the file is empty (or holds no list of numbers),
 *     else only those on the physical ordinals it lists (comma or blank
 *     separated). control().fail_launch_at
 *     faults one launch on whatever device.
 *   - $FAKE_CUDA_BAD_DEVICES, a list of physical ordinals: those devices
 *     compute wrongly; every device-to-host copy from their memory comes back
 *     with bit 0 of its first byte flipped, so an engine's self-check fails.
 *   - engines on different devices may run at once on different host
 *     threads: launches take turns on the emulator (whose state is global),
 *     and the counters of control() count under a lock.
 * The environment is read once, at the first call (control() included);
 * reset_devices() reads it again for an in-process test that changed it.
 *
 * Include simt.h first; -I this directory ahead of CUDA's. The functions are
 * C++ in namespace fake_cuda, so a binary that also links libcudart keeps
 * both apart. fake_cuda::control() steers it and counts what it saw.
 */
#ifndef SORTD_FAKE_CUDA_RUNTIME_H
#define SORTD_FAKE_CUDA_RUNTIME_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "simt.h" /* dim3, and the kernels' keywords */

namespace fake_cuda
{

enum cudaError_t {
        cudaSuccess = 0,
        cudaErrorInvalidValue = 1,
        cudaErrorMemoryAllocation = 2,
        cudaErrorInitializationError = 3,
        cudaErrorInsufficientDriver = 35,
        cudaErrorLaunchFailure = 719,
        cudaErrorLaunchTimeout = 702,
        cudaErrorHardwareStackError = 714,
        cudaErrorIllegalInstruction = 715,
        cudaErrorMisalignedAddress = 716,
        cudaErrorInvalidAddressSpace = 717,
        cudaErrorInvalidPc = 718,
        cudaErrorIllegalAddress = 700,
        cudaErrorECCUncorrectable = 214,
        cudaErrorAssert = 710,
        cudaErrorNoDevice = 100,
        cudaErrorInvalidDevice = 101,
        cudaErrorDeviceUninitialized = 201,
        cudaErrorMapBufferObjectFailed = 205,
        cudaErrorAlreadyMapped = 208,
        cudaErrorInvalidResourceHandle = 400,
        cudaErrorNotReady = 600,
        cudaErrorPeerAccessUnsupported = 217,
        cudaErrorHostMemoryAlreadyRegistered = 712,
        cudaErrorHostMemoryNotRegistered = 713,
        cudaErrorIllegalState = 401,
        cudaErrorStreamCaptureUnsupported = 900,
        cudaErrorStreamCaptureInvalidated = 901,
};

enum cudaMemcpyKind {
        cudaMemcpyHostToHost = 0,
        cudaMemcpyHostToDevice = 1,
        cudaMemcpyDeviceToHost = 2,
        cudaMemcpyDeviceToDevice = 3,
};

enum cudaMemoryType {
        cudaMemoryTypeUnregistered = 0,
        cudaMemoryTypeHost = 1,
        cudaMemoryTypeDevice = 2,
};

enum cudaDeviceAttr {
        cudaDevAttrMemoryClockRate = 36,
        cudaDevAttrGlobalMemoryBusWidth = 37,
};

/* The mode is taken and not modelled: every capture is checked as a Global one is for its own
   stream (a wait for it fails), not for other threads' calls. */
enum cudaStreamCaptureMode {
        cudaStreamCaptureModeGlobal = 0,
        cudaStreamCaptureModeThreadLocal = 1,
        cudaStreamCaptureModeRelaxed = 2,
};

enum cudaStreamCaptureStatus {
        cudaStreamCaptureStatusNone = 0,
        cudaStreamCaptureStatusActive = 1,
        cudaStreamCaptureStatusInvalidated = 2,
};

enum cudaDriverEntryPointQueryResult {
        cudaDriverEntryPointSuccess = 0,
        cudaDriverEntryPointSymbolNotFound = 1,
};

constexpr unsigned cudaStreamNonBlocking = 1;
constexpr unsigned cudaEventDisableTiming = 2;
constexpr unsigned cudaHostAllocDefault = 0;
constexpr unsigned cudaHostAllocPortable = 1;
constexpr unsigned cudaHostRegisterPortable = 1;
constexpr unsigned cudaIpcMemLazyEnablePeerAccess = 1;
constexpr unsigned long long cudaEnableDefault = 0;

struct CUstream_st;
struct CUevent_st;
typedef CUstream_st *cudaStream_t;
typedef CUevent_st *cudaEvent_t;
struct CUgraph_st;
struct CUgraphExec_st;
typedef CUgraph_st *cudaGraph_t;
typedef CUgraphExec_st *cudaGraphExec_t;

struct cudaUUID_t {
        char bytes[16];
};
struct cudaIpcMemHandle_t {
        char reserved[64];
};

struct cudaDeviceProp {
        char name[256];
        cudaUUID_t uuid;
        size_t totalGlobalMem;
        int major, minor;
        int multiProcessorCount;
        int pciBusID, pciDeviceID, pciDomainID;
};

struct cudaFuncAttributes {
        int ptxVersion;
        int binaryVersion;
};

struct cudaPointerAttributes {
        cudaMemoryType type;
        int device;
        void *devicePointer;
        void *hostPointer;
};

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int device);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char *cudaGetErrorString(cudaError_t rc);
const char *cudaGetErrorName(cudaError_t rc);

cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
/* Stream-ordered: the memory at once (a queued kernel cannot use it before the call), freed
   when s's work before the free has run. */
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s);
cudaError_t cudaFreeAsync(void *p, cudaStream_t s);
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags);
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaHostRegister(void *p, size_t bytes, unsigned flags);
cudaError_t cudaHostUnregister(void *p);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p);

cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaEventCreate(cudaEvent_t *ev);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t ev);
cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t ev);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s);
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s);

/*
 * CUDA graphs by stream capture. Between begin and end, what is issued on the stream (copies,
 * memsets, launches, event records) is recorded instead of queued; cudaGraphLaunch issues the
 * recorded ops again on its stream, in order, each as its call would (counted again, a launch's
 * fault decided then). A wait for a capturing stream (cudaStreamSynchronize, cudaEventSynchronize
 * of an event recorded in the capture, an async copy of pageable memory) fails with
 * cudaErrorStreamCaptureUnsupported and invalidates the capture: cudaStreamEndCapture then
 * returns cudaErrorStreamCaptureInvalidated and no graph. Begin on a capturing stream and end on
 * one that is not fail with cudaErrorIllegalState, as the driver does. An exec owns a copy of its
 * graph's ops, so it outlives the graph; it launches on streams of the graph's device.
 */
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p);
cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned flags);
cudaError_t cudaIpcCloseMemHandle(void *p);

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned version,
                                             unsigned long long flags,
                                             cudaDriverEntryPointQueryResult *found);

/* The kernel's grid, queued on s (what `kernel<<<grid, block, 0, s>>>(args)` does). */
cudaError_t launch(cudaStream_t s, dim3 grid, dim3 block, std::function<void()> body);

int ptx_version();

/* Every kernel shares one PTX version here: the one control().ptx_version names. */
template <class F> cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, F *)
{
        a->ptxVersion = ptx_version();
        a->binaryVersion = a->ptxVersion;
        return cudaSuccess;
}

/* What a test sets before it creates an engine, and what the runtime counted. */
struct controls {
        int devices = 1; /* physical devices, 64 at most; $FAKE_CUDA_DEVICES */
        int major = 9, minor = 0;
        int ptx_version = 90;
        unsigned sms = 3;
        /* The next cudaMalloc that finds this at 1 fails (out of memory); counts down. */
        unsigned fail_malloc_at = 0;
        /* The launch that finds this at 1 fails with a sticky cudaErrorIllegalAddress. */
        unsigned fail_launch_at = 0;

        /* Counted since the last reset_counts(). */
        uint64_t launches = 0;
        uint64_t pageable_copies = 0; /* async copies to or from pageable memory */
        uint64_t pinned_copies = 0;   /* host<->device copies that DMA could do */
        uint64_t device_copies = 0;
        uint64_t ipc_opened = 0;
        uint64_t ipc_closed = 0;
        uint64_t graphs_instantiated = 0; /* cudaGraphInstantiate calls that made an exec */
        uint64_t graph_launches = 0;
        /* Execs instantiated and not yet destroyed: not a count since reset_counts(), which
           leaves it, but what is live now, so that a test sees a leak. */
        uint64_t live_graph_execs = 0;
};

controls &control();
void reset_counts();
/* Bytes of device and pinned memory allocated now, and how many allocations. */
size_t live_allocations();
/* The UUID of physical device 0. */
extern const cudaUUID_t fake_device_uuid;
/* The UUID of physical device k, and its text as nvidia-smi and CUDA_VISIBLE_DEVICES write it
   ("GPU-73696d74-2d66-616b-652d-637564613031" for device 0). */
cudaUUID_t device_uuid(int physical);
std::string device_uuid_text(int physical);
/*
 * Reads the environment again ($FAKE_CUDA_DEVICES, $FAKE_CUDA_DEVICE_MEMORY, $CUDA_VISIBLE_DEVICES,
 * $FAKE_CUDA_BAD_DEVICES, $FAKE_CUDA_FAULT_FILE), as a process starting now would:
 * control().devices from it (1 when unset), every device's sticky error cleared, the calling
 * thread's current device 0. For in-process tests, with no other thread in the runtime; what is
 * allocated stays so.
 */
void reset_devices();

} /* namespace fake_cuda */

using namespace fake_cuda;

#endif
