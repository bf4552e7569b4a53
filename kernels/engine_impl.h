/*
 * What an engine implementation sees: the validated request ("plan") and the
 * operations table. Private to kernels/.
 */
#ifndef SORTD_ENGINE_IMPL_H
#define SORTD_ENGINE_IMPL_H

#include <stdbool.h>

#include "engine.h"

#ifdef __cplusplus
extern "C" {
#endif

enum sortd__key_kind { SORTD__KEY_UNSIGNED, SORTD__KEY_SIGNED, SORTD__KEY_FLOAT };

/* What the key map (keys.h) needs to know of a key type beyond its width. */
static inline enum sortd__key_kind sortd__key_kind_of(sortd_key_type t)
{
        switch (t) {
        case SORTD_KEY_I8:
        case SORTD_KEY_I16:
        case SORTD_KEY_I32:
        case SORTD_KEY_I64:
        case SORTD_KEY_I128:
                return SORTD__KEY_SIGNED;
        case SORTD_KEY_F16:
        case SORTD_KEY_BF16:
        case SORTD_KEY_F32:
        case SORTD_KEY_F64:
                return SORTD__KEY_FLOAT;
        default:
                return SORTD__KEY_UNSIGNED;
        }
}

/* A request after validation: every field is in range. */
typedef struct sortd__plan {
        unsigned key_bytes; /* 1, 2, 4, 8 or 16 */
        unsigned val_bytes; /* 0, 4 or 8 */
        bool argsort;       /* vals receives indices instead of moving */
        enum sortd__key_kind kind;
        bool descending;
        unsigned begin_bit, end_bit; /* end_bit resolved: never 0 */
        bool shared;                 /* keys another process may write meanwhile (sort_shared) */
} sortd__plan;

/* The plan of a request that sortd_sort_desc_check() accepted (shared false). */
sortd__plan sortd__plan_of(const sortd_sort_desc *d);

/* A member of a batch after its checks (n >= 2), and the item its outcome goes to. */
typedef struct sortd__batch_job {
        sortd__plan plan;
        void *keys, *vals;
        size_t n;
        sortd_engine_batch_item *item;
} sortd__batch_job;

struct sortd__column_group; /* columns/columns.h */

/*
 * The steps of a sort by key columns (columns/columns.h) that touch its rows, for the memory
 * they lie in: the host's (columns/host.c), or a GPU engine's device memory. Each fails with a
 * status and e->why; alloc returns NULL instead, and release takes what alloc gave.
 */
typedef struct sortd__columns_mem {
        const char *where;   /* "host" or "device": for messages */
        sortd_memory memory; /* HOST or DEVICE: what the engine's segmented sort is told */
        void *(*alloc)(sortd_engine *e, size_t bytes);
        void (*release)(sortd_engine *e, void *p);
        sortd_status (*copy)(sortd_engine *e, void *to, const void *from, size_t bytes);
        /* sortd__group_fill (columns.h): *differ says whether the words differ */
        sortd_status (*fill)(sortd_engine *e, const struct sortd__column_group *g, unsigned part,
                             const void *perm, unsigned perm_bytes, uint64_t *out, size_t n,
                             bool *differ);
        /* perm[i] = i */
        sortd_status (*identity)(sortd_engine *e, void *perm, unsigned perm_bytes, size_t n);
        /* out[i] = perm[i] in out_bytes (4 or 8) */
        sortd_status (*indices)(sortd_engine *e, void *out, unsigned out_bytes, const void *perm,
                                unsigned perm_bytes, size_t n);
        /* data[i] = its copy's [perm[i]], the copy taken into gather first, so memory another
           process writes meanwhile is read once */
        sortd_status (*reorder)(sortd_engine *e, void *data, unsigned bytes, const void *perm,
                                unsigned perm_bytes, void *gather, size_t n);
        /* the engine's own sort of the words: its sort, or its sort_device */
        sortd_status (*sort)(sortd_engine *e, const sortd__plan *plan, void *keys, void *vals,
                             size_t n);
        /* idx[i] (idx_bytes wide) less the first row of i's segment of seg (host memory) */
        sortd_status (*rebase)(sortd_engine *e, void *idx, unsigned idx_bytes,
                               const sortd_segments *seg, size_t n);
        /* the first min(k, length) keys (and values: val_bytes not 0) of each segment,
           packed into out_keys (and out_vals) */
        sortd_status (*take_firsts)(sortd_engine *e, const sortd_segments *seg, uint64_t k,
                                    const void *keys, unsigned key_bytes, const void *vals,
                                    unsigned val_bytes, void *out_keys, void *out_vals, size_t n);
} sortd__columns_mem;

typedef struct sortd__engine_ops {
        const char *kind;
        sortd_status (*create)(const sortd_engine_config *cfg, sortd_engine **out, char *why,
                               size_t why_len);
        /* Called only with a valid plan, n <= capacity, n >= 2, keys of at most 8 bytes (engine.c
           sorts 16-byte keys through columns/, whose passes call this with u64 keys). */
        sortd_status (*sort)(sortd_engine *e, const sortd__plan *plan, void *keys, void *vals,
                             size_t n);
        void (*destroy)(sortd_engine *e);
        /* NULL for an engine that is itself the oracle (cpu). */
        sortd_status (*selfcheck)(sortd_engine *e, char *report, size_t report_len);
        /*
         * Host memory (engine.h), called with arguments engine.c has checked: bytes in
         * [1, PTRDIFF_MAX], p not NULL. All four NULL for an engine that sorts in ordinary
         * memory (cpu): engine.c maps pages itself, and register does nothing.
         */
        sortd_status (*host_alloc)(sortd_engine *e, size_t bytes, void **out);
        void (*host_free)(sortd_engine *e, void *p, size_t bytes);
        sortd_status (*host_register)(sortd_engine *e, void *p, size_t bytes);
        sortd_status (*host_unregister)(sortd_engine *e, void *p);
        /*
         * Device memory (engine.h), all four NULL on an engine without a device (cpu). sort_device
         * is called as sort is, with device pointers; ipc_close with a base ipc_open returned.
         */
        sortd_status (*device_uuid)(sortd_engine *e, uint8_t *uuid);
        sortd_status (*ipc_open)(sortd_engine *e, const uint8_t *handle, void **base,
                                 size_t *bytes);
        sortd_status (*ipc_close)(sortd_engine *e, void *base);
        sortd_status (*sort_device)(sortd_engine *e, const sortd__plan *plan, void *keys,
                                    void *vals, size_t n);
        /*
         * Sorts count checked members and writes each one's item->status and item->why. NULL:
         * engine.c sorts them one at a time with sort.
         */
        void (*sort_batch)(sortd_engine *e, sortd__batch_job *jobs, size_t count);
        /*
         * Segments and top-k (engine.h), called with everything checked: seg valid for n,
         * n <= capacity, buffers aligned and apart, where a memory the engine has (device
         * only with device_uuid). NULL: SORTD_E_UNSUPPORTED. sort_segments sorts in place;
         * topk (k >= 1) reads keys (and vals) and writes out_keys (and out_vals).
         */
        sortd_status (*sort_segments)(sortd_engine *e, const sortd__plan *plan,
                                      const sortd_segments *seg, sortd_memory where, void *keys,
                                      void *vals, size_t n);
        sortd_status (*topk)(sortd_engine *e, const sortd__plan *plan, const sortd_segments *seg,
                             uint64_t k, sortd_memory where, const void *keys, const void *vals,
                             void *out_keys, void *out_vals, size_t n);
        /* Key columns and 16-byte keys in device memory (columns/columns.h), a GPU engine's;
           NULL: refused with SORTD_E_UNSUPPORTED. */
        const sortd__columns_mem *columns_device;
} sortd__engine_ops;

/* Every engine struct starts with this. */
struct sortd_engine {
        const sortd__engine_ops *ops;
        size_t capacity;
        double peak_bandwidth;      /* bytes/s, 0 = unknown; set by create */
        double last_device_seconds; /* set by a sort that measured it; engine.c clears */
        char device[128];
        char why[256];
        bool lost;                  /* sortd_engine_lost; set by the engine or a fault */
        char lost_why[256];         /* the failure that lost it */
        sortd_engine_faults faults; /* engine.c copies them from the config */
        unsigned long long calls;   /* sorting calls so far, for the faults */
};

/*
 * The checks and steps every sorting entry shares (engine.c), for the entries in other files
 * (engine_segments.c): sortd__engine_begin clears the message and checks the descriptor, the
 * capacity and, for n >= 1, keys and (with a payload) vals as one sort's buffers;
 * sortd__engine_sorting_call fails a lost engine's call and injects the test faults;
 * sortd__engine_sort_one writes a one-key argsort's index; sortd__engine_no_device is the
 * refusal of device memory by an engine without a device.
 */
sortd_status sortd__engine_begin(sortd_engine *e, const sortd_sort_desc *desc, const void *keys,
                                 const void *vals, size_t n, sortd__plan *p);
sortd_status sortd__engine_sorting_call(sortd_engine *e);
void sortd__engine_sort_one(const sortd__plan *p, void *vals);
sortd_status sortd__engine_no_device(sortd_engine *e);
int sortd__misaligned(const void *p, size_t align);
int sortd__overlap(const void *a, size_t alen, const void *b, size_t blen);

/* Marks e lost with its current message (engine.h: sortd_engine_lost). */
void sortd__engine_lose(sortd_engine *e);

/* Records a formatted message in e->why and returns s. */
sortd_status sortd__engine_fail(sortd_engine *e, sortd_status s, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* The selfcheck operation of the GPU engines: the sample against a cpu engine (selfcheck.c). */
sortd_status sortd__selfcheck_against_cpu(sortd_engine *e, char *report, size_t report_len);

/* The engines' operations: engine_create.c alone names them all, and selfcheck.c the cpu one,
   its oracle. */
extern const sortd__engine_ops sortd__cpu_engine_ops;
#ifdef SORTD_HAVE_CUDA
extern const sortd__engine_ops sortd__cuda_engine_ops; /* kernels/cuda/cuda_engine.cu */
extern const sortd__engine_ops sortd__cub_engine_ops;  /* kernels/cuda/cub_engine.cu */

/* sortd_devices_list from the CUDA runtime (kernels/cuda/devices.cu), its arguments checked. */
sortd_status sortd__cuda_devices_list(sortd_device_info *out, size_t max, size_t *count, char *why,
                                      size_t why_len);
#endif

#ifdef __cplusplus
}
#endif

#endif
