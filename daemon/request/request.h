/*
 * Requests (request.c): the message of a frame, decoded and checked, becomes what to answer:
 * a sort to admit, another request's reply, or error replies. No socket, no loop and nothing
 * that outlives the call: the fuzzer and the unit tests call it as the connection does.
 */
#ifndef SORTD_DAEMON_REQUEST_H
#define SORTD_DAEMON_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "job.h"
#include "stats.h"
#include "wire.h"

typedef enum sortd__request_kind {
        SORTD__REQUEST_NONE, /* no answer but the refusals */
        SORTD__REQUEST_HELLO,
        SORTD__REQUEST_STATUS,
        SORTD__REQUEST_PING,
        SORTD__REQUEST_SORT,          /* an admissible inline sort: its payload follows */
        SORTD__REQUEST_REGION_SORT,   /* a sort in registered regions (still to be found); its
                                         segments' offsets may follow */
        SORTD__REQUEST_REGISTER,      /* a memfd region: its fd came with the frame */
        SORTD__REQUEST_REGISTER_CUDA, /* a CUDA IPC region: no fd */
        SORTD__REQUEST_UNREGISTER,
} sortd__request_kind;

typedef struct sortd__request_refusal {
        sortd_status status;
        char why[256];
} sortd__request_refusal;

typedef struct sortd__request_limits {
        uint64_t capacity;          /* the engine's largest n */
        uint64_t max_request_bytes; /* what one sort holds in the daemon: its keys, values (or
                                       indices), offsets and top-k results */
} sortd__request_limits;

/*
 * A sort's segments and top-k, as the message says (request_segments.c). The offsets
 * themselves are not here: they follow the frame, or lie in a region, and are checked once
 * copied into the daemon (dispatch).
 */
typedef struct sortd__request_segments {
        bool on;                 /* the sort has segments */
        uint64_t count, row_len; /* sortd_segments' */
        unsigned offset_bytes;   /* 4 or 8 with offsets; 0: uniform rows */
        uint64_t offsets_bytes;  /* (count + 1) x offset_bytes */
        uint64_t offsets_region; /* a memfd region's id; 0: the offsets follow the frame */
        uint64_t offsets_offset; /* in that region */
        uint64_t k;              /* top-k; 0: sort */
        uint64_t results_max;    /* top-k: the most results the offsets may give */
        uint64_t out_region[2];  /* a region top-k's outputs: keys', values' (or indices') */
        uint64_t out_offset[2];
        /* The daemon's buffer of an inline sort, and what follows a frame, in bytes */
        uint64_t buffer_bytes, payload_bytes;
} sortd__request_segments;

/* Whether offsets follow the frame. */
static inline bool sortd__request_segments_payload(const sortd__request_segments *g)
{
        return g->on && g->offset_bytes && !g->offsets_region;
}

typedef struct sortd__request {
        uint64_t id; /* 0 when the message did not parse */
        sortd__request_kind kind;
        /* Error replies to send after the answer, in order: the request's own, then one for a
           payload sent with a request that takes none. */
        unsigned refusals;
        sortd__request_refusal refusal[2];
        char client_name[65]; /* HELLO: what the client calls itself, for the log */
        uint64_t nonce;       /* PING */
        sortd_sort_desc desc; /* SORT, REGION_SORT */
        uint64_t n;
        sortd__wire_sizes sizes;
        uint64_t region_id;                                /* REGION_SORT (the keys'), UNREGISTER */
        uint64_t vals_region_id, keys_offset, vals_offset; /* REGION_SORT */
        uint64_t region_size;                              /* REGISTER, REGISTER_CUDA */
        uint64_t region_offset;                            /* REGISTER_CUDA */
        uint8_t ipc_handle[SORTD_CUDA_IPC_HANDLE_BYTES];   /* REGISTER_CUDA */
        uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES];      /* REGISTER_CUDA; SORT and
                                                              REGION_SORT with has_device */
        bool has_device;             /* SORT, REGION_SORT: the client chose the device */
        sortd__request_segments seg; /* SORT, REGION_SORT */
        sortd__wire_columns cols;    /* SORT, REGION_SORT: a sort by key columns (count > 0) */
} sortd__request;

/*
 * Decodes the len-byte message of a frame whose payload is payload_len bytes, checks it against
 * lim, and counts it in stats (requests_total; protocol_errors, sorts_failed or rejected for
 * what it refuses). Every request but SORTD__REQUEST_SORT and a REGION_SORT's offsets leaves its
 * payload to be dropped. Region ids are not looked up here: the connection's table does that.
 */
void sortd__request_decode(const uint8_t *msg, size_t len, uint64_t payload_len,
                           const sortd__request_limits *lim, sortd__stats *stats,
                           sortd__request *rq);

/*
 * The segments and top-k of Sort s (inline or region) of rq->desc and n keys into rq->seg: their
 * form, where the offsets are, the topk_out spans' presence, and the sizes they add. SORTD_OK,
 * or the status and why of the first fault.
 */
sortd_status sortd__request_segments_check(const Sortd__Wire__Sort *s, sortd__request *rq,
                                           char *why, size_t why_len);

/*
 * A Sort s by key columns (request_columns.c), checked as sortd__wire_columns_check does, into
 * rq: its columns, its payload in rq->desc (whose key type is column 0's, for the logs: the
 * columns' buffer is sized by sortd_columns_offset, never by it), its sizes, and in rq->seg the
 * bytes the daemon holds (an inline sort's buffer: the columns, then the values or indices) and
 * reads after the frame. SORTD_OK, or the status and why of the first fault.
 */
sortd_status sortd__request_columns_check(const Sortd__Wire__Sort *s, sortd__request *rq, char *why,
                                          size_t why_len);

/* The parts of the daemon's buffer for rq's segmented or top-k sort (after its check): a region
   sort's offsets alone (region), else the keys, values, offsets and top-k results. */
void sortd__request_segments_parts(const sortd__request *rq, bool region, sortd__job_parts *p);

#endif
