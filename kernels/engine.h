/*
 * The sort engine interface: one C contract implemented by the CPU Onesweep
 * engine ("cpu") and, where built, the CUDA engines ("cuda", "cub").
 *
 * An engine is created once for a capacity (the largest n it will sort) and
 * preallocates everything a sort needs; a sort allocates nothing. One engine
 * serves one sort at a time: callers serialise their calls.
 *
 * Key types, payloads, orders, the sort descriptor, their order and bit
 * ranges: common/sortd_types.h.
 *
 * Buffers
 *   keys are sorted in place. With a value payload, vals (n values of 4 or 8
 *   bytes) move with their keys. With argsort, vals receives the permutation:
 *   vals[i] is the input position of the key now at position i (u32 or u64
 *   indices). Buffers must be aligned to their element size and must not
 *   overlap. On an error nothing is written to keys or vals, except one: a
 *   GPU engine whose device fails while it copies the result back (to host
 *   memory, in chunks) may leave them partly written.
 */
#ifndef SORTD_ENGINE_H
#define SORTD_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "sortd_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Faults injected for tests, on every engine alike (engine.c counts the calls, so the CPU
 * engine and the emulated kernels fail as a GPU would): the every-th sorting call (a sort, a
 * device sort or a batch, counted from creation, the self-check's included) fails with status
 * and a message that says it was injected. With lose_device the failure is the kind a device
 * does not come back from (a sticky CUDA error): the engine is lost from then on.
 */
typedef struct sortd_engine_faults {
        unsigned every;      /* 0: none */
        sortd_status status; /* SORTD_E_NOMEM or SORTD_E_DEVICE */
        int lose_device;     /* nonzero: the failure loses the engine (sortd_engine_lost) */
} sortd_engine_faults;

typedef struct sortd_engine_config {
        size_t capacity;  /* largest n a sort may have */
        unsigned threads; /* worker threads (CPU engine), at most that many host copy threads
                             (GPU engines, which take 16 at most); 0 = online CPUs */
        int device;       /* CUDA device ordinal (CUDA engines) */
        sortd_engine_faults faults; /* tests only; zero: none */
} sortd_engine_config;

typedef struct sortd_engine sortd_engine;

/*
 * Creates the engine named kind ("cpu", "cuda", "cub") for cfg. On failure
 * returns the error, writes a message into why (when why_len > 0) and leaves
 * *out untouched.
 */
sortd_status sortd_engine_create(const char *kind, const sortd_engine_config *cfg,
                                 sortd_engine **out, char *why, size_t why_len);

/* Sorts keys (and vals) as desc says. See the comment at the top of the file. */
sortd_status sortd_engine_sort(sortd_engine *e, const sortd_sort_desc *desc, void *keys, void *vals,
                               size_t n);

/*
 * sortd_engine_sort on keys in memory that another process may write while the sort runs (a
 * client's shared-memory region). Keys changed under it give a wrong order in the caller's
 * memory (a permutation of the keys and values as the sort read them), never an access outside
 * the buffers or another sort's bytes in them. GPU engines copy the keys to the device once in
 * any case. The CPU engine sorts them where they lie, as fast as sortd_engine_sort, and checks
 * each pass: if the keys changed during the sort, a pass runs again, or the sort starts over
 * from a copy of the keys (kernels/cpu/onesweep.c).
 */
sortd_status sortd_engine_sort_shared(sortd_engine *e, const sortd_sort_desc *desc, void *keys,
                                      void *vals, size_t n);

/*
 * Batches
 *   Many small independent sorts in one call, which an engine can spread over its threads or
 *   pack into one launch sequence. Each item is checked and sorted exactly as
 *   sortd_engine_sort would sort it alone, with its own key type, payload, order and bit
 *   range, and gets its own status and message: an item that fails its checks fails alone, and
 *   the others are sorted. Returns SORTD_OK when every item succeeded, else the first failed
 *   item's status, with sortd_engine_error naming it. Items must not share buffers, and their
 *   keys must be memory no other process writes meanwhile (see sortd_engine_sort_shared).
 */
typedef struct sortd_engine_batch_item {
        sortd_sort_desc desc;
        void *keys, *vals;
        size_t n;
        sortd_status status; /* written by the call */
        char why[256];       /* written: the item's message, "" when it succeeded */
} sortd_engine_batch_item;

sortd_status sortd_engine_sort_batch(sortd_engine *e, sortd_engine_batch_item *items, size_t count);

/*
 * Segments and top-k
 *   Where a call's keys and values lie: ordinary host memory (as sortd_engine_sort), host
 *   memory another process may write meanwhile (as sortd_engine_sort_shared), or the engine's
 *   device memory (as sortd_engine_sort_device, GPU engines only).
 */
typedef enum sortd_memory {
        SORTD_MEMORY_HOST,
        SORTD_MEMORY_SHARED,
        SORTD_MEMORY_DEVICE,
        SORTD_MEMORY_COUNT
} sortd_memory;

/*
 * Sorts each segment of keys (and vals) on its own, as desc says (sortd_types.h: segments,
 * argsort indices within their segment), in one call whatever the number of segments. seg
 * lies in host memory that nobody writes meanwhile, even for device keys (a caller copies
 * shared offsets first), and is checked here (sortd_segments_check). Fails as
 * sortd_engine_sort does, and with SORTD_E_UNSUPPORTED on an engine that has no segmented
 * sort for that memory. 128-bit keys are sorted through the key columns' steps over the
 * engine's segmented sort of their words (in device memory on the cuda engine only), and
 * their top-k the same way on copies, in a workspace allocated for the call.
 */
sortd_status sortd_engine_sort_segments(sortd_engine *e, const sortd_sort_desc *desc,
                                        const sortd_segments *seg, sortd_memory where, void *keys,
                                        void *vals, size_t n);

/*
 * Top-k of each segment (seg NULL: the whole array), sortd_types.h says which keys and how
 * they are laid out: out_keys receives sortd_topk_results(seg, n, k) keys and, with a payload,
 * out_vals as many values (vals read) or indices within the segment (argsort: vals unused, may
 * be NULL). keys and vals are only read. k >= a segment's length sorts it whole; k = 0 gives
 * nothing. The outputs lie in the same memory as the inputs, and overlap none of them.
 */
sortd_status sortd_engine_topk(sortd_engine *e, const sortd_sort_desc *desc,
                               const sortd_segments *seg, uint64_t k, sortd_memory where,
                               const void *keys, const void *vals, void *out_keys, void *out_vals,
                               size_t n);

/*
 * Keys of several columns (sortd_types.h): keys[j] is column j's n keys. With an argsort
 * payload vals receives the permutation and the columns are only read; else the columns (and
 * vals' n values) are reordered in place. Columns whose bit widths add up to at most 128 are
 * packed into one composite key (each column's order-preserving image, inverted when
 * descending, concatenated) and sorted once; wider ones are sorted by stable passes from the
 * last column to the first, carrying the permutation. path forces one of the two (tests and
 * benchmarks; PACKED fails with SORTD_E_INVAL when the columns do not fit): both give the same
 * result. 128-bit keys (u128, i128) are sorted this way by every engine, whatever the call.
 * Works in host and shared memory (which it reads once into its own workspace, allocated for
 * the call: SORTD_E_NOMEM when there is none), and on the cuda engine in its device's memory
 * (the workspace allocated there, the rows never copied to the host); the cpu and cub engines
 * give SORTD_E_UNSUPPORTED for device memory.
 */
typedef enum sortd_columns_path {
        SORTD_COLUMNS_AUTO,
        SORTD_COLUMNS_PACKED,
        SORTD_COLUMNS_CHAINED,
        SORTD_COLUMNS_PATH_COUNT
} sortd_columns_path;

sortd_status sortd_engine_sort_columns(sortd_engine *e, const sortd_column *cols, unsigned count,
                                       sortd_payload payload, sortd_columns_path path,
                                       sortd_memory where, void *const *keys, void *vals, size_t n);

/*
 * Nonzero once the engine's device has failed in a way it does not recover from (a sticky CUDA
 * error: an illegal address, a kernel that died): every sorting call fails from then on, fast,
 * with SORTD_E_DEVICE. What it still holds can be released (host_free, host_unregister,
 * ipc_close succeed without the device), then destroy it and create another.
 */
int sortd_engine_lost(const sortd_engine *e);

/* The message of the engine's last failed call; "" after a success. */
const char *sortd_engine_error(const sortd_engine *e);

const char *sortd_engine_kind(const sortd_engine *e);
/* A human-readable device description ("2 CPU threads", "NVIDIA H100 ..."). */
const char *sortd_engine_device(const sortd_engine *e);
size_t sortd_engine_capacity(const sortd_engine *e);

/*
 * The device's theoretical memory bandwidth in bytes/s: for the CUDA engines
 * 2 x memory clock x bus width / 8 (double data rate, as NVIDIA quotes it).
 * 0 when unknown (the CPU engine).
 */
double sortd_engine_peak_bandwidth(const sortd_engine *e);

/*
 * Seconds the device spent on the last sort, timed on the device (CUDA
 * events) from the end of the input's upload to the start of the result's
 * download: the sort without its host<->device copies. 0 when not measured:
 * the CPU engine, a failed sort, n < 2.
 */
double sortd_engine_last_device_seconds(const sortd_engine *e);

/*
 * Checks the engine against the CPU engine before it serves: a fixed sample
 * of every key type, payload and order, a few bit windows, and sizes from
 * under one tile to thousands of tiles (each capped at the capacity), sorted
 * by both from the same input and compared bit for bit, the small ones once
 * alone and once as a batch; then a few segmented sorts and top-k across the
 * segment size classes (an engine without them is not checked for them). The CPU engine is the
 * oracle because CI tests it on every commit; it needs no check itself.
 * Returns SORTD_OK with a one-line account in report ("self-check passed: ..."
 * or why none was needed), SORTD_E_SELFCHECK naming the first case that
 * differs, or the error that stopped a sort. Takes well under a second on a
 * GPU; it allocates host buffers for the sample and a CPU engine while it runs.
 */
sortd_status sortd_engine_selfcheck(sortd_engine *e, char *report, size_t report_len);

/*
 * Host memory
 *   A GPU engine copies pageable memory through its own pinned staging
 *   slots at a fraction of the speed it moves pinned memory, so a caller
 *   that owns the buffers it sorts should get them from the engine, or
 *   register them with it once. These calls follow the rule of every other:
 *   serialised with the engine's calls, message in sortd_engine_error.
 *
 * Allocates bytes of host memory the engine can DMA from and sort in, into
 * *out. GPU engines pin it (cudaHostAlloc, portable: usable from every
 * device); the CPU engine maps fresh pages, page-aligned (2 MiB-aligned from
 * 2 MiB up), asks for transparent huge pages and faults every page in now, so
 * the first sort pays for neither page faults nor TLB misses. The memory is
 * not zeroed on GPU engines. SORTD_E_INVAL for bytes == 0 or above
 * PTRDIFF_MAX, SORTD_E_NOMEM when the memory is not there; *out is written
 * only on success. It lives until sortd_engine_host_free, which must come
 * before sortd_engine_destroy.
 */
sortd_status sortd_engine_host_alloc(sortd_engine *e, size_t bytes, void **out);

/*
 * Releases p, from sortd_engine_host_alloc(e, bytes, ...) with the same bytes.
 * Accepts NULL. Leaves sortd_engine_error as it was, so that a caller can
 * free its buffers before it reports an earlier failure.
 */
void sortd_engine_host_free(sortd_engine *e, void *p, size_t bytes);

/*
 * Makes the caller's [p, p + bytes) as fast to sort as host_alloc'd memory
 * (cudaHostRegister, portable, on GPU engines: it pins the pages, which is
 * slow, so register once and sort many times). The CPU engine needs nothing
 * and only checks the arguments. SORTD_E_INVAL for NULL p, bytes == 0 or a
 * range that wraps; GPU engines fail with the CUDA error's text (memory
 * already registered, for one). The memory must stay mapped until
 * sortd_engine_host_unregister, which must come before sortd_engine_destroy.
 */
sortd_status sortd_engine_host_register(sortd_engine *e, void *p, size_t bytes);

/* Undoes sortd_engine_host_register(e, p, ...); p as registered. */
sortd_status sortd_engine_host_unregister(sortd_engine *e, void *p);

/*
 * Device memory
 *   GPU engines can sort data that already lives on their device: another process's
 *   allocation, exported with cudaIpcGetMemHandle and opened here. The CPU engine has no
 *   device and answers SORTD_E_UNSUPPORTED to each of these. Same rules as every other call.
 *
 * The 16 bytes of the engine's device UUID, by which another process names the device.
 */
sortd_status sortd_engine_device_uuid(sortd_engine *e, uint8_t uuid[SORTD_DEVICE_UUID_BYTES]);

/*
 * Opens the allocation another process exported (its cudaIpcMemHandle_t's bytes): *base is the
 * allocation's start in this process, *bytes its size. A handle the driver cannot open (from
 * another device or container, from this same process, or freed since) fails with the CUDA
 * error's text: SORTD_E_INVAL when the handle is at fault, SORTD_E_DEVICE otherwise. *base and
 * *bytes are written only on success. Every open needs its sortd_engine_ipc_close(e, *base),
 * before sortd_engine_destroy; a close waits for nothing (sorts are synchronous).
 */
sortd_status sortd_engine_ipc_open(sortd_engine *e,
                                   const uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES], void **base,
                                   size_t *bytes);
