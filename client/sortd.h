/*
 * libsortd: the C client of sortd, the sort service.
 *
 * A connection is a blocking Unix-socket session with one daemon. Every call waits for its
 * answer (or the connection's timeout) and returns a sortd_status; on error,
 * sortd_error_message() says why. A connection is not thread-safe: use one per thread. It
 * belongs to the process that made it: after fork(), the child makes its own, and may only
 * sortd_close() the parent's, which sends nothing (sortd_region_destroy on it would unregister
 * the parent's region).
 *
 * Data moves inline (the arrays are copied to the daemon and the results copied back into the
 * caller's buffers) or through regions, sorted in place with no copy through the socket:
 * shared memory the client and the daemon both map (sortd_region_create), or the caller's
 * device memory, which the daemon opens by CUDA IPC (sortd_region_register_cuda). Key types,
 * payloads, orders and the sort's semantics (stable, IEEE totalOrder for floats, bit ranges) are
 * those of sortd_types.h, installed alongside, whose functions (names, sizes,
 * sortd_sort_desc_check) this library also exports.
 *
 * Every call accepts a NULL connection (what a failed sortd_connect leaves): the setters,
 * sortd_get_info, sortd_interrupt and sortd_close do nothing, sortd_error_message says "no
 * connection", the others return SORTD_E_INVAL.
 *
 * After SORTD_E_IO, SORTD_E_TIMEOUT or SORTD_E_PROTOCOL the connection is broken: every later
 * call fails the same way, and only sortd_close() remains useful. SORTD_E_PROTOCOL is a reply
 * the client cannot accept, or the daemon's refusal of a request it could not make sense of,
 * or a status this library does not know (from a newer daemon); every other refusal by the
 * daemon leaves the connection usable, but one it closes the connection after (a limit such
 * as max-connections, or a request whose payload it will not read): the call returns its
 * status and reason, even when the close cut the request's sending short, and the connection
 * is broken with them, but for the replies the daemon sent before it, to requests submitted
 * earlier (sortd_submit), which sortd_receive still returns. An inline result is read into the
 * caller's buffers as it arrives: if the connection fails on the way (the message says "while the
 * sorted result arrived"), they hold part of the result and part of the input.
 */
#ifndef SORTD_CLIENT_H
#define SORTD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "sortd_counters.h"
#include "sortd_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sortd_conn sortd_conn;

typedef struct sortd_connect_options {
        const char *client_name; /* shown in the daemon's logs (64 bytes); NULL = "libsortd" */
        int timeout_ms;          /* per call; 0 = the default (60 s); -1 = wait forever */
} sortd_connect_options;

/*
 * Connects to the daemon at path (NULL: $SORTD_SOCKET, else /run/sortd/sortd.sock as root,
 * else $XDG_RUNTIME_DIR/sortd.sock) and exchanges Hello. opts may be NULL. On failure *out is
 * untouched; the error message goes to errbuf when errbuf_len > 0.
 */
sortd_status sortd_connect(const char *path, const sortd_connect_options *opts, sortd_conn **out,
                           char *errbuf, size_t errbuf_len);

/* Closes the connection. */
void sortd_close(sortd_conn *c);

/* The message of the last failed call on c; "" after a success. */
const char *sortd_error_message(const sortd_conn *c);

/* Sets the per-call timeout: ms, 0 = the default (60 s), -1 = none. */
void sortd_set_timeout(sortd_conn *c, int timeout_ms);

/*
 * Ends the call in progress on c, from a signal handler (it is async-signal-safe) or another
 * thread: the one call that may be made on c while another runs. It shuts the connection down,
 * so the call's wait ends at once, even with no timeout, and the call fails with SORTD_E_IO
 * and a message that says it was interrupted; the daemon drops the sorts it has not begun, as
 * at sortd_close. An inline sort's buffers may then hold part of the result, as after any lost
 * connection. A call whose whole reply had already arrived when the interruption came (in the
 * socket, or read) may still return it, SORTD_OK included, with its results whole. Either way
 * c is broken from then on: every later call fails with SORTD_E_IO and that message, even a
 * sortd_receive whose reply had arrived too, and sortd_region_destroy only unmaps, as on any
 * broken connection. c must stay open (not sortd_close'd) until this returns. Does nothing
 * for NULL.
 */
