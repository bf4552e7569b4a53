/*
 * What the two CUDA engines share: finding the device, owning device
 * memory, and a dispatch Backend on one stream that turns every CUDA error
 * into an engine error carrying cudaGetErrorString. nvcc, or for the cuda
 * engine's tests the SIMT emulator under a stand-in runtime
 * (tests/support/fake_cuda).
 */
#ifndef SORTD_CUDA_BACKEND_CUH
#define SORTD_CUDA_BACKEND_CUH

#include <cudaTypedefs.h> /* the driver's function types only: we do not link libcuda */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "../cpu/copy.h"
#include "../cpu/pool.h"
#include "../engine_impl.h"
#include "dispatch.cuh"
#include "staging.h"

namespace sortd_cuda
{

/*
 * The staging area (staging.h): 4 slots of 8 MiB, 32 MiB pinned per engine, less for a capacity
 * whose largest transfer (capacity x 8 bytes) is smaller. 8 MiB keeps each DMA (~150 us at
 * 55 GB/s) and each copy thread's share (1 MiB, ~100 us at one core's ~10 GB/s) well above what
 * an operation costs (a cudaMemcpyAsync, an event wait, a thread's wake-up: 5-20 us). Two slots
 * would double-buffer; four let the DMA engine run three chunks ahead of a host copy that
 * stalls (its core taken by another thread), and keep four chunks of a download in flight.
 */
constexpr unsigned STAGING_SLOTS = 4;
#ifndef SORTD_STAGING_SLOT_BYTES /* the emulated engine's tests take small slots, to chunk */
#define SORTD_STAGING_SLOT_BYTES ((size_t)8 << 20)
#endif
constexpr size_t STAGING_SLOT_BYTES = SORTD_STAGING_SLOT_BYTES;
/*
 * Threads that split each chunk's host copy, the caller's included: pinned DMA moves 55 GB/s and
 * one core copies a few GB/s, so fewer would cap the staged rate. On the H200's host, u32 2^28
 * from pageable memory took 0.90 / 2.81 / 3.85 GKeys/s with 1 / 4 / 8 threads of memcpy, still
 * rising at 8 (the cap then); 16 is not measured there yet (bench/copybench times the copy alone).
 * Shares are whole pages of at least 512 KiB, so that an 8 MiB slot feeds 16 threads: below
 * that a thread's wake-up costs more than it copies. Whether each direction streams its stores
 * or uses memcpy is STREAM_UP / STREAM_DOWN (staging.h; staging_copy.h says why).
 */
constexpr unsigned COPY_THREADS = 16;
#ifndef SORTD_COPY_SHARE_MIN
#define SORTD_COPY_SHARE_MIN ((size_t)512 << 10)
#endif
constexpr size_t COPY_SHARE_MIN = SORTD_COPY_SHARE_MIN;
constexpr size_t PAGE = 4096;

class CudaBackend
{
      public:
        sortd_engine *e = nullptr;
        cudaStream_t stream = nullptr;
        int device = 0;
        unsigned sms = 1;
        cudaEvent_t marks[2] = {nullptr, nullptr}; /* bracket a sort's device work */
        cudaUUID_t uuid = {};
        PFN_cuMemGetAddressRange_v3020 address_range = nullptr; /* fetched by the first IPC open */
        StagingSlots staging = {};                              /* pinned; see STAGING_SLOTS */
        cudaEvent_t slot_done[MAX_STAGING_SLOTS] = {};          /* each slot's last DMA */
        sortd__pool *copy_threads = nullptr;
        bool pdl = false; /* programmatic dependent launch: see launch() */

        sortd_status failed = SORTD_E_DEVICE; /* the status of the last failed check */

        /* Records a failed call in e->why; true when rc is cudaSuccess. */
        bool check(cudaError_t rc, const char *what)
        {
                if (rc == cudaSuccess)
                        return true;
                failed = rc == cudaErrorMemoryAllocation ? SORTD_E_NOMEM : SORTD_E_DEVICE;
                sortd__engine_fail(e, failed, "%s: %s", what, cudaGetErrorString(rc));
                (void)cudaGetLastError(); /* clear a non-sticky error */
                if (sticky(rc) || cudaPeekAtLastError() != cudaSuccess)
                        sortd__engine_lose(e);
                return false;
        }

