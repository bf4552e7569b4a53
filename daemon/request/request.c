/*
 * Request decoding and checks (see request.h). protobuf-c's unpack has no limit of its own:
 * the frame reader has capped the message at SORTD__WIRE_MAX_MESSAGE before any byte of it
 * was read.
 */
#include <stdarg.h>
#include <string.h>
#include <stdio.h>

#include "request.h"
#include "sortd_version.h"

static void refuse(sortd__request *rq, sortd_status s, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void refuse(sortd__request *rq, sortd_status s, const char *fmt, ...)
{
        sortd__request_refusal *f = &rq->refusal[rq->refusals++];
        va_list ap;

        f->status = s;
        va_start(ap, fmt);
        vsnprintf(f->why, sizeof(f->why), fmt, ap);
        va_end(ap);
}

/* The name goes into the log: a control byte in it must not forge or break a log line. */
static void printable_name(const char *name, char *out, size_t len)
{
        size_t i = 0;

        for (; name[i] && i + 1 < len; i++)
                out[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
        out[i] = '\0';
}

static void check_hello(const Sortd__Wire__Hello *hello, sortd__request *rq)
{
        if (hello->protocol_version != SORTD__WIRE_VERSION) {
                refuse(rq, SORTD_E_PROTOCOL,
                       "client speaks protocol version %u, sortd %s speaks version %u",
                       hello->protocol_version, SORTD_VERSION_STRING, SORTD__WIRE_VERSION);
                return;
        }
        if (hello->client_name)
                printable_name(hello->client_name, rq->client_name, sizeof(rq->client_name));
        rq->kind = SORTD__REQUEST_HELLO;
}

/* Region sorts take no request buffer but their offsets' copy, and no payload but offsets. */
static void check_region_sort(const Sortd__Wire__RegionData *r, uint64_t payload_len,
                              const sortd__request_limits *lim, sortd__stats *stats,
                              sortd__request *rq)
{
        const sortd__request_segments *g = &rq->seg;

        if (g->buffer_bytes > lim->max_request_bytes) {
                stats->rejected++;
                refuse(rq, SORTD_E_CAPACITY, "offsets of %llu bytes above max-request-bytes %llu",
                       (unsigned long long)g->buffer_bytes,
                       (unsigned long long)lim->max_request_bytes);
                return;
        }
        if (payload_len != g->payload_bytes) {
                stats->protocol_errors++;
                stats->sorts_failed++; /* a sort request too: it ends here, refused */
                if (g->payload_bytes)
                        refuse(rq, SORTD_E_PROTOCOL,
                               "a region sort's payload is its %llu offsets of %u bytes, %llu "
                               "bytes (%llu came)",
                               (unsigned long long)g->count + 1, g->offset_bytes,
                               (unsigned long long)g->payload_bytes,
                               (unsigned long long)payload_len);
                else
                        refuse(rq, SORTD_E_PROTOCOL,
                               "a region sort takes no payload (%llu bytes came)",
                               (unsigned long long)payload_len);
                return;
        }
        rq->kind = SORTD__REQUEST_REGION_SORT;
        rq->region_id = r->region_id;
        rq->vals_region_id = r->vals_region_id ? r->vals_region_id : r->region_id;
        rq->keys_offset = r->keys_offset;
        rq->vals_offset = r->vals_offset;
}

/* An inline sort's payload: keys, values unless argsort, then any offsets. */
static void refuse_payload(const Sortd__Wire__Sort *s, uint64_t payload_len, sortd__stats *stats,
                           sortd__request *rq)
{
        const sortd__request_segments *g = &rq->seg;
        char offsets[64] = "";

        stats->protocol_errors++;
        stats->sorts_failed++; /* a sort request too: it ends here, refused */
        if (sortd__request_segments_payload(g))
                snprintf(offsets, sizeof(offsets), " and %llu offsets of %u bytes",
                         (unsigned long long)g->count + 1, g->offset_bytes);
        if (rq->cols.count) {
                refuse(rq, SORTD_E_INVAL,
                       "payload of %llu bytes, but %llu rows of %u key columns (laid out as "
                       "sortd_columns_offset says) with payload %s need %llu",
                       (unsigned long long)payload_len, (unsigned long long)s->n, rq->cols.count,
                       sortd_payload_name(rq->desc.payload), (unsigned long long)g->payload_bytes);
                return;
        }
        refuse(rq, SORTD_E_INVAL,
               "payload of %llu bytes, but %llu %s keys with payload %s%s need %llu",
               (unsigned long long)payload_len, (unsigned long long)s->n,
               sortd_key_type_name(rq->desc.key_type), sortd_payload_name(rq->desc.payload),
               offsets, (unsigned long long)g->payload_bytes);
}

/* The CUDA IPC fields are bytes of fixed lengths; the buffer must not wrap the address space. */
static void check_register_cuda(const Sortd__Wire__RegisterRegion *r, sortd__request *rq)
{
        if (r->cuda_ipc_handle.len != SORTD_CUDA_IPC_HANDLE_BYTES) {
                refuse(rq, SORTD_E_INVAL, "cuda_ipc_handle has %zu bytes, a cudaIpcMemHandle_t %d",
                       r->cuda_ipc_handle.len, SORTD_CUDA_IPC_HANDLE_BYTES);
                return;
        }
        if (r->device_uuid.len != SORTD_DEVICE_UUID_BYTES) {
                refuse(rq, SORTD_E_INVAL, "device_uuid has %zu bytes, a device UUID %d",
                       r->device_uuid.len, SORTD_DEVICE_UUID_BYTES);
                return;
        }
        if (r->size == 0 || r->offset > UINT64_MAX - r->size) {
                refuse(rq, SORTD_E_INVAL,
                       "a CUDA region of %llu bytes at offset %llu is empty or wraps",
                       (unsigned long long)r->size, (unsigned long long)r->offset);
                return;
        }
        rq->kind = SORTD__REQUEST_REGISTER_CUDA;
        rq->region_size = r->size;
        rq->region_offset = r->offset;
        memcpy(rq->ipc_handle, r->cuda_ipc_handle.data, SORTD_CUDA_IPC_HANDLE_BYTES);
        memcpy(rq->device_uuid, r->device_uuid.data, SORTD_DEVICE_UUID_BYTES);
}

static void check_register(const Sortd__Wire__RegisterRegion *r, sortd__request *rq)
{
        switch (r->kind) {
        case SORTD__WIRE__REGISTER_REGION__KIND__MEMFD:
                if (r->offset || r->cuda_ipc_handle.len || r->device_uuid.len) {
                        refuse(rq, SORTD_E_INVAL,
                               "a memfd region takes no offset, handle or device UUID");
                        return;
                }
                rq->kind = SORTD__REQUEST_REGISTER;
                rq->region_size = r->size;
                break;
        case SORTD__WIRE__REGISTER_REGION__KIND__CUDA_IPC:
                check_register_cuda(r, rq);
                break;
        default:
                refuse(rq, SORTD_E_INVAL, "region of unknown kind %d", (int)r->kind);
                break;
        }
}

/* A sort the engine could not take, or whose payload is not what it says, is refused. */
static void check_sort(const Sortd__Wire__Sort *s, uint64_t payload_len,
                       const sortd__request_limits *lim, sortd__stats *stats, sortd__request *rq)
{
        char why[200];
        sortd_status st =
                s->n_columns ? sortd__request_columns_check(s, rq, why, sizeof(why))
                             : sortd__wire_sort_check(s, &rq->desc, &rq->sizes, why, sizeof(why));

        if (st != SORTD_OK) {
                stats->sorts_failed++;
                refuse(rq, st, "%s", why);
        } else if (s->device_uuid.len && s->device_uuid.len != SORTD_DEVICE_UUID_BYTES) {
                stats->sorts_failed++;
                refuse(rq, SORTD_E_INVAL, "device_uuid has %zu bytes, a device UUID %d",
                       s->device_uuid.len, SORTD_DEVICE_UUID_BYTES);
        } else if (s->n > lim->capacity) {
                stats->rejected++;
                refuse(rq, SORTD_E_CAPACITY, "n = %llu above the engine's capacity %llu",
                       (unsigned long long)s->n, (unsigned long long)lim->capacity);
        } else if (!s->n_columns &&
                   (st = sortd__request_segments_check(s, rq, why, sizeof(why))) != SORTD_OK) {
                stats->sorts_failed++;
                refuse(rq, st, "%s", why);
        } else if (s->data_case == SORTD__WIRE__SORT__DATA_REGION) {
                check_region_sort(s->region, payload_len, lim, stats, rq);
        } else if (rq->seg.buffer_bytes > lim->max_request_bytes) {
                stats->rejected++;
                refuse(rq, SORTD_E_CAPACITY, "request of %llu bytes above max-request-bytes %llu",
                       (unsigned long long)rq->seg.buffer_bytes,
                       (unsigned long long)lim->max_request_bytes);
        } else if (payload_len != rq->seg.payload_bytes) {
                refuse_payload(s, payload_len, stats, rq);
        } else {
                rq->kind = SORTD__REQUEST_SORT;
        }
        rq->n = s->n;
        rq->has_device = s->device_uuid.len == SORTD_DEVICE_UUID_BYTES;
        if (rq->has_device)
                memcpy(rq->device_uuid, s->device_uuid.data, SORTD_DEVICE_UUID_BYTES);
}

static void check_body(const Sortd__Wire__Request *req, uint64_t payload_len,
                       const sortd__request_limits *lim, sortd__stats *stats, sortd__request *rq)
{
        switch (req->body_case) {
        case SORTD__WIRE__REQUEST__BODY_HELLO:
                check_hello(req->hello, rq);
                break;
        case SORTD__WIRE__REQUEST__BODY_STATUS:
                rq->kind = SORTD__REQUEST_STATUS;
                break;
        case SORTD__WIRE__REQUEST__BODY_PING:
                rq->kind = SORTD__REQUEST_PING;
                rq->nonce = req->ping->nonce;
                break;
        case SORTD__WIRE__REQUEST__BODY_SORT:
                stats->sort_requests++;
                check_sort(req->sort, payload_len, lim, stats, rq);
                break;
        case SORTD__WIRE__REQUEST__BODY_REGISTER_REGION:
                check_register(req->register_region, rq);
                break;
        case SORTD__WIRE__REQUEST__BODY_UNREGISTER_REGION:
                rq->kind = SORTD__REQUEST_UNREGISTER;
                rq->region_id = req->unregister_region->region_id;
                break;
        default:
                stats->protocol_errors++;
                refuse(rq, SORTD_E_PROTOCOL, "request of an unknown kind");
                break;
        }
}

void sortd__request_decode(const uint8_t *msg, size_t len, uint64_t payload_len,
                           const sortd__request_limits *lim, sortd__stats *stats,
                           sortd__request *rq)
{
        Sortd__Wire__Request *req;

        *rq = (sortd__request){.kind = SORTD__REQUEST_NONE};
        stats->requests_total++;
        req = sortd__wire__request__unpack(NULL, len, msg);
        if (!req) {
                stats->protocol_errors++;
                refuse(rq, SORTD_E_PROTOCOL, "unparsable request message (%zu bytes)", len);
                return;
        }
        rq->id = req->id;
        check_body(req, payload_len, lim, stats, rq);
        /* Only a sort takes a payload (a region sort, its offsets alone: checked above); one
           sent with anything else is refused too. */
        if (rq->kind != SORTD__REQUEST_SORT && rq->kind != SORTD__REQUEST_REGION_SORT &&
            payload_len && !(req->body_case == SORTD__WIRE__REQUEST__BODY_SORT && rq->refusals)) {
                stats->protocol_errors++;
                refuse(rq, SORTD_E_PROTOCOL, "unexpected payload of %llu bytes",
                       (unsigned long long)payload_len);
        }
        sortd__wire__request__free_unpacked(req, NULL);
}
