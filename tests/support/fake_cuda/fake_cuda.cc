/* The fake CUDA runtime (cuda_runtime.h says what it models). */
#include "cuda_runtime.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <map>
#include <condition_variable>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "cudaTypedefs.h"
#include "fake_devices.h"

namespace fake_cuda
{

namespace
{

enum class Kind { device, ipc, pinned, registered };

struct Allocation {
        size_t bytes;
        Kind kind;
        int fd;     /* device memory's memfd, for IPC handles; -1 otherwise */
        int device; /* physical: the one current when it was made */
};

/* Written into a cudaIpcMemHandle_t: where another process finds the memory. The Python
   client's stand-in libcuda (tests/python/fake_cuda) writes handles in this layout too. */
struct Handle {
        char magic[8];
        int32_t pid, fd;
        uint64_t bytes;
};
constexpr char HANDLE_MAGIC[8] = {'f', 'a', 'k', 'e', 'i', 'p', 'c', '1'};
static_assert(sizeof(Handle) <= sizeof(cudaIpcMemHandle_t), "a handle fits");

/* Guards g_allocs and g_opened; fake_devices.h's calls may be made with it held. */
std::mutex g_lock;
std::map<uintptr_t, Allocation> g_allocs;
/* IPC handles open here, by (pid, fd): a handle opened again returns the same pointer and
   counts one more open, as the runtime documents ("the reference count on the handle is
   incremented by 1 and the existing device pointer is returned"). */
struct Opened {
        void *p;
        unsigned refs;
};
std::map<std::pair<int32_t, int32_t>, Opened> g_opened;
thread_local cudaError_t t_last = cudaSuccess;
/* The SIMT emulator runs one grid at a time (its scheduler's state is global): engines on
   several devices, on several host threads, take turns for their launches, in the order they
   came, as a GPU shares itself among streams. A plain mutex would let the thread that just
   let it go take it back at once, and one engine's sorts would starve the others'. */
class TurnLock
{
      public:
        void lock()
        {
                std::unique_lock<std::mutex> l(mu_);
                uint64_t mine = next_++;

                cv_.wait(l, [&] { return serving_ == mine; });
        }
        void unlock()
        {
                std::lock_guard<std::mutex> l(mu_);

                serving_++;
                cv_.notify_all();
        }