        /*
         * The errors the runtime documents as leaving the context unusable ("the process must be
         * terminated and relaunched"); any other that survives cudaGetLastError counts too.
         */
        static bool sticky(cudaError_t rc)
        {
                switch (rc) {
                case cudaErrorIllegalAddress:
                case cudaErrorLaunchFailure:
                case cudaErrorLaunchTimeout:
                case cudaErrorHardwareStackError:
                case cudaErrorIllegalInstruction:
                case cudaErrorMisalignedAddress:
                case cudaErrorInvalidAddressSpace:
                case cudaErrorInvalidPc:
                case cudaErrorECCUncorrectable:
                case cudaErrorAssert:
                        return true;
                default:
                        return false;
                }
        }

        /*
         * With pdl (policy.cuh: PDL, on devices and kernels of sm_90 and later), a launch may
         * begin while the kernel before it in the stream ends, hiding the launch's latency
         * behind that kernel's last blocks; each kernel waits for its predecessor first thing
         * (compat.cuh: begin_kernel), so it never reads what is not yet written.
         */
        template <class... P, class... A>
        bool launch(void (*kernel)(P...), dim3 grid, dim3 block, A... args)
        {
                return launch_with(0, kernel, grid, block, args...);
        }

        /* A launch with shared_bytes of dynamic shared memory (compat.cuh: temp_storage), over
           the 48 KiB a kernel may have unless it asks for more. */
        template <class... P, class... A>
        bool launch_with(size_t shared_bytes, void (*kernel)(P...), dim3 grid, dim3 block,
                         A... args)
        {
#if defined(SORTD_SIMT) /* tests/support/fake_cuda: the kernel on the SIMT emulator */
                (void)shared_bytes;
                (void)fake_cuda::launch(stream, grid, block, [=] { kernel(args...); });
                return check(cudaGetLastError(), "kernel launch");
#else
                cudaLaunchAttribute attr;
                cudaLaunchConfig_t cfg = {};

                if (shared_bytes &&
                    !check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                (int)shared_bytes),
                           "cudaFuncSetAttribute"))
                        return false;
                attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
                attr.val.programmaticStreamSerializationAllowed = 1;
                cfg.gridDim = grid;
                cfg.blockDim = block;
                cfg.dynamicSmemBytes = shared_bytes;
                cfg.stream = stream;
                cfg.attrs = &attr;
                cfg.numAttrs = pdl ? 1 : 0;
                return check(cudaLaunchKernelEx(&cfg, kernel, args...), "kernel launch");
#endif
        }

        bool clear(void *dev, size_t bytes)
        {
                return check(cudaMemsetAsync(dev, 0, bytes, stream), "cudaMemsetAsync");
        }

        bool to_host(void *host, const void *dev, size_t bytes)
        {
                return copy(host, dev, bytes, cudaMemcpyDeviceToHost) && wait();
        }

        bool copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
        {
                return check(cudaMemcpyAsync(dst, src, bytes, kind, stream), "cudaMemcpyAsync");
        }

        bool copy_device(void *dst, const void *src, size_t bytes)
        {
                return copy(dst, src, bytes, cudaMemcpyDeviceToDevice);
        }

        bool wait()
        {
                return check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        }

        unsigned sm_count() const
        {
                return sms;
        }

        bool mark(int i)
        {
                return check(cudaEventRecord(marks[i], stream), "cudaEventRecord");
        }

        /* After wait(): seconds from mark(0) to mark(1); 0 if not measurable. */
        double marked_seconds()
        {
                float ms = 0;

                if (cudaEventElapsedTime(&ms, marks[0], marks[1]) != cudaSuccess) {
                        (void)cudaGetLastError();
                        return 0;
                }
                return ms * 1e-3;
        }

        /* After a failed step: what was queued may still use the caller's memory; let it end. */
        void drain()
        {
                if (cudaStreamSynchronize(stream) != cudaSuccess)
                        (void)cudaGetLastError();
        }

        /*
         * *bytes = the size of the allocation that starts at p. Only the driver knows it
         * (cuMemGetAddressRange); the runtime hands out the driver's entry point, so we need not
         * link libcuda, which a machine without a GPU lacks.
         */
        bool allocation_size(void *p, size_t *bytes)
        {
                CUdeviceptr start = 0;
                CUresult r;

                if (!address_range && !find_address_range())
                        return false;
                r = address_range(&start, bytes, (CUdeviceptr)p);
                if (r == CUDA_SUCCESS)
                        return true;
                sortd__engine_fail(e, SORTD_E_DEVICE, "cuMemGetAddressRange: CUresult %d", (int)r);
                return false;
        }

        bool find_address_range()
        {
                void *fn = nullptr;
                cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;

                /* CUDA 13 deprecates cudaGetDriverEntryPoint for this call. 3020: CUDA 3.2 made
                   the 64-bit form that PFN_..._v3020 types; a version above the driver's fails. */
                if (!check(cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 3020,
                                                            cudaEnableDefault, &found),
                           "cudaGetDriverEntryPointByVersion(cuMemGetAddressRange)"))
                        return false;
                if (!fn || found != cudaDriverEntryPointSuccess) {
                        sortd__engine_fail(e, SORTD_E_DEVICE,
                                           "the CUDA driver has no cuMemGetAddressRange (%d)",
                                           (int)found);
                        return false;
                }
                address_range = (PFN_cuMemGetAddressRange_v3020)fn;
                return true;
        }

        bool alloc(void **p, size_t bytes, const char *what)
        {
                cudaError_t rc = cudaMalloc(p, bytes ? bytes : 1);

                if (rc == cudaSuccess)
                        return true;
                *p = nullptr;
                (void)cudaGetLastError();
                sortd__engine_fail(e, SORTD_E_NOMEM, "cudaMalloc of %zu bytes for %s: %s", bytes,
                                   what, cudaGetErrorString(rc));
                return false;
        }

        /*
         * Selects cfg->device, names it in e->device, makes the stream.
         * Without a usable driver or device: SORTD_E_NODEV, "no CUDA device".
         */
        sortd_status open(sortd_engine *eng, const sortd_engine_config *cfg)
        {
                int count = 0;
                cudaDeviceProp prop;
                cudaError_t rc;

                e = eng;
                device = cfg->device;
                rc = cudaGetDeviceCount(&count);
                if (rc != cudaSuccess || count == 0) {
                        (void)cudaGetLastError();
                        return sortd__engine_fail(e, SORTD_E_NODEV, "no CUDA device (%s)",
                                                  rc != cudaSuccess ? cudaGetErrorString(rc)
                                                                    : "no device found");
                }
                if (device < 0 || device >= count)
                        return sortd__engine_fail(e, SORTD_E_NODEV,
                                                  "no CUDA device %d (%d present)", device, count);
                if (!check(cudaSetDevice(device), "cudaSetDevice") ||
                    !check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties"))
                        return SORTD_E_NODEV;
                if (prop.major < 7 || (prop.major == 7 && prop.minor < 5))
                        return sortd__engine_fail(
                                e, SORTD_E_NODEV,
                                "no CUDA device: %s is sm_%d%d, sm_75 or newer needed", prop.name,
                                prop.major, prop.minor);
                sms = (unsigned)prop.multiProcessorCount;
                uuid = prop.uuid;
                e->peak_bandwidth = peak_bandwidth();
                snprintf(e->device, sizeof(e->device), "%.80s (sm_%d%d, %d SMs, %.1f GiB)",
                         prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                         prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
                if (!check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                           "cudaStreamCreate") ||
                    !check(cudaEventCreate(&marks[0]), "cudaEventCreate") ||
                    !check(cudaEventCreate(&marks[1]), "cudaEventCreate"))
                        return SORTD_E_DEVICE;
                return open_staging(cfg->capacity, cfg->threads);
        }

        /* The staging slots, their events and the copy threads for transfers of up to
           capacity x 8 bytes: COPY_THREADS at most, and no more than the configured threads
           (0: the online CPUs), which bound the engine's use of the host's cores. */
        sortd_status open_staging(size_t capacity, unsigned max_threads)
        {
                size_t largest = (capacity ? capacity : 1) * 8;
                size_t slot = largest < STAGING_SLOT_BYTES ? (largest + PAGE - 1) / PAGE * PAGE
                                                           : STAGING_SLOT_BYTES;
                unsigned threads = max_threads ? max_threads : sortd__online_cpus();

                threads = threads < COPY_THREADS ? threads : COPY_THREADS;
                int rc;

                if (!check(cudaHostAlloc((void **)&staging.mem, slot * STAGING_SLOTS,
                                         cudaHostAllocDefault),
                           "cudaHostAlloc (staging slots)"))
                        return SORTD_E_NOMEM;
                staging.slot_bytes = slot;
                staging.slots = STAGING_SLOTS;
                for (unsigned i = 0; i < STAGING_SLOTS; i++)
                        if (!check(cudaEventCreateWithFlags(&slot_done[i], cudaEventDisableTiming),
                                   "cudaEventCreate"))
                                return SORTD_E_DEVICE;
                rc = sortd__pool_create(threads, &copy_threads);
                if (rc != 0)
                        return sortd__engine_fail(e, SORTD_E_SYSTEM, "copy threads: %s",
                                                  strerror(-rc));
                return SORTD_OK;
        }

        /* Bytes/s: 2 x memory clock x bus width (double data rate, as NVIDIA
           quotes it; CUDA 13 dropped cudaDeviceProp::memoryClockRate). */
        double peak_bandwidth()
        {
                int khz = 0, bits = 0;

                if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) !=
                            cudaSuccess ||
                    cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device) !=
                            cudaSuccess) {
                        (void)cudaGetLastError();
                        return 0;
                }
                return 2.0 * khz * 1e3 * bits / 8;
        }

        /*
         * The staging slots as one pinned area of staging.slots x staging.slot_bytes for the host
         * to fill (a batch's packing, segments.h), once no DMA queued before uses any slot;
         * nullptr when the stream failed.
         */
        unsigned char *staging_area()
        {
                if (!wait())
                        return nullptr;
                for (bool &busy : staging.busy)
                        busy = false;
                return staging.mem;
        }

        /* Another thread may call a sort than the one that created us. */
        bool select()
        {
                return check(cudaSetDevice(device), "cudaSetDevice");
        }

        void close()
        {
                if (!stream) /* open() makes the events only after the stream */
                        return;
                (void)cudaSetDevice(device);
                (void)cudaStreamSynchronize(stream); /* nothing may still use the slots */
                for (cudaEvent_t &ev : marks)
                        if (ev)
                                (void)cudaEventDestroy(ev);
                for (cudaEvent_t &ev : slot_done)
                        if (ev)
                                (void)cudaEventDestroy(ev);
                if (staging.mem)
                        (void)cudaFreeHost(staging.mem);
                sortd__pool_destroy(copy_threads);
                (void)cudaStreamDestroy(stream);
                (void)cudaGetLastError();
                marks[0] = marks[1] = nullptr;
                for (cudaEvent_t &ev : slot_done)
                        ev = nullptr;
                staging = {};
                copy_threads = nullptr;
                stream = nullptr;
        }

        /* dst = src on the host, split over the copy threads, streamed or with memcpy. */
        void host_copy(void *dst, const void *src, size_t bytes, bool stream)
        {
                sortd__pool_copy(copy_threads, dst, src, bytes, COPY_SHARE_MIN, stream);
        }
};