void sortd_interrupt(sortd_conn *c);

/*
 * Progress of the arrays a call moves through the socket: fn is called as a request's keys and
 * values go out (SORTD_PROGRESS_SENDING) and as a reply's come in (SORTD_PROGRESS_RECEIVING),
 * with the bytes moved so far of that direction's total: first with done = 0 (for a reply, as
 * soon as its header has arrived, which is when the daemon has finished the sort), then after
 * every read or write, last with done = total. Only inline sorts move arrays; other calls and
 * empty arrays call nothing. fn runs on the calling thread inside the call, and must not call
 * into c. NULL fn stops the calls.
 */
typedef enum sortd_progress_phase {
        SORTD_PROGRESS_SENDING,
        SORTD_PROGRESS_RECEIVING,
} sortd_progress_phase;

typedef void sortd_progress_fn(void *user, sortd_progress_phase phase, uint64_t done,
                               uint64_t total);

void sortd_set_progress(sortd_conn *c, sortd_progress_fn *fn, void *user);

/* Where a device the daemon was asked to serve stands. */
typedef enum sortd_device_state {
        SORTD_DEVICE_UNKNOWN = 0, /* a state this library does not know (from a newer daemon) */
        SORTD_DEVICE_SERVING = 1, /* sorts */
        SORTD_DEVICE_FAILED = 2,  /* left out at start-up: no engine, or its self-check failed */
        SORTD_DEVICE_LOST = 3,    /* failed for good while serving, and nothing replaced it */
} sortd_device_state;

/* "serving", "failed", "lost"; "unknown" for any other value. */
const char *sortd_device_state_name(sortd_device_state s);

/*
 * A GPU (or MIG instance) the daemon serves, or was asked to serve and left out. The counters
 * count from the daemon's start. sortd_device_uuid_format (sortd_types.h) prints the uuid as
 * nvidia-smi -L does.
 */
typedef struct sortd_device {
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES]; /* cudaDeviceProp::uuid */
        uint32_t ordinal;                      /* its CUDA ordinal in the daemon */
        int32_t numa_node;                     /* -1: unknown, or the machine has one node */
        char name[128];                        /* the engine's description of it */
        char pci_bus_id[32];                   /* domain:bus:device.function */
        char reason[256];                      /* how it came to serve, or why it does not */
        sortd_device_state state;
        uint32_t streams;  /* sorts it runs at once */
        uint64_t capacity; /* largest n; 0 when it does not serve */
        uint64_t sorts;    /* sorts it ran, successful or not */
        uint64_t bytes;    /* their keys and values (or indices) */
        uint64_t busy_ns;  /* time spent sorting (two sorts at once count twice) */
        uint64_t queued;   /* sorts waiting for it now */
} sortd_device;

/* The rows a sortd_info or sortd_server_status holds: room for 8 GPUs of 7 MIG instances each. */
#define SORTD_MAX_DEVICES 64

typedef struct sortd_info {
        unsigned protocol_version;
        char server_version[32];
        char engine[32];
        char device[128];
        uint64_t capacity; /* largest n */
        uint32_t max_message_bytes;
        uint64_t max_request_bytes; /* keys + values (or indices) of one sort */
        uint64_t max_inflight_bytes;
        uint32_t max_connections;
        uint64_t max_regions;      /* shared-memory regions one connection may register */
        uint64_t max_region_bytes; /* mapped for all connections together */
        /* The devices the daemon lists (none on the cpu engine): device_count of them, the
           first SORTD_MAX_DEVICES of which are in devices. */
        unsigned device_count;
        sortd_device devices[SORTD_MAX_DEVICES];
} sortd_info;

/* Sends Hello again and returns the daemon's answer. */
sortd_status sortd_hello(sortd_conn *c, sortd_info *info);

/*
 * The daemon's answer to the last Hello on c (sortd_connect's, or sortd_hello's), kept by the
 * connection: no round trip, and c is left as it was (its message too), broken or not. Does
 * nothing when info is NULL.
 */
void sortd_get_info(const sortd_conn *c, sortd_info *info);

