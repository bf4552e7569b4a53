/*
 * A stand-in for the CUDA driver (libcuda.so.1) with no GPU behind it, for the Python client's
 * driver calls (python/sortd/_cuda.py). "Device memory" is host memory the test declares as
 * allocations (fake_cuda_alloc); each call is checked as the real driver would check it, and
 * counted, so a test sees which calls ran, with what, and that every context pushed was
 * popped. Only the calls _cuda.py makes are here.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_SUPPORTED 801
#define ATTR_CONTEXT 1
#define ATTR_DEVICE_ORDINAL 9
#define MAX_ALLOCS 16

struct alloc {
        uint64_t base;
        size_t size;
        int ordinal;
        int shareable;
        int memfd; /* >= 0: exported as the stand-in runtime's handles (fake_cuda_share) */
};

/* What the calls saw; the test reads it through fake_cuda_stats. */
struct fake_cuda_stats {
        int depth;            /* contexts pushed and not popped */
        int ctx_syncs;        /* cuCtxSynchronize calls */
        int stream_syncs;     /* cuStreamSynchronize calls */
        uint64_t last_stream; /* the last stream synchronised */
        int handles;          /* IPC handles made */
        int copies;           /* cuMemcpyDtoD calls */
};

/* The test's own calls, and the driver calls _cuda.py makes (argument types as it declares
   them through ctypes). */
int fake_cuda_alloc(uint64_t base, size_t size, int ordinal, int shareable);
int fake_cuda_share(uint64_t base, int memfd);
int fake_cuda_set_uuid(int dev, const unsigned char *uuid);
void fake_cuda_reset(void);
void fake_cuda_stats(struct fake_cuda_stats *out);
int cuGetErrorName(int rc, const char **name);
int cuPointerGetAttribute(void *data, int attribute, uint64_t ptr);
int cuMemGetAddressRange_v2(uint64_t *base, size_t *size, uint64_t ptr);
int cuIpcGetMemHandle(unsigned char *handle, uint64_t base);
int cuDeviceGet(int *dev, int ordinal);
int cuDeviceGetUuid_v2(unsigned char *uuid, int dev);
int cuDeviceGetUuid(unsigned char *uuid, int dev);
int cuCtxPushCurrent_v2(void *ctx);
int cuCtxPopCurrent_v2(void **ctx);
int cuCtxSynchronize(void);
int cuStreamSynchronize(void *stream);
int cuMemcpyDtoD_v2(uint64_t dst, uint64_t src, size_t bytes);

static struct alloc allocs[MAX_ALLOCS];
static int nallocs;
static struct fake_cuda_stats stats;
static unsigned char uuids[8][16];
static int uuid_set[8];

/* Declares [base, base + size) an allocation on device ordinal; shareable = 0 makes
   cuIpcGetMemHandle refuse it, as for memory from a cudaMallocAsync pool. */
int fake_cuda_alloc(uint64_t base, size_t size, int ordinal, int shareable)
{
        if (nallocs == MAX_ALLOCS)
                return -1;
        allocs[nallocs++] = (struct alloc){base, size, ordinal, shareable, -1};
        return 0;
}

static const struct alloc *find(uint64_t p);

/* The allocation at base is the memfd's whole mapping: its handles become those of the
   stand-in CUDA runtime (tests/support/fake_cuda), which sortd-emulated-cuda opens by reading
   the memfd through /proc, so a test sorts "device" memory through a daemon. */
int fake_cuda_share(uint64_t base, int memfd)
{
        struct alloc *a = (struct alloc *)find(base);

        if (!a || a->base != base || memfd < 0)
                return -1;
        a->memfd = memfd;
        return 0;
}

/* Device dev's UUID from now on: the emulated daemon's device, say. */
int fake_cuda_set_uuid(int dev, const unsigned char *uuid)
{
        if (dev < 0 || dev > 7)
                return -1;
        memcpy(uuids[dev], uuid, 16);
        uuid_set[dev] = 1;
        return 0;
}

void fake_cuda_reset(void)
{
        nallocs = 0;
        memset(&stats, 0, sizeof(stats));
        memset(uuid_set, 0, sizeof(uuid_set));
}

void fake_cuda_stats(struct fake_cuda_stats *out)
{
        *out = stats;
}

static const struct alloc *find(uint64_t p)
{
        for (int i = 0; i < nallocs; i++)
                if (p >= allocs[i].base && p - allocs[i].base < allocs[i].size)
                        return &allocs[i];
        return NULL;
}

int cuGetErrorName(int rc, const char **name)
{
        switch (rc) {
        case CUDA_SUCCESS:
                *name = "CUDA_SUCCESS";
                return CUDA_SUCCESS;
        case CUDA_ERROR_INVALID_VALUE:
                *name = "CUDA_ERROR_INVALID_VALUE";
                return CUDA_SUCCESS;
        case CUDA_ERROR_NOT_SUPPORTED:
                *name = "CUDA_ERROR_NOT_SUPPORTED";
                return CUDA_SUCCESS;
        }
        return CUDA_ERROR_INVALID_VALUE;
}