/* StagedCopy's operations (staging.h) on a backend's stream and copy threads. */
class CudaStaging
{
      public:
        explicit CudaStaging(CudaBackend &be) : be_(be)
        {
        }

        /* Pinned or registered (portable, or with our device current): DMA-able as it is. */
        bool pinned(const void *host, size_t bytes)
        {
                return page_locked(host) && page_locked((const unsigned char *)host + bytes - 1);
        }

        bool host_copy(void *dst, const void *src, size_t bytes, Dir dir)
        {
                be_.host_copy(dst, src, bytes, streamed(dir));
                return true;
        }

        bool dma(void *dst, const void *src, size_t bytes, Dir dir)
        {
                return be_.copy(dst, src, bytes,
                                dir == Dir::to_device ? cudaMemcpyHostToDevice
                                                      : cudaMemcpyDeviceToHost);
        }

        bool record(unsigned slot)
        {
                return be_.check(cudaEventRecord(be_.slot_done[slot], be_.stream),
                                 "cudaEventRecord");
        }

        bool wait(unsigned slot)
        {
                return be_.check(cudaEventSynchronize(be_.slot_done[slot]), "cudaEventSynchronize");
        }

      private:
        CudaBackend &be_;

        static bool page_locked(const void *p)
        {
                cudaPointerAttributes a;

                if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
                        (void)cudaGetLastError();
                        return false;
                }
                return a.type == cudaMemoryTypeHost;
        }
};