sortd_status sortd_engine_ipc_close(sortd_engine *e, void *base);

/*
 * sortd_engine_sort on keys and vals in the engine's device memory (an opened allocation, say):
 * the same request checks, and it returns when the sort has finished on the device. The
 * buffers serve as the sort's own scratch, so on an error after the checks their contents are
 * undefined. The engine sorts on a stream of its own and waits for no other: the work that
 * writes the buffers must have finished (cudaStreamSynchronize) before the call. 128-bit keys
 * go through the key columns' steps on the device (sortd_engine_sort_columns), on the cuda engine
 * only.
 */
sortd_status sortd_engine_sort_device(sortd_engine *e, const sortd_sort_desc *desc, void *keys,
                                      void *vals, size_t n);

/* Accepts NULL. */
void sortd_engine_destroy(sortd_engine *e);

/*
 * Devices
 *   The CUDA devices this process sees, for a caller that makes one engine per device
 *   (sortd_engine_config.device is the ordinal). Ordinals are as CUDA numbers them after
 *   CUDA_VISIBLE_DEVICES, which the driver applies; the UUID names a device across processes.
 */
typedef struct sortd_device_info {
        int ordinal;                           /* CUDA ordinal in this process */
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES]; /* cudaDeviceProp::uuid */
        char name[256];                        /* cudaDeviceProp::name */
        char pci_bus_id[32];                   /* cudaDeviceGetPCIBusId's text, "" if unknown */
        size_t total_bytes, free_bytes;        /* cudaMemGetInfo on that device; see below */
        int major, minor;                      /* compute capability */
} sortd_device_info;

/*
 * Up to max of the devices into out (out may be NULL when max is 0), and how many there are
 * into *count, which may exceed max. SORTD_OK with *count 0 when there is no driver, no device,
 * or the build has no CUDA. Another status, with why, only for a failure that is not just "no
 * device" (a driver that fails to start, say): SORTD_E_DEVICE, or SORTD_E_INVAL for NULL
 * count; *count is then untouched and out's entries undefined.
 *
 * The free memory needs each device's context: the call makes it (as cudaSetDevice does, the
 * primary context, which an engine on the device would make anyway) and gives the calling
 * thread back its current device. A device whose context cannot be made now (held exclusively
 * by another process, or lost) is listed all the same, with total_bytes from its properties
 * and free_bytes 0. Safe to call while engines sort on other threads.
 */
sortd_status sortd_devices_list(sortd_device_info *out, size_t max, size_t *count, char *why,
                                size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
