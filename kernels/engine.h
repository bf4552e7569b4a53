/*
 * The sort engine interface: one C contract implemented by the CPU Onesweep
 * engine ("cpu") and, where built, the CUDA engines ("cuda", "cub").
 *
 * An engine is created once for a capacity (the largest n it will sort) and
 * preallocates everything a sort needs; a sort allocates nothing. One engine
 * serves one sort at a time: callers serialise their calls.
 *
 * Key order
 *   Unsigned keys sort by value; signed keys by value (two's complement).
 *   Float keys (f32, f64) follow IEEE 754 totalOrder:
 *     -NaN < -inf < -normal < -denormal < -0.0 < +0.0 < +denormal < +normal
 *     < +inf < +NaN
 *   NaNs are ordered by their bit patterns within each sign (a negative NaN
 *   with a larger payload sorts first). Every sort is stable, descending too:
 *   keys that compare equal keep their input order.
 *
 * Bit range
 *   [begin_bit, end_bit) selects the bits of the order-preserving unsigned
 *   image of the key (the sign bit flipped for signed keys, IEEE totalOrder
 *   image for floats) that decide the order; bits outside it are ignored
 *   (keys equal inside the range keep their input order). end_bit = 0 means
 *   the key's full width.
 *
 * Buffers
 *   keys are sorted in place. With a value payload, vals (n values of 4 or 8
 *   bytes) move with their keys. With argsort, vals receives the permutation:
 *   vals[i] is the input position of the key now at position i (u32 or u64
 *   indices). Buffers must be aligned to their element size and must not
 *   overlap. On any error nothing is written to keys or vals.
 */
#ifndef SORTD_ENGINE_H
#define SORTD_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sortd_key_type {
        SORTD_KEY_U8,
        SORTD_KEY_I8,
        SORTD_KEY_U16,
        SORTD_KEY_I16,
        SORTD_KEY_U32,
        SORTD_KEY_I32,
        SORTD_KEY_F32,
        SORTD_KEY_U64,
        SORTD_KEY_I64,
        SORTD_KEY_F64,
        SORTD_KEY_TYPE_COUNT
} sortd_key_type;

typedef enum sortd_payload {
        SORTD_PAYLOAD_NONE,      /* keys only */
        SORTD_PAYLOAD_VALUES32,  /* 4-byte values move with their keys */
        SORTD_PAYLOAD_VALUES64,  /* 8-byte values move with their keys */
        SORTD_PAYLOAD_ARGSORT32, /* vals receives the u32 permutation (n <= 2^32) */
        SORTD_PAYLOAD_ARGSORT64, /* vals receives the u64 permutation */
        SORTD_PAYLOAD_COUNT
} sortd_payload;

typedef enum sortd_order { SORTD_ASCENDING, SORTD_DESCENDING, SORTD_ORDER_COUNT } sortd_order;

typedef struct sortd_sort_desc {
        sortd_key_type key_type;
        sortd_payload payload;
        sortd_order order;
        unsigned begin_bit; /* first bit that decides the order */
        unsigned end_bit;   /* one past the last; 0 = the key's width */
} sortd_sort_desc;

typedef struct sortd_engine_config {
        size_t capacity;  /* largest n a sort may have */
        unsigned threads; /* worker threads (CPU engine); 0 = online CPUs */
        int device;       /* CUDA device ordinal (CUDA engines) */
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
 * by both from the same input and compared bit for bit. The CPU engine is the
 * oracle because CI tests it on every commit; it needs no check itself.
 * Returns SORTD_OK with a one-line account in report ("self-check passed: ..."
 * or why none was needed), SORTD_E_SELFCHECK naming the first case that
 * differs, or the error that stopped a sort. Takes well under a second on a
 * GPU; it allocates host buffers for the sample and a CPU engine while it runs.
 */
sortd_status sortd_engine_selfcheck(sortd_engine *e, char *report, size_t report_len);

/* Accepts NULL. */
void sortd_engine_destroy(sortd_engine *e);

/* Width in bytes of a key type or payload element (0 for none). */
size_t sortd_key_size(sortd_key_type t);
size_t sortd_payload_size(sortd_payload p);
const char *sortd_key_type_name(sortd_key_type t);
const char *sortd_payload_name(sortd_payload p);
/* Parses a name as printed by the *_name functions; -1 if unknown. */
int sortd_key_type_parse(const char *name);
int sortd_payload_parse(const char *name);

#ifdef __cplusplus
}
#endif

#endif