/*
 * The uploads both engines start with: raw keys to keys0, values (not an argsort's, which are
 * generated) to vals0, through the staging slots unless pinned; then mark(0) starts the device
 * time that download reports (sortd_engine_last_device_seconds).
 *
 * The histogram is not counted per chunk as chunks land: it would save at most its one kernel
 * (150-220 us of a 2^28 sort's ~60 ms), cost a launch per chunk each merging every block's
 * counts with global atomics, need the dispatch to take counts made elsewhere, and move kernel
 * work before mark(0), where the device time (and its comparison with cub) would miss it.
 */
inline bool upload(CudaBackend &be, const sortd__plan *plan, const void *keys, const void *vals,
                   size_t n, void *keys0, void *vals0)
{
        CudaStaging ops(be);
        StagedCopy<CudaStaging> copy(ops, be.staging);

        return copy.upload(keys0, keys, n * plan->key_bytes) &&
               (plan->argsort || !plan->val_bytes ||
                copy.upload(vals0, vals, n * plan->val_bytes)) &&
               be.mark(0);
}

inline bool download(CudaBackend &be, const sortd__plan *plan, void *keys, void *vals, size_t n,
                     const void *keys_dev, const void *vals_dev)
{
        CudaStaging ops(be);
        StagedCopy<CudaStaging> copy(ops, be.staging);

        if (!be.mark(1) || !copy.download(keys, keys_dev, n * plan->key_bytes) ||
            (plan->val_bytes && !copy.download(vals, vals_dev, n * plan->val_bytes)) || !be.wait())
                return false;
        be.e->last_device_seconds = be.marked_seconds();
        return true;
}

