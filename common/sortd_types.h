/*
 * sortd's vocabulary, shared by every part (engines, protocol, daemon, client) and installed
 * beside sortd.h: status codes, key types, payloads, orders, the sort descriptor, their sizes
 * and names, and the one check of a descriptor.
 *
 * Key order: unsigned keys sort by value; signed keys by value (two's complement); float keys
 * (f16, bf16, f32, f64) follow IEEE 754 totalOrder:
 *   -NaN < -inf < -normal < -denormal < -0.0 < +0.0 < +denormal < +normal < +inf < +NaN
 * NaNs are ordered by their bit patterns within each sign. Every sort is stable, descending
 * too: keys that compare equal keep their input order.
 *
 * f16 is IEEE 754 binary16 (numpy's float16, CUDA's __half); bf16 is bfloat16, the top 16 bits
 * of an f32 (torch.bfloat16, CUDA's __nv_bfloat16). u128 and i128 are 16-byte integers as a
 * little-endian machine stores them (the low 8 bytes first), aligned to 16 bytes like every
 * key to its width.
 *
 * Bit range: [begin_bit, end_bit) selects the bits of the order-preserving unsigned image of the
 * key (the sign bit flipped for signed keys, the totalOrder image for floats) that decide the
 * order; bits outside it are ignored. end_bit = 0 means the key's full width.
 */
#ifndef SORTD_TYPES_H
#define SORTD_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * CUDA IPC, as opaque bytes so that nothing but the GPU engines needs CUDA's headers: a
 * cudaIpcMemHandle_t, and a device's UUID (cudaDeviceProp::uuid, as nvidia-smi -L shows it).
 */
#define SORTD_CUDA_IPC_HANDLE_BYTES 64
#define SORTD_DEVICE_UUID_BYTES 16
/* A UUID's text, "GPU-" and 8-4-4-4-12 lower-case hex digits, with its NUL. */
#define SORTD_DEVICE_UUID_TEXT 41

typedef enum sortd_status {
        SORTD_OK = 0,
        SORTD_E_INVAL = 1,       /* a bad argument: NULL buffer, bad bit range, bad enum */
        SORTD_E_CAPACITY = 2,    /* n above the engine's capacity */
        SORTD_E_NOMEM = 3,       /* an allocation failed */
        SORTD_E_NODEV = 4,       /* the engine's device is absent (no CUDA device) */
        SORTD_E_DEVICE = 5,      /* the device reported an error */
        SORTD_E_SYSTEM = 6,      /* an OS call failed (threads, memory mapping) */
        SORTD_E_UNSUPPORTED = 7, /* valid request this engine cannot serve */
        SORTD_E_PROTOCOL = 8,    /* malformed or unexpected message */
        SORTD_E_IO = 9,          /* the connection failed or the peer went away */
        SORTD_E_TIMEOUT = 10,    /* no answer in time */
        SORTD_E_BUSY = 11,       /* a limit was reached; retry later */
        SORTD_E_SELFCHECK = 12,  /* the engine produced a wrong result */
        SORTD_E_DENIED = 13,     /* the daemon does not serve this user (allow-uid, allow-gid) */
} sortd_status;

/* A short static name of the code ("invalid argument"); never NULL. */
const char *sortd_strerror(sortd_status s);

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
        SORTD_KEY_F16,
        SORTD_KEY_BF16,
        SORTD_KEY_U128,
        SORTD_KEY_I128,
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

/* Width in bytes of a key type or payload element (0 for none or an unknown value). */
size_t sortd_key_size(sortd_key_type t);
size_t sortd_payload_size(sortd_payload p);
/* Whether the payload is a permutation the sort writes rather than values that move. */
int sortd_payload_is_argsort(sortd_payload p);
/* Names as the command line and logs spell them ("u32", "argsort64"); "?" if unknown. */
const char *sortd_key_type_name(sortd_key_type t);
const char *sortd_payload_name(sortd_payload p);
/* Parses a name as printed by the *_name functions; -1 if unknown. */
int sortd_key_type_parse(const char *name);
int sortd_payload_parse(const char *name);

/* A device's UUID as nvidia-smi -L prints a GPU's: GPU-6f1c0e2a-91d4-4b8e-a0c5-3e7d2f9b1a60. */
void sortd_device_uuid_format(const uint8_t uuid[SORTD_DEVICE_UUID_BYTES],
                              char out[SORTD_DEVICE_UUID_TEXT]);
/*
 * Parses that text, either case, with the prefix GPU- or MIG- (nvidia-smi's for a MIG
 * instance; the bytes alone name the device) or none. Returns 0, or -1 with uuid untouched.
 */
