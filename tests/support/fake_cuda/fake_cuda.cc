/* The fake CUDA runtime (cuda_runtime.h says what it models). */
#include "cuda_runtime.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cudaTypedefs.h"

namespace fake_cuda
{

const cudaUUID_t fake_device_uuid = {
        {'s', 'i', 'm', 't', '-', 'f', 'a', 'k', 'e', '-', 'c', 'u', 'd', 'a', '0', '1'}};

namespace
{

enum class Kind { device, ipc, pinned, registered };

struct Allocation {
        size_t bytes;
        Kind kind;
        int fd; /* device memory's memfd, for IPC handles; -1 otherwise */
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

controls g_controls;
std::mutex g_lock; /* guards g_allocs and g_opened */
std::map<uintptr_t, Allocation> g_allocs;
/* IPC handles open here, by (pid, fd): a handle opened again returns the same pointer and
   counts one more open, as the runtime documents ("the reference count on the handle is
   incremented by 1 and the existing device pointer is returned"). */
struct Opened {
        void *p;
        unsigned refs;
};
std::map<std::pair<int32_t, int32_t>, Opened> g_opened;
/* A sticky error ends the context: every call returns it from then on. */
cudaError_t g_sticky = cudaSuccess;
thread_local cudaError_t t_last = cudaSuccess;
int g_current_device = 0;

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

bool is_device(const void *p, size_t bytes)
{
        std::lock_guard<std::mutex> g(g_lock);
        const Allocation *a = find_locked(p, bytes ? bytes : 1, nullptr);

        return a && (a->kind == Kind::device || a->kind == Kind::ipc);
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

void track(void *p, size_t bytes, Kind kind, int fd)
{
        std::lock_guard<std::mutex> g(g_lock);

        g_allocs[(uintptr_t)p] = Allocation{bytes, kind, fd};
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

/* A stream: work queued, run in order when the host waits. */
struct CUstream_st {
        std::deque<std::function<void()>> queue;
        uint64_t queued = 0, done = 0;
};

/* An event: done once its stream ran up to seq. */
struct CUevent_st {
        CUstream_st *stream = nullptr;
        uint64_t seq = 0;
        bool timing = true;
};

namespace
{

void enqueue(cudaStream_t s, std::function<void()> op)
{
        s->queue.push_back(std::move(op));
        s->queued++;
}

/* Runs s's queue until seq; a sticky error met on the way is what the wait returns. */
cudaError_t run_until(cudaStream_t s, uint64_t seq)
{
        while (s->done < seq) {
                std::function<void()> op = std::move(s->queue.front());

                s->queue.pop_front();
                op();
                s->done++;
        }
        return g_sticky == cudaSuccess ? cudaSuccess : fail(g_sticky);
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

#define STICKY()                                                                                   \
        do {                                                                                       \
                if (g_sticky != cudaSuccess)                                                       \
                        return fail(g_sticky);                                                     \
        } while (0)

controls &control()
{
        return g_controls;
}

void reset_counts()
{
        controls c = g_controls;

        g_controls = controls();
        g_controls.devices = c.devices;
        g_controls.major = c.major;
        g_controls.minor = c.minor;
        g_controls.ptx_version = c.ptx_version;
        g_controls.sms = c.sms;
}

size_t live_allocations()
{
        std::lock_guard<std::mutex> g(g_lock);

        return g_allocs.size();
}

int ptx_version()
{
        return g_controls.ptx_version;
}

cudaError_t cudaGetDeviceCount(int *count)
{
        *count = g_controls.devices;
        return g_controls.devices ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int device)
{
        STICKY();
        if (device < 0 || device >= g_controls.devices)
                return fail(cudaErrorInvalidDevice);
        g_current_device = device;
        return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
        if (device < 0 || device >= g_controls.devices)
                return fail(cudaErrorInvalidDevice);
        memset(prop, 0, sizeof(*prop));
        snprintf(prop->name, sizeof(prop->name), "SIMT emulator");
        prop->uuid = fake_device_uuid;
        prop->totalGlobalMem = (size_t)1 << 30;
        prop->major = g_controls.major;
        prop->minor = g_controls.minor;
        prop->multiProcessorCount = (int)g_controls.sms;
        return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device)
{
        if (device < 0 || device >= g_controls.devices)
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

cudaError_t cudaGetLastError()
{
        cudaError_t rc = t_last;

        t_last = g_sticky;
        return rc;
}

cudaError_t cudaPeekAtLastError()
{
        return t_last;
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
        STICKY();
        if (g_controls.fail_malloc_at && --g_controls.fail_malloc_at == 0)
                return fail(cudaErrorMemoryAllocation);
        size_t len = page_round(bytes ? bytes : 1);
        int fd = memfd_create("fake-cuda-device", MFD_CLOEXEC);
        void *m;

        if (fd < 0)
                return fail(cudaErrorMemoryAllocation);
        if (ftruncate(fd, (off_t)len) != 0 ||
            (m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
                close(fd);
                return fail(cudaErrorMemoryAllocation);
        }
        track(m, bytes ? bytes : 1, Kind::device, fd);
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
        return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned)
{
        STICKY();
        size_t len = page_round(bytes ? bytes : 1);
        void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (m == MAP_FAILED)
                return fail(cudaErrorMemoryAllocation);
        track(m, bytes ? bytes : 1, Kind::pinned, -1);
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
        STICKY();
        if (!p || !bytes)
                return fail(cudaErrorInvalidValue);
        if (!is_pageable(p, bytes))
                return fail(cudaErrorHostMemoryAlreadyRegistered);
        track(p, bytes, Kind::registered, -1);
        return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *p)
{
        Allocation a;

        STICKY();
        return untrack(p, Kind::registered, &a) ? cudaSuccess
                                                : fail(cudaErrorHostMemoryNotRegistered);
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p)
{
        STICKY();
        memset(a, 0, sizeof(*a));
        a->type = is_device(p, 1)        ? cudaMemoryTypeDevice
                  : is_page_locked(p, 1) ? cudaMemoryTypeHost
                                         : cudaMemoryTypeUnregistered;
        a->device = g_current_device;
        return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned)
{
        STICKY();
        *s = new CUstream_st();
        return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
        return cudaStreamCreateWithFlags(s, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
        /* The runtime lets queued work finish first. */
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
        STICKY();
        *ev = new CUevent_st();
        (*ev)->timing = !(flags & cudaEventDisableTiming);
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

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s)
{
        STICKY();
        enqueue(s, [] {});
        ev->stream = s;
        ev->seq = s->queued;
        return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
        STICKY();
        return ev->stream ? run_until(ev->stream, ev->seq) : cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
        STICKY();
        if (!start->timing || !end->timing)
                return fail(cudaErrorInvalidResourceHandle);
        if (!start->stream || !end->stream || start->stream->done < start->seq ||
            end->stream->done < end->seq)
                return fail(cudaErrorNotReady);
        *ms = 0.001f * (float)(end->seq - start->seq); /* a microsecond an operation */
        return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s)
{
        STICKY();
        if (!bytes)
                return cudaSuccess;
        bool host_dst = kind == cudaMemcpyDeviceToHost, host_src = kind == cudaMemcpyHostToDevice;

        if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToHost &&
            kind != cudaMemcpyDeviceToDevice)
                return fail(cudaErrorInvalidValue);
        if ((!host_dst && !is_device(dst, bytes)) || (!host_src && !is_device(src, bytes)) ||
            (host_dst && is_device(dst, 1)) || (host_src && is_device(src, 1)))
                return fail(cudaErrorInvalidValue);
        const void *host = host_dst ? dst : host_src ? src : nullptr;

        if (host && !is_page_locked(host, bytes)) {
                /* Pageable: the runtime copies it through a buffer of its own, in stream order,
                   before it returns. */
                g_controls.pageable_copies++;
                run_until(s, s->queued);
                memcpy(dst, src, bytes);
                return cudaSuccess;
        }
        if (host)
                g_controls.pinned_copies++;
        else
                g_controls.device_copies++;
        enqueue(s, [=] { memcpy(dst, src, bytes); });
        return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s)
{
        STICKY();
        if (bytes && !is_device(p, bytes))
                return fail(cudaErrorInvalidValue);
        enqueue(s, [=] { memset(p, value, bytes); });
        return cudaSuccess;
}

/* FAKE_CUDA_FAULT_FILE names a file whose existence makes every launch fault: how a test
   makes a device fail under a daemon it runs in another process. */
static bool fault_file_exists()
{
        static const char *path = getenv("FAKE_CUDA_FAULT_FILE");

        return path && *path && access(path, F_OK) == 0;
}

cudaError_t launch(cudaStream_t s, dim3 grid, dim3 block, std::function<void()> body)
{
        STICKY();
        if (!grid.x || !grid.y || !grid.z || !block.x)
                return fail(cudaErrorInvalidValue);
        g_controls.launches++;
        bool faults = (g_controls.fail_launch_at && --g_controls.fail_launch_at == 0) ||
                      fault_file_exists();

        enqueue(s, [=] {
                if (faults || g_sticky != cudaSuccess) {
                        /* The kernel faults: the context is lost from here on. */
                        g_sticky = cudaErrorIllegalAddress;
                        return;
                }
                simt::launch(grid, block, body);
        });
        return cudaSuccess;
}

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p)
{
        Allocation a;
        Handle hd;

        STICKY();
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

        STICKY();
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
                        g_controls.ipc_opened++;
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
        track(m, hd.bytes, Kind::ipc, -1);
        {
                std::lock_guard<std::mutex> g(g_lock);

                g_opened[{hd.pid, hd.fd}] = Opened{m, 1};
        }
        g_controls.ipc_opened++;
        *p = m;
        return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void *p)
{
        Allocation a;

        STICKY();
        {
                std::lock_guard<std::mutex> g(g_lock);
                auto it = g_opened.begin();

                while (it != g_opened.end() && it->second.p != p)
                        ++it;
                if (it == g_opened.end())
                        return fail(cudaErrorInvalidValue);
                g_controls.ipc_closed++;
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