      private:
        std::mutex mu_;
        std::condition_variable cv_;
        uint64_t next_ = 0, serving_ = 0;
};
TurnLock g_launch_lock;

cudaError_t fail(cudaError_t rc)
{
        t_last = rc;
        return rc;
}

/* The allocation that holds [p, p + bytes), or nullptr. Call with g_lock held. */
const Allocation *find_locked(const void *p, size_t bytes, uintptr_t *base)
{
        uintptr_t a = (uintptr_t)p;
        auto it = g_allocs.upper_bound(a);

        if (it == g_allocs.begin())
                return nullptr;
        --it;
        if (a + bytes > it->first + it->second.bytes || a + bytes < a)
                return nullptr;
        if (base)
                *base = it->first;
        return &it->second;
}

bool is_device(const void *p, size_t bytes, int *device = nullptr)
{
        std::lock_guard<std::mutex> g(g_lock);
        const Allocation *a = find_locked(p, bytes ? bytes : 1, nullptr);

        if (!a || (a->kind != Kind::device && a->kind != Kind::ipc))
                return false;
        if (device)
                *device = a->device;
        return true;
}

bool is_page_locked(const void *p, size_t bytes)
{
        std::lock_guard<std::mutex> g(g_lock);
        const Allocation *a = find_locked(p, bytes ? bytes : 1, nullptr);

        return a && (a->kind == Kind::pinned || a->kind == Kind::registered);
}

/* Host memory no allocation of ours overlaps. */
bool is_pageable(const void *p, size_t bytes)
{
        std::lock_guard<std::mutex> g(g_lock);
        uintptr_t a = (uintptr_t)p;
        auto it = g_allocs.upper_bound(a + bytes - 1);

        if (it == g_allocs.begin())
                return true;
        --it;
        return it->first + it->second.bytes <= a;
}

void track(void *p, size_t bytes, Kind kind, int fd, int device)
{
        std::lock_guard<std::mutex> g(g_lock);

        g_allocs[(uintptr_t)p] = Allocation{bytes, kind, fd, device};
}

/* Removes the allocation of kind that starts at p; false if there is none. */
bool untrack(void *p, Kind kind, Allocation *out)
{
        std::lock_guard<std::mutex> g(g_lock);
        auto it = g_allocs.find((uintptr_t)p);

        if (it == g_allocs.end() || it->second.kind != kind)
                return false;
        *out = it->second;
        g_allocs.erase(it);
        return true;
}

size_t page_round(size_t bytes)
{
        size_t page = (size_t)sysconf(_SC_PAGESIZE);

        return (bytes + page - 1) / page * page;
}

} /* namespace */

/* What a call issues on a stream (queues its work, counts it), kept so that a captured call
   can be issued again at each launch of its graph. */
typedef std::function<cudaError_t(cudaStream_t)> Issue;

/* A stream: work queued, run in order when the host waits; on the device (physical) current
   when it was made. While it captures, issued work goes to captured instead. */
struct CUstream_st {
        std::deque<std::function<void()>> queue;
        uint64_t queued = 0, done = 0;
        int device = 0;
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        uint64_t capture_id = 0; /* of the capture under way: events recorded in it name it */
        std::vector<Issue> captured;
};

/* An event: done once its stream ran up to seq. One recorded while its stream captured waits
   for that capture instead (capture_id), which no host wait may do. */
struct CUevent_st {
        CUstream_st *stream = nullptr;
        uint64_t seq = 0;
        bool timing = true;
        int device = 0;
        CUstream_st *captured_on = nullptr;
        uint64_t capture_id = 0;
};

/* A graph and an exec: the captured calls, in order; an exec has its own copy. */
struct CUgraph_st {
        int device;
        std::vector<Issue> ops;
};
struct CUgraphExec_st {
        int device;
        std::vector<Issue> ops;
};

namespace
{

void enqueue(cudaStream_t s, std::function<void()> op)
{
        s->queue.push_back(std::move(op));
        s->queued++;
}

/* Issues a call's work on s, or records it into s's capture, to be issued at each graph launch.
   After a capture is invalidated, the runtime refuses the stream's calls until it ends. */
cudaError_t submit(cudaStream_t s, Issue issue)
{
        if (s->capture == cudaStreamCaptureStatusInvalidated)
                return fail(cudaErrorStreamCaptureInvalidated);
        if (s->capture == cudaStreamCaptureStatusActive) {
                s->captured.push_back(std::move(issue));
                return cudaSuccess;
        }
        return issue(s);
}

/* A host wait for a capturing stream: the runtime refuses it and invalidates the capture, so a
   test sees an engine that waits inside one. */
cudaError_t wait_in_capture(cudaStream_t s)
{
        s->capture = cudaStreamCaptureStatusInvalidated;
        return fail(cudaErrorStreamCaptureUnsupported);
}

/* Runs s's queue until seq; a sticky error met on the way is what the wait returns. */
cudaError_t run_until(cudaStream_t s, uint64_t seq)
{
        if (s->capture != cudaStreamCaptureStatusNone)
                return wait_in_capture(s);
        while (s->done < seq) {
                std::function<void()> op = std::move(s->queue.front());

                s->queue.pop_front();
                op();
                s->done++;
        }
        cudaError_t rc = devices::sticky(s->device);

        return rc == cudaSuccess ? cudaSuccess : fail(rc);
}

CUresult get_address_range(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
        std::lock_guard<std::mutex> g(g_lock);
        uintptr_t b = 0;
        const Allocation *a = find_locked((const void *)p, 1, &b);

        if (!a || (a->kind != Kind::device && a->kind != Kind::ipc))
                return CUDA_ERROR_NOT_FOUND;
        *base = b;
        *size = a->bytes;
        return CUDA_SUCCESS;
}

} /* namespace */

/* Declares int dev, the physical device the calling thread works on, or returns the error a
   call there meets: no device, or the device's sticky error (its context is lost). */
#define CONTEXT(dev)                                                                               \
        int dev = -1;                                                                              \
        do {                                                                                       \
                cudaError_t rc_ = devices::context(&dev);                                          \
                if (rc_ != cudaSuccess)                                                            \
                        return fail(rc_);                                                          \
        } while (0)

size_t live_allocations()
{
        std::lock_guard<std::mutex> g(g_lock);

        return g_allocs.size();
}

cudaError_t cudaGetDeviceCount(int *count)
{
        *count = devices::visible_count();
        return *count ? cudaSuccess : fail(cudaErrorNoDevice);
}

/* As CUDA 12's, it makes the device's context: one lost earlier fails it, current all the same. */
cudaError_t cudaSetDevice(int device)
{
        int k = devices::physical(device);

        if (k < 0)
                return fail(devices::visible_count() ? cudaErrorInvalidDevice : cudaErrorNoDevice);
        devices::set_current(device);
        cudaError_t rc = devices::sticky(k);

        return rc == cudaSuccess ? cudaSuccess : fail(rc);
}

cudaError_t cudaGetDevice(int *device)
{
        if (!devices::visible_count())
                return fail(cudaErrorNoDevice);
        *device = devices::current();
        return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
        int k = devices::physical(device);
        size_t free_bytes = 0;

        if (k < 0)
                return fail(cudaErrorInvalidDevice);
        memset(prop, 0, sizeof(*prop));
        snprintf(prop->name, sizeof(prop->name), "SIMT emulator %d", k);
        prop->uuid = device_uuid(k);
        devices::memory(k, &free_bytes, &prop->totalGlobalMem);
        prop->major = control().major;
        prop->minor = control().minor;
        prop->multiProcessorCount = (int)control().sms;
        prop->pciBusID = devices::pci_bus(k);
        return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int device)
{
        int k = devices::physical(device);

        if (k < 0)
                return fail(cudaErrorInvalidDevice);
        if (!id || len < 13)
                return fail(cudaErrorInvalidValue);
        snprintf(id, (size_t)len, "%04x:%02x:%02x.0", 0, devices::pci_bus(k), 0);
        return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
        CONTEXT(dev);
        devices::memory(dev, free_bytes, total_bytes);
        return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device)
{
        if (devices::physical(device) < 0)
                return fail(cudaErrorInvalidDevice);
        switch (attr) {
        case cudaDevAttrMemoryClockRate:
                *value = 2619000;
                return cudaSuccess;
        case cudaDevAttrGlobalMemoryBusWidth:
                *value = 5120;
                return cudaSuccess;
        }
        return fail(cudaErrorInvalidValue);
}

/* The calling thread's last error, or else the sticky error of its current device: a sticky
   error is its context's, so it outlives every cudaGetLastError but stays with its device. */
cudaError_t cudaPeekAtLastError()
{
        int dev = devices::physical(devices::current());

        if (t_last != cudaSuccess || dev < 0)
                return t_last;
        return devices::sticky(dev);
}

cudaError_t cudaGetLastError()
{
        cudaError_t rc = cudaPeekAtLastError();

        t_last = cudaSuccess;
        return rc;
}

const char *cudaGetErrorName(cudaError_t rc)
{
        switch (rc) {
#define NAME(x)                                                                                    \
        case x:                                                                                    \
                return #x;
                NAME(cudaSuccess)
                NAME(cudaErrorInvalidValue)
                NAME(cudaErrorMemoryAllocation)
                NAME(cudaErrorInitializationError)
                NAME(cudaErrorInsufficientDriver)
                NAME(cudaErrorLaunchFailure)
                NAME(cudaErrorLaunchTimeout)
                NAME(cudaErrorHardwareStackError)
                NAME(cudaErrorIllegalInstruction)
                NAME(cudaErrorMisalignedAddress)
                NAME(cudaErrorInvalidAddressSpace)
                NAME(cudaErrorInvalidPc)
                NAME(cudaErrorIllegalAddress)
                NAME(cudaErrorECCUncorrectable)
                NAME(cudaErrorAssert)
                NAME(cudaErrorNoDevice)
                NAME(cudaErrorInvalidDevice)
                NAME(cudaErrorDeviceUninitialized)
                NAME(cudaErrorMapBufferObjectFailed)
                NAME(cudaErrorAlreadyMapped)
                NAME(cudaErrorInvalidResourceHandle)
                NAME(cudaErrorNotReady)
                NAME(cudaErrorPeerAccessUnsupported)
                NAME(cudaErrorHostMemoryAlreadyRegistered)
                NAME(cudaErrorHostMemoryNotRegistered)
                NAME(cudaErrorIllegalState)
                NAME(cudaErrorStreamCaptureUnsupported)
                NAME(cudaErrorStreamCaptureInvalidated)
#undef NAME
        }
        return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t rc)
{
        switch (rc) {
        case cudaSuccess:
                return "no error";
        case cudaErrorMemoryAllocation:
                return "out of memory";
        case cudaErrorIllegalAddress:
                return "an illegal memory access was encountered";
        case cudaErrorDeviceUninitialized:
                return "invalid device context";
        default:
                return cudaGetErrorName(rc);
        }
}

/* Device memory is a memfd, mapped shared, so a handle can name it to another process. */
cudaError_t cudaMalloc(void **p, size_t bytes)
{
        CONTEXT(dev);
        if (devices::malloc_fails())
                return fail(cudaErrorMemoryAllocation);
        size_t len = page_round(bytes ? bytes : 1);
        if (!devices::reserve(dev, bytes ? bytes : 1))
                return fail(cudaErrorMemoryAllocation);
        int fd = memfd_create("fake-cuda-device", MFD_CLOEXEC);
        void *m;

        if (fd < 0 || ftruncate(fd, (off_t)len) != 0 ||
            (m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
                if (fd >= 0)
                        close(fd);
                devices::release(dev, bytes ? bytes : 1);
                return fail(cudaErrorMemoryAllocation);
        }
        track(m, bytes ? bytes : 1, Kind::device, fd, dev);
        *p = m;
        return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
        Allocation a;

        if (!p)
                return cudaSuccess;
        if (!untrack(p, Kind::device, &a))
                return fail(cudaErrorInvalidValue);
        munmap(p, page_round(a.bytes));
        close(a.fd);
        devices::release(a.device, a.bytes);
        return cudaSuccess;
}

cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s)
{
        CONTEXT(dev);
        if (devices::sticky(s->device) != cudaSuccess)
                return fail(devices::sticky(s->device));
        return cudaMalloc(p, bytes);
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
        CONTEXT(dev);
        if (!p)
                return cudaSuccess;
        if (!is_device(p, 1))
                return fail(cudaErrorInvalidValue);
        return submit(s, [=](cudaStream_t t) {
                enqueue(t, [=] { (void)cudaFree(p); });
                return cudaSuccess;
        });
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned)
{
        CONTEXT(dev);
        size_t len = page_round(bytes ? bytes : 1);
        void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (m == MAP_FAILED)
                return fail(cudaErrorMemoryAllocation);
        track(m, bytes ? bytes : 1, Kind::pinned, -1, dev);
        *p = m;
        return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t bytes)
{
        return cudaHostAlloc(p, bytes, cudaHostAllocDefault);
}

cudaError_t cudaFreeHost(void *p)
{
        Allocation a;

        if (!p)
                return cudaSuccess;
        if (!untrack(p, Kind::pinned, &a))
                return fail(cudaErrorInvalidValue);
        munmap(p, page_round(a.bytes));
        return cudaSuccess;
}

cudaError_t cudaHostRegister(void *p, size_t bytes, unsigned)
{
        CONTEXT(dev);
        if (!p || !bytes)
                return fail(cudaErrorInvalidValue);
        if (!is_pageable(p, bytes))
                return fail(cudaErrorHostMemoryAlreadyRegistered);
        track(p, bytes, Kind::registered, -1, dev);
        return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *p)
{
        Allocation a;

        CONTEXT(dev);
        return untrack(p, Kind::registered, &a) ? cudaSuccess
                                                : fail(cudaErrorHostMemoryNotRegistered);
}

/* The device of an allocation is the one it was made on; of other memory, the current one. */
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p)
{
        CONTEXT(dev);
        memset(a, 0, sizeof(*a));
        a->type = cudaMemoryTypeUnregistered;
        a->device = devices::current();
        {
                std::lock_guard<std::mutex> g(g_lock);
                const Allocation *al = find_locked(p, 1, nullptr);

                if (al) {
                        a->type = al->kind == Kind::device || al->kind == Kind::ipc
                                          ? cudaMemoryTypeDevice
                                          : cudaMemoryTypeHost;
                        a->device = devices::visible_of(al->device);
                }
        }
        return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned)
{
        CONTEXT(dev);
        *s = new CUstream_st();
        (*s)->device = dev;
        return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
        return cudaStreamCreateWithFlags(s, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
        /* The runtime lets queued work finish first; a capture under way is dropped. */
        s->capture = cudaStreamCaptureStatusNone;
        run_until(s, s->queued);
        delete s;
        return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
        return run_until(s, s->queued);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned flags)
{
        CONTEXT(dev);
        *ev = new CUevent_st();
        (*ev)->timing = !(flags & cudaEventDisableTiming);
        (*ev)->device = dev;
        return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *ev)
{
        return cudaEventCreateWithFlags(ev, 0);
}

cudaError_t cudaEventDestroy(cudaEvent_t ev)
{
        delete ev;
        return cudaSuccess;
}

/* The runtime refuses an event and a stream of different devices. */
cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s)
{
        CONTEXT(dev);
        if (ev->device != s->device)
                return fail(cudaErrorInvalidResourceHandle);
        bool capturing = s->capture == cudaStreamCaptureStatusActive;
        cudaError_t rc = submit(s, [](cudaStream_t t) {
                enqueue(t, [] {});
                return cudaSuccess;
        });

        if (rc != cudaSuccess)
                return rc;
        /* Recorded in a capture, it marks a point of the graph, not of this stream's queue. */
        ev->stream = capturing ? nullptr : s;
        ev->seq = capturing ? 0 : s->queued;
        ev->captured_on = capturing ? s : nullptr;
        ev->capture_id = capturing ? s->capture_id : 0;
        return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
        cudaError_t rc = devices::sticky(ev->device);

        if (rc != cudaSuccess)
                return fail(rc);
        if (ev->captured_on && ev->captured_on->capture != cudaStreamCaptureStatusNone &&
            ev->captured_on->capture_id == ev->capture_id)
                return wait_in_capture(ev->captured_on);
        return ev->stream ? run_until(ev->stream, ev->seq) : cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
        cudaError_t rc = devices::sticky(start->device);

        if (rc != cudaSuccess)
                return fail(rc);
        if (!start->timing || !end->timing)
                return fail(cudaErrorInvalidResourceHandle);
        if (!start->stream || !end->stream || start->stream->done < start->seq ||
            end->stream->done < end->seq)
                return fail(cudaErrorNotReady);
        *ms = 0.001f * (float)(end->seq - start->seq); /* a microsecond an operation */
        return cudaSuccess;
}