typedef struct sortd_sort_options {
        sortd_order order;  /* SORTD_ASCENDING (0) by default */
        unsigned begin_bit; /* [begin_bit, end_bit) of the key decides the order */
        unsigned end_bit;   /* 0 = the key's width */
} sortd_sort_options;

typedef struct sortd_timings {
        uint64_t queued_ns;   /* waiting for the engine in the daemon */
        uint64_t transfer_ns; /* receiving the request in the daemon */
        uint64_t sort_ns;     /* the engine's sort */
} sortd_timings;

/* Sorts n keys of type t in place. opts may be NULL (ascending, full width). */
sortd_status sortd_sort(sortd_conn *c, void *keys, size_t n, sortd_key_type t,
                        const sortd_sort_options *opts);

/* Sorts keys in place and moves vals (n values of val_size = 4 or 8 bytes) with them. */
sortd_status sortd_sort_pairs(sortd_conn *c, void *keys, void *vals, size_t val_size, size_t n,
                              sortd_key_type t, const sortd_sort_options *opts);

/*
 * Sorts keys in place and writes the permutation into idx (idx_size = 4 or 8 bytes an index):
 * idx[i] is the input position of the key now at position i.
 */
sortd_status sortd_argsort(sortd_conn *c, void *keys, void *idx, size_t idx_size, size_t n,
                           sortd_key_type t, const sortd_sort_options *opts);

/*
 * Sorts each segment of keys (and vals, as payload says: SORTD_PAYLOAD_NONE, values moved, or
 * argsort indices within each segment written) on its own, in one request: rows of a 2-D
 * array, or CSR offsets (sortd_types.h). seg is checked before anything is sent.
 */
sortd_status sortd_sort_segments(sortd_conn *c, void *keys, void *vals, size_t n, sortd_key_type t,
                                 sortd_payload payload, const sortd_segments *seg,
                                 const sortd_sort_options *opts);

/*
 * The k first keys of each segment of keys (seg NULL: of all n), in order, with their values
 * (vals read) or indices (argsort): sortd_topk_results(seg, n, k) of them into out_keys and,
 * with a payload, out_vals, packed as sortd_types.h says. keys and vals are only read.
 * k >= a segment's length sorts it whole; k = 0 is refused (SORTD_E_INVAL).
 */
sortd_status sortd_topk(sortd_conn *c, const void *keys, const void *vals, size_t n,
                        sortd_key_type t, sortd_payload payload, const sortd_segments *seg,
                        uint64_t k, void *out_keys, void *out_vals, const sortd_sort_options *opts);

/*
 * Sorts n rows by several key columns (sortd_types.h: at most SORTD_MAX_COLUMNS, column 0
 * most significant, each its own type, order and bit range): keys[j] is column j's n keys.
 * payload SORTD_PAYLOAD_ARGSORT32 or 64 writes the permutation into vals and leaves the
 * columns as they are (np.lexsort); SORTD_PAYLOAD_NONE, VALUES32 or VALUES64 reorders every
 * column, and vals' values, in place. The columns are checked before anything is sent.
 */
sortd_status sortd_sort_columns(sortd_conn *c, const sortd_column *cols, unsigned count,
                                void *const *keys, void *vals, size_t n, sortd_payload payload);
/* Round trip with the daemon. */
sortd_status sortd_ping(sortd_conn *c);

typedef struct sortd_server_status {
        char engine[32];
        char device[128];
        uint64_t capacity, uptime_ms;
        /* connections, connections_total, requests_total, sorts_ok, ... keys_sorted: one
           uint64_t each, named and ordered as sortd_counters.h lists them */
#define SORTD_COUNTER_MEMBER_(name, field, wire_type, label) uint64_t name;
        SORTD_STATUS_COUNTERS(SORTD_COUNTER_MEMBER_)
#undef SORTD_COUNTER_MEMBER_
        /* how the engine was chosen, and its self-check's outcome */
        char engine_reason[512];
        /* as in sortd_info, with their counters as of this call */
        unsigned device_count;
        sortd_device devices[SORTD_MAX_DEVICES];
} sortd_server_status;

/* The daemon's counters (the call is not named sortd_status: that is the status type). */
sortd_status sortd_query_status(sortd_conn *c, sortd_server_status *st);