int sortd_device_uuid_parse(const char *text, uint8_t uuid[SORTD_DEVICE_UUID_BYTES]);

/*
 * The checks every sort request passes, wherever it is made (client, daemon, engine): known
 * key type, payload and order; a bit range inside the key; n within what u32 argsort indices
 * can number. Returns SORTD_OK, or SORTD_E_INVAL with a message in why (when why_len > 0).
 * Buffers, capacity and limits are the caller's to check.
 */
sortd_status sortd_sort_desc_check(const sortd_sort_desc *desc, uint64_t n, char *why,
                                   size_t why_len);

/*
 * Segments: many independent sorts laid end to end in one buffer of n keys (and values), each
 * sorted on its own, as np.sort(axis=-1) sorts the rows of a 2-D array. Either
 *  - uniform rows (offsets NULL): count rows of row_len keys each, count x row_len = n; or
 *  - CSR offsets: count + 1 offsets of offset_bytes (4 or 8) each; segment i is
 *    [offsets[i], offsets[i + 1]). They cover the keys: offsets[0] = 0, offsets[count] = n,
 *    and never decrease (empty segments are allowed). row_len is 0.
 * An argsort's indices count within their segment, as np.argsort(axis=-1) gives them.
 */
typedef struct sortd_segments {
        uint64_t count;        /* segments */
        uint64_t row_len;      /* uniform rows: keys in each; 0 with offsets */
        const void *offsets;   /* NULL: uniform rows; else count + 1 offsets, aligned to */
        unsigned offset_bytes; /* 4 (u32) or 8 (u64) with offsets; 0 for rows */
} sortd_segments;

/* Segment i's first key and its length; s checked (sortd_segments_check). */
uint64_t sortd_segment_begin(const sortd_segments *s, uint64_t i);
uint64_t sortd_segment_length(const sortd_segments *s, uint64_t i);

/*
 * The checks of segments over n keys: the form (rows or offsets, one of them), the offset
 * width and alignment, count x row_len = n without overflow, and every offset (first 0, last
 * n, never decreasing). Reads all count + 1 offsets, so memory another process may write must
 * be copied first. Returns SORTD_OK, or SORTD_E_INVAL naming the first fault in why.
 */
sortd_status sortd_segments_check(const sortd_segments *s, uint64_t n, char *why, size_t why_len);

/*
 * Top-k: the k first keys of each segment in the sort's order (ascending: the smallest,
 * descending: the largest; ties go to the lower index, so the result is what a stable sort
 * puts first), with their values or their indices within the segment. A segment of len keys
 * gives min(k, len) results, packed one segment after another: segment i's start at the sum
 * of the results of those before it (i x min(k, row_len) for uniform rows, the layout of
 * torch.topk). sortd_topk_results is how many results n keys in segments s (NULL: one segment
 * of n keys; else checked) give: 0 for k = 0.
 */
uint64_t sortd_topk_results(const sortd_segments *s, uint64_t n, uint64_t k);

/*
 * Keys of several columns: n rows ordered by column 0, ties by column 1, and so on (ORDER BY
 * a, b DESC; np.lexsort with its keys reversed), each column with its own key type, order and
 * bit range, all of n keys. The sort is stable: rows equal in every column keep their order.
 * With an argsort payload it writes the permutation and leaves the columns as they are; with
 * none or values it reorders every column (and the values) in place.
 *
 * One buffer holds them all, column after column, each starting at the previous one's end
 * rounded up to 16 bytes (padding bytes are ignored): sortd_columns_offset(c, count, n, j) is
 * column j's start in bytes, and j = count gives the buffer's size.
 */
#define SORTD_MAX_COLUMNS 8

typedef struct sortd_column {
        sortd_key_type key_type;
        sortd_order order;
        unsigned begin_bit; /* as sortd_sort_desc's */
        unsigned end_bit;   /* 0 = the key's width */
} sortd_column;

/*
 * The checks of a multi-column sort: 1 to SORTD_MAX_COLUMNS columns, each with a known key
 * type, order and a bit range inside its key; a known payload; n within what u32 argsort
 * indices number and what sortd_columns_offset can count in 64 bits. Returns SORTD_OK, or
 * SORTD_E_INVAL naming the first faulty column in why.
 */
sortd_status sortd_columns_check(const sortd_column *c, unsigned count, sortd_payload payload,
                                 uint64_t n, char *why, size_t why_len);
uint64_t sortd_columns_offset(const sortd_column *c, unsigned count, uint64_t n, unsigned j);

#ifdef __cplusplus
}
#endif

#endif