/* A copy out of a bad device's memory ($FAKE_CUDA_BAD_DEVICES) comes back wrong. */
void copy_out(void *dst, const void *src, size_t bytes, bool corrupt)
{
        memcpy(dst, src, bytes);
        if (corrupt)
                *(unsigned char *)dst ^= 1;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s)
{
        CONTEXT(dev);
        if (devices::sticky(s->device) != cudaSuccess)
                return fail(devices::sticky(s->device));
        if (!bytes)
                return cudaSuccess;
        bool host_dst = kind == cudaMemcpyDeviceToHost, host_src = kind == cudaMemcpyHostToDevice;

        if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToHost &&
            kind != cudaMemcpyDeviceToDevice)
                return fail(cudaErrorInvalidValue);
        int src_dev = -1;

        if ((!host_dst && !is_device(dst, bytes)) ||
            (!host_src && !is_device(src, bytes, &src_dev)) || (host_dst && is_device(dst, 1)) ||
            (host_src && is_device(src, 1)))
                return fail(cudaErrorInvalidValue);
        const void *host = host_dst ? dst : host_src ? src : nullptr;
        bool corrupt = host_dst && devices::bad(src_dev);

        if (host && !is_page_locked(host, bytes)) {
                /* Pageable: the runtime copies it through a buffer of its own, in stream order,
                   before it returns. */
                devices::count(&controls::pageable_copies);
                if (s->capture != cudaStreamCaptureStatusNone)
                        return wait_in_capture(s); /* the staging waits for the stream */
                run_until(s, s->queued);
                copy_out(dst, src, bytes, corrupt);
                return cudaSuccess;
        }
        uint64_t controls::*counter = host ? &controls::pinned_copies : &controls::device_copies;

        return submit(s, [=](cudaStream_t t) {
                devices::count(counter);
                enqueue(t, [=] { copy_out(dst, src, bytes, corrupt); });
                return cudaSuccess;
        });
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s)
{
        CONTEXT(dev);
        if (bytes && !is_device(p, bytes))
                return fail(cudaErrorInvalidValue);
        return submit(s, [=](cudaStream_t t) {
                enqueue(t, [=] { memset(p, value, bytes); });
                return cudaSuccess;
        });
}

