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
#include "stats.h"
#include "wire.h"

typedef enum sortd__request_kind {
        SORTD__REQUEST_NONE, /* no answer but the refusals */
        SORTD__REQUEST_HELLO,
        SORTD__REQUEST_STATUS,
        SORTD__REQUEST_PING,
        SORTD__REQUEST_SORT,          /* an admissible inline sort: its payload follows */
        SORTD__REQUEST_REGION_SORT,   /* a sort in registered regions (still to be found) */
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
        uint64_t max_request_bytes; /* keys + values (or indices) of one sort */
} sortd__request_limits;

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
        bool has_device; /* SORT, REGION_SORT: the client chose the device */
} sortd__request;

/*
 * Decodes the len-byte message of a frame whose payload is payload_len bytes, checks it against
 * lim, and counts it in stats (requests_total; protocol_errors, sorts_failed or rejected for
 * what it refuses). Every request but SORTD__REQUEST_SORT leaves its payload to be dropped. Region
 * ids are not looked up here: the connection's table does that.
 */
void sortd__request_decode(const uint8_t *msg, size_t len, uint64_t payload_len,
                           const sortd__request_limits *lim, sortd__stats *stats,
                           sortd__request *rq);

#endif