/* A zeroed engine struct E (members base and be) for cfg, its backend constructed; NULL with a
   message in why when out of memory. */
template <class E>
E *engine_new(const sortd__engine_ops *ops, const sortd_engine_config *cfg, char *why,
              size_t why_len)
{
        E *c = (E *)calloc(1, sizeof(E));

        if (!c) {
                if (why_len)
                        snprintf(why, why_len, "out of memory");
                return nullptr;
        }
        new (&c->be) CudaBackend();
        c->base.ops = ops;
        c->base.capacity = cfg->capacity;
        return c;
}

/* Create's failure path: hand the engine's message to the caller. */
inline sortd_status create_failed(sortd_engine *e, sortd_status s, char *why, size_t why_len,
                                  void (*destroy)(sortd_engine *))
{
        if (why_len)
                snprintf(why, why_len, "%s", e->why);
        destroy(e);
        return s;
}

inline CallerArrays caller_arrays(const sortd__plan *plan, void *keys, void *vals, size_t n)
{
        return CallerArrays{keys, vals, n, plan->key_bytes, plan->val_bytes, plan->argsort};
}

/*
 * A sort's end: after a failed step, work queued before it may still use the caller's memory
 * (a direct DMA, a sort_device's arrays) and the staging slots; it ends before we return.
 */
inline sortd_status sort_finished(CudaBackend &be, bool ok)
{
        sortd_status s = be.failed;

        be.failed = SORTD_E_DEVICE;
        if (ok)
                return SORTD_OK;
        be.drain();
        return s; /* the status that goes with e->why */
}

/*
 * The frame of either engine's sort_device: sort() queues the sort on be's stream. The device
 * time (sortd_engine_last_device_seconds) is all of it, copies on the device included.
 */
template <class Sort> sortd_status sort_device(CudaBackend &be, size_t n, Sort sort)
{
        if (!be.select())
                return SORTD_E_DEVICE;
        if (!be.mark(0) || !sort() || !be.mark(1) || !be.wait())
                return sort_finished(be, false);
        if (n >= 2)
                be.e->last_device_seconds = be.marked_seconds();
        return SORTD_OK;
}

} /* namespace sortd_cuda */

#endif