/* A kernel runs on its stream's device, which must be the current one, as the runtime checks. */
cudaError_t launch(cudaStream_t s, dim3 grid, dim3 block, std::function<void()> body)
{
        CONTEXT(dev);
        if (s->device != dev)
                return fail(cudaErrorInvalidResourceHandle);
        if (!grid.x || !grid.y || !grid.z || !block.x)
                return fail(cudaErrorInvalidValue);
        /* Captured, the launch is made again at each graph launch, through here: counted, and
           its fault decided, then, as a replayed kernel meets the device as it is then. */
        if (s->capture != cudaStreamCaptureStatusNone)
                return submit(s, [=](cudaStream_t t) { return launch(t, grid, block, body); });
        devices::count(&controls::launches);
        bool faults = devices::launch_faults(dev);

        enqueue(s, [=] {
                if (faults || devices::sticky(dev) != cudaSuccess) {
                        /* The kernel faults: the device's context is lost from here on. */
                        devices::lose(dev, cudaErrorIllegalAddress);
                        return;
                }
                std::lock_guard<TurnLock> g(g_launch_lock);

                simt::launch(grid, block, body);
        });
        return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode)
{
        static std::atomic<uint64_t> ids{0};

        CONTEXT(dev);
        if (s->capture != cudaStreamCaptureStatusNone)
                return fail(cudaErrorIllegalState);
        s->capture = cudaStreamCaptureStatusActive;
        s->capture_id = ++ids;
        s->captured.clear();
        return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
        cudaStreamCaptureStatus was = s->capture;
        std::vector<Issue> ops = std::move(s->captured);

        if (was == cudaStreamCaptureStatusNone)
                return fail(cudaErrorIllegalState);
        s->capture = cudaStreamCaptureStatusNone;
        s->captured.clear();
        *graph = nullptr;
        if (was == cudaStreamCaptureStatusInvalidated)
                return fail(cudaErrorStreamCaptureInvalidated);
        *graph = new CUgraph_st{s->device, std::move(ops)};
        return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status)
{
        *status = s->capture;
        return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long)
{
        CONTEXT(dev);
        if (!exec || !graph)
                return fail(cudaErrorInvalidValue);
        *exec = new CUgraphExec_st{graph->device, graph->ops};
        devices::count(&controls::graphs_instantiated);
        devices::count(&controls::live_graph_execs);
        return cudaSuccess;
}