/*
 * Pipelining: sortd_submit sends a request without waiting; sortd_receive waits for the reply
 * to the oldest request submitted and not yet received, which must be passed back (replies
 * come in order). The buffers of a submitted request must stay untouched until it is
 * received. Keep the bytes submitted and not yet received moderate (a few MiB): the calls
 * block, so a daemon waiting for the client to read its replies and a client writing
 * requests would wait on each other. When the daemon refuses a request and closes (see the
 * top of this file), sortd_submit returns the refusal, and the replies it sent before, to
 * requests submitted earlier, are still received; every other call fails with the refusal.
 */
typedef struct sortd_request {
        void *keys;
        void *vals; /* values, or the permutation for argsort; NULL for keys only */
        size_t n;
        sortd_key_type key_type;
        sortd_payload payload;
        sortd_sort_options opts;
        uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES]; /* all zero: any (see below) */
        const sortd_segments *segments; /* NULL: one array of n keys (see sortd_sort_segments) */
        uint64_t k;                     /* top-k (see sortd_topk); 0: sort */
        void *out_keys, *out_vals;      /* top-k only: its results */
        /* Several key columns (sortd_sort_columns): column_count > 0 sorts by columns, whose
           keys are column_keys[j]; keys, key_type and opts are then unused */
        const sortd_column *columns;
        unsigned column_count;
        void *const *column_keys;
        /* filled in */
        uint64_t id;
        sortd_timings timings;
} sortd_request;

/*
 * device_uuid (here and in sortd_region_sort) asks for the device to sort on: the uuid of one
 * of the last Hello's devices that is serving, else the call fails with SORTD_E_INVAL and names
 * those that are. The daemon refuses it likewise when that device was lost since, or when a
 * region sort's CUDA region lies on another device. All zero: the daemon chooses. It is not in
 * sortd_sort_options, which callers fill positionally ({order, begin, end}): a member more
 * there would fail their builds under -Wextra -Werror.
 */
sortd_status sortd_submit(sortd_conn *c, sortd_request *r);
sortd_status sortd_receive(sortd_conn *c, sortd_request *r);

/*
 * sortd_submit then sortd_receive as one blocking call, under one timeout for the whole of it
 * as sortd_sort has (two calls have one timeout each); fills in r's id and timings, which
 * sortd_sort and its kin do not report. Refused while submitted requests are not yet received.
 */
sortd_status sortd_sort_request(sortd_conn *c, sortd_request *r);

/*
 * Regions (Linux): memory the daemon sorts in place, named by an id on the connection that
 * registered it, so no array crosses the socket and the sorted data is in the region when the
 * call returns. A region belongs to the connection that created it; the daemon drops it when
 * the connection closes. It is one of two kinds:
 *  - shared memory (sortd_region_create): a sealed memfd of a fixed size, mapped here and
 *    registered with the daemon, which maps it too;
 *  - device memory (sortd_region_register_cuda): a buffer in the caller's CUDA allocation,
 *    which the daemon opens by CUDA IPC and sorts on the GPU; a daemon with a GPU engine on
 *    that same device serves it. libsortd itself does not use CUDA.
 */
typedef struct sortd_region sortd_region;

/*
 * Creates a region of bytes bytes (zero-filled, page-aligned, at least 1 byte) and registers it
 * on c. On failure *out is untouched.
 */
sortd_status sortd_region_create(sortd_conn *c, size_t bytes, sortd_region **out);

