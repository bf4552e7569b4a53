/*
 * libFuzzer target for request validation (daemon/request/request.c, with its segments and key
 * columns) on its own: a Request message's bytes, with the payload length its frame claims and
 * the daemon's limits drawn from the input too. What the connection relies on is checked for every
 * request the decoder lets through. Input: 1 byte picks the limits, 8 bytes the payload length, the
 * rest is the message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusals(const sortd__request *rq)
{
        if (rq->refusals > 2)
                abort();
        for (unsigned i = 0; i < rq->refusals; i++)
                if (rq->refusal[i].status == SORTD_OK ||
                    !memchr(rq->refusal[i].why, '\0', sizeof(rq->refusal[i].why)) ||
                    !rq->refusal[i].why[0])
                        abort();
}

/* A sort's sizes, as its descriptor or its key columns (valid ones: checked) make them. */
static void check_sizes(const sortd__request *rq, sortd__wire_sizes *sz)
{
        const sortd__wire_columns *c = &rq->cols;
        char why[256];

        if (c->count &&
            (sortd_columns_check(c->col, c->count, rq->desc.payload, rq->n, why, sizeof(why)) !=
                     SORTD_OK ||
             sortd__wire_columns_sizes(c->col, c->count, rq->desc.payload, rq->n, sz) != SORTD_OK ||
             rq->seg.on || rq->seg.k))
                abort();
        if (!c->count && (sortd_sort_desc_check(&rq->desc, rq->n, why, sizeof(why)) != SORTD_OK ||
                          sortd__wire_sizes_of(&rq->desc, rq->n, sz) != SORTD_OK))
                abort();
        if (memcmp(sz, &rq->sizes, sizeof(*sz)) != 0)
                abort();
}

/* An admitted inline sort: a valid descriptor or valid columns, within the limits, its payload
   its size (keys, values, and any offsets of its segments), what it holds within
   max-request-bytes. */
static void check_sort(const sortd__request *rq, uint64_t payload_len,
                       const sortd__request_limits *lim)
{
        sortd__wire_sizes sz;

        if (rq->refusals || rq->n > lim->capacity)
                abort();
        check_sizes(rq, &sz);
        if (rq->seg.payload_bytes != payload_len || rq->seg.buffer_bytes > lim->max_request_bytes)
                abort();
        if (!rq->seg.on && !rq->seg.k && sz.request_len != payload_len)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        sortd__request_limits lim;
        sortd__stats stats = {0};
        sortd__request rq;
        uint64_t payload_len;
        uint8_t *msg;

        if (size < 9)
                return 0;
        lim = (sortd__request_limits){.capacity = 1ull << (data[0] & 31),
                                      .max_request_bytes = 64ull << (data[0] >> 5)};
        memcpy(&payload_len, data + 1, 8);
        data += 9;
        size -= 9;
        /* An exact copy, so that ASan sees any read past the message. */
        msg = malloc(size ? size : 1);
        if (!msg)
                return 0;
        memcpy(msg, data, size);
        sortd__request_decode(msg, size, payload_len, &lim, &stats, &rq);
        check_refusals(&rq);
        if (stats.requests_total != 1)
                abort();
        if (rq.kind == SORTD__REQUEST_SORT)
                check_sort(&rq, payload_len, &lim);
        if (rq.kind == SORTD__REQUEST_REGION_SORT &&
            (rq.n > lim.capacity || rq.refusals || rq.seg.payload_bytes != payload_len ||
             rq.seg.buffer_bytes > lim.max_request_bytes))
                abort();
        free(msg);
        return 0;
}