/* The exec's calls issued again on s, in order; on a capturing stream they are captured. */
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
        CONTEXT(dev);
        if (!exec)
                return fail(cudaErrorInvalidValue);
        if (exec->device != s->device || s->device != dev)
                return fail(cudaErrorInvalidResourceHandle);
        devices::count(&controls::graph_launches);
        for (const Issue &op : exec->ops) {
                cudaError_t rc = submit(s, op);

                if (rc != cudaSuccess)
                        return rc;
        }
        return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
        delete graph;
        return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
        if (!exec)
                return fail(cudaErrorInvalidValue);
        delete exec;
        devices::uncount(&controls::live_graph_execs);
        return cudaSuccess;
}

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p)
{
        Allocation a;
        Handle hd;

        CONTEXT(dev);
        {
                std::lock_guard<std::mutex> g(g_lock);
                auto it = g_allocs.find((uintptr_t)p);

                if (it == g_allocs.end() || it->second.kind != Kind::device)
                        return fail(cudaErrorInvalidValue);
                a = it->second;
        }
        memset(h, 0, sizeof(*h));
        memcpy(hd.magic, HANDLE_MAGIC, sizeof(hd.magic));
        hd.pid = (int32_t)getpid();
        hd.fd = a.fd;
        hd.bytes = a.bytes;
        memcpy(h->reserved, &hd, sizeof(hd));
        return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned)
{
        Handle hd;
        char path[64];
        struct stat st;
        void *m;
        int fd;

        CONTEXT(dev);
        memcpy(&hd, h.reserved, sizeof(hd));
        if (memcmp(hd.magic, HANDLE_MAGIC, sizeof(hd.magic)) != 0 || hd.bytes == 0)
                return fail(cudaErrorInvalidValue);
        if (hd.pid == (int32_t)getpid())
                return fail(cudaErrorDeviceUninitialized);
        {
                std::lock_guard<std::mutex> g(g_lock);
                auto it = g_opened.find({hd.pid, hd.fd});

                if (it != g_opened.end()) {
                        it->second.refs++;
                        devices::count(&controls::ipc_opened);
                        *p = it->second.p;
                        return cudaSuccess;
                }
        }
        snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)hd.pid, (int)hd.fd);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return fail(cudaErrorMapBufferObjectFailed);
        if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < hd.bytes ||
            (m = mmap(nullptr, page_round(hd.bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
                    MAP_FAILED) {
                close(fd);
                return fail(cudaErrorMapBufferObjectFailed);
        }
        close(fd);
        track(m, hd.bytes, Kind::ipc, -1, dev);
        {
                std::lock_guard<std::mutex> g(g_lock);

                g_opened[{hd.pid, hd.fd}] = Opened{m, 1};
        }
        devices::count(&controls::ipc_opened);
        *p = m;
        return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void *p)
{
        Allocation a;

        CONTEXT(dev);
        {
                std::lock_guard<std::mutex> g(g_lock);
                auto it = g_opened.begin();

                while (it != g_opened.end() && it->second.p != p)
                        ++it;
                if (it == g_opened.end())
                        return fail(cudaErrorInvalidValue);
                devices::count(&controls::ipc_closed);
                if (--it->second.refs > 0)
                        return cudaSuccess;
                g_opened.erase(it);
        }
        if (!untrack(p, Kind::ipc, &a))
                return fail(cudaErrorInvalidValue);
        munmap(p, page_round(a.bytes));
        return cudaSuccess;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned,
                                             unsigned long long,
                                             cudaDriverEntryPointQueryResult *found)
{
        if (strcmp(symbol, "cuMemGetAddressRange") != 0) {
                *fn = nullptr;
                *found = cudaDriverEntryPointSymbolNotFound;
                return cudaSuccess;
        }
        *fn = (void *)&get_address_range;
        *found = cudaDriverEntryPointSuccess;
        return cudaSuccess;
}

} /* namespace fake_cuda */