/*
 * Registers the caller's device memory as a region of c: the size bytes at offset in the
 * cudaMalloc allocation that handle names, on the device that device_uuid names. On failure
 * (the daemon's refusal included: no GPU engine, another device, a handle it cannot open)
 * *out is untouched. Nothing is sent when an argument is wrong: handle, device_uuid or out
 * NULL, size 0 or above 2^63 - 1, offset + size past 2^64 - 1.
 *
 * From a device pointer p to the caller's buffer of size bytes (allocators such as PyTorch's
 * or CuPy's hand out pieces of larger allocations, and an IPC handle names a whole one):
 *   - the allocation's base: cuMemGetAddressRange(&base, NULL, (CUdeviceptr)p), or
 *     cuPointerGetAttribute with CU_POINTER_ATTRIBUTE_RANGE_START_ADDR; offset = p - base;
 *   - handle: the bytes of cudaIpcMemHandle_t from cudaIpcGetMemHandle(&h, base), which only
 *     takes a base. Memory from cudaMallocAsync pools or cuMemCreate has no such handle;
 *   - device_uuid: cudaDeviceProp::uuid.bytes of cudaGetDeviceProperties(&prop, dev), where
 *     dev is the pointer's device (cudaPointerGetAttributes(&attr, p): attr.device).
 * CUDA IPC does not cross isolated PID namespaces (containers) and is not available on WSL.
 * Free the allocation only after sortd_region_destroy. The daemon sorts on its own stream:
 * finish the work that writes the buffer (cudaStreamSynchronize) before a sort; the sorted
 * data is there when sortd_sort_in_region returns.
 */
sortd_status sortd_region_register_cuda(sortd_conn *c,
                                        const uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES],
                                        uint64_t offset, uint64_t size,
                                        const uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES],
                                        sortd_region **out);

/*
 * The region's memory in this process: NULL for NULL and for a CUDA region (device memory,
 * which only the caller's own device pointer reaches). Its size in bytes (0 for NULL).
 */
void *sortd_region_data(const sortd_region *r);
size_t sortd_region_size(const sortd_region *r);

/*
 * Unregisters r (when the connection still works), and unmaps and closes a memfd region (a
 * CUDA region's memory stays the caller's to free, after this call); NULL is accepted.
 * The region is gone in every case but two, which fail with SORTD_E_INVAL and change nothing:
 * r belongs to another connection, or submitted sorts are not yet received while their
 * replies can still come (their buffers may lie in r). On a broken connection it only unmaps (the
 * daemon drops the region when the connection closes) and returns SORTD_OK; after sortd_close(c) as
 * well, and c is not used. When the daemon refuses the unregister, its status and message are
 * returned, and the region is gone here all the same (the daemon keeps its own mapping until the
 * connection closes).
 */
sortd_status sortd_region_destroy(sortd_conn *c, sortd_region *r);

/*
 * A sort in place in regions: n keys of key_type at keys_offset in keys and, with a payload, the
 * values (or the argsort permutation, written there) at vals_offset in vals. Offsets are
 * multiples of the element size (and so is a CUDA region's offset in its allocation); both
 * spans lie inside their regions, in regions of c, and do not overlap; keys and vals are
 * regions of one kind (both memfd or both CUDA). vals may be keys; it is ignored without a
 * payload. The daemon sorts in the regions themselves: when the sort fails after the request was
 * accepted (a device error), their spans may be left partly sorted or, in a CUDA region, hold
 * the sort's scratch. A refused request changes nothing.
 */
typedef struct sortd_region_sort {
        sortd_region *keys;
        size_t keys_offset; /* bytes */
        sortd_region *vals; /* NULL without payload; may equal keys */
        size_t vals_offset; /* bytes */
        size_t n;
        sortd_key_type key_type;
        sortd_payload payload;
        sortd_sort_options opts;
        uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES]; /* all zero: any (see sortd_submit) */
        /* Segments (sortd_sort_segments), their offsets in host memory: sent with the request,
           or, with offsets_region, read by the daemon at offsets_offset in that memfd region
           (segments->offsets is then ignored, and may be NULL) */
        const sortd_segments *segments;
        sortd_region *offsets_region;
        size_t offsets_offset;
        /* Top-k (sortd_topk): k, and where its results go, in regions of the inputs' kind */
        uint64_t k;
        sortd_region *out_keys;
        size_t out_keys_offset;
        sortd_region *out_vals;
        size_t out_vals_offset;
        /* Several key columns (sortd_sort_columns): column_count > 0 sorts by columns, laid out
           at keys_offset as sortd_columns_offset says; key_type and opts are then unused */
        const sortd_column *columns;
        unsigned column_count;
        sortd_timings timings; /* filled in */
} sortd_region_sort;

/* Sorts as rs says and waits for it; *rs is checked before anything is sent. */
sortd_status sortd_sort_in_region(sortd_conn *c, sortd_region_sort *rs);

#ifdef __cplusplus
}
#endif

#endif