int cuPointerGetAttribute(void *data, int attribute, uint64_t ptr)
{
        const struct alloc *a = find(ptr);

        if (!a || !data)
                return CUDA_ERROR_INVALID_VALUE;
        if (attribute == ATTR_CONTEXT) {
                *(uintptr_t *)data = 0x1000 + (uintptr_t)a->ordinal; /* never a real pointer */
                return CUDA_SUCCESS;
        }
        if (attribute == ATTR_DEVICE_ORDINAL) {
                *(int *)data = a->ordinal;
                return CUDA_SUCCESS;
        }
        return CUDA_ERROR_INVALID_VALUE;
}

int cuMemGetAddressRange_v2(uint64_t *base, size_t *size, uint64_t ptr)
{
        const struct alloc *a = find(ptr);

        if (!a)
                return CUDA_ERROR_INVALID_VALUE;
        *base = a->base;
        *size = a->size;
        return CUDA_SUCCESS;
}

/* The handle names the allocation: its base, then its size, then a fill byte; or, for a shared
   one, as the stand-in runtime's do (fake_cuda.cc's Handle): "fakeipc1", this process's pid
   and the memfd (32 bits each), and the size (64 bits). */
int cuIpcGetMemHandle(unsigned char *handle, uint64_t base)
{
        const struct alloc *a = find(base);

        if (!a || a->base != base)
                return CUDA_ERROR_INVALID_VALUE;
        if (!a->shareable)
                return CUDA_ERROR_NOT_SUPPORTED;
        if (a->memfd >= 0) {
                int32_t pid = (int32_t)getpid(), fd = a->memfd;
                uint64_t size = a->size;

                memset(handle, 0, 64);
                memcpy(handle, "fakeipc1", 8);
                memcpy(handle + 8, &pid, 4);
                memcpy(handle + 12, &fd, 4);
                memcpy(handle + 16, &size, 8);
        } else {
                memset(handle, 0xcd, 64);
                memcpy(handle, &a->base, sizeof(a->base));
                memcpy(handle + 8, &a->size, sizeof(a->size));
        }
        stats.handles++;
        return CUDA_SUCCESS;
}

int cuDeviceGet(int *dev, int ordinal)
{
        if (ordinal < 0 || ordinal > 7)
                return CUDA_ERROR_INVALID_VALUE;
        *dev = ordinal;
        return CUDA_SUCCESS;
}

/* Device d's UUID: 16 bytes of 0xd0 + d. */
int cuDeviceGetUuid_v2(unsigned char *uuid, int dev)
{
        if (dev < 0 || dev > 7)
                return CUDA_ERROR_INVALID_VALUE;
        if (uuid_set[dev])
                memcpy(uuid, uuids[dev], 16);
        else
                memset(uuid, 0xd0 + dev, 16);
        return CUDA_SUCCESS;
}

int cuDeviceGetUuid(unsigned char *uuid, int dev)
{
        return cuDeviceGetUuid_v2(uuid, dev);
}

int cuCtxPushCurrent_v2(void *ctx)
{
        if ((uintptr_t)ctx < 0x1000 || (uintptr_t)ctx > 0x1007)
                return CUDA_ERROR_INVALID_VALUE; /* not a context cuPointerGetAttribute gave */
        stats.depth++;
        return CUDA_SUCCESS;
}

int cuCtxPopCurrent_v2(void **ctx)
{
        if (stats.depth == 0)
                return CUDA_ERROR_INVALID_VALUE;
        stats.depth--;
        if (ctx)
                *ctx = (void *)(uintptr_t)0x1000;
        return CUDA_SUCCESS;
}

int cuCtxSynchronize(void)
{
        if (stats.depth == 0)
                return CUDA_ERROR_INVALID_VALUE; /* no current context */
        stats.ctx_syncs++;
        return CUDA_SUCCESS;
}

int cuStreamSynchronize(void *stream)
{
        if (stats.depth == 0)
                return CUDA_ERROR_INVALID_VALUE;
        stats.stream_syncs++;
        stats.last_stream = (uint64_t)(uintptr_t)stream;
        return CUDA_SUCCESS;
}

/* Both spans inside allocations of one device, with a context current; copied at once (the
   real call may run later, which the client's cuCtxSynchronize after it covers). */
int cuMemcpyDtoD_v2(uint64_t dst, uint64_t src, size_t bytes)
{
        const struct alloc *d = find(dst), *s = find(src);

        if (stats.depth == 0 || !d || !s || d->ordinal != s->ordinal ||
            bytes > d->size - (dst - d->base) || bytes > s->size - (src - s->base))
                return CUDA_ERROR_INVALID_VALUE;
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
        stats.copies++;
        return CUDA_SUCCESS;
}
