/*
 * A request message as a client packs it, for the daemon's unit tests (test_request.c,
 * test_dispatch.c): every body's struct beside the request, so that a case sets what it
 * carries and points the request at it.
 */
#ifndef SORTD_TESTS_DAEMON_MESSAGE_H
#define SORTD_TESTS_DAEMON_MESSAGE_H

#include <stdint.h>

#include "sortd.pb-c.h"
#include "sortd_types.h"

typedef struct message {
        Sortd__Wire__Request req;
        Sortd__Wire__Hello hello;
        Sortd__Wire__Ping ping;
        Sortd__Wire__Status status;
        Sortd__Wire__Sort sort;
        Sortd__Wire__InlineData inline_data;
        Sortd__Wire__RegionData region;
        Sortd__Wire__Segments segments;
        Sortd__Wire__TopkOut topk_out;
        Sortd__Wire__Column column[SORTD_MAX_COLUMNS + 1]; /* one past the most allowed */
        Sortd__Wire__Column *columns[SORTD_MAX_COLUMNS + 1];
        Sortd__Wire__RegisterRegion reg;
        Sortd__Wire__UnregisterRegion unreg;
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES]; /* a CUDA region's, when one is named */
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES];
} message;

/* m, request id, with every body at its defaults and none chosen. */
static inline void message_init(message *m, uint64_t id)
{
        *m = (message){
                .req = SORTD__WIRE__REQUEST__INIT,
                .hello = SORTD__WIRE__HELLO__INIT,
                .ping = SORTD__WIRE__PING__INIT,
                .status = SORTD__WIRE__STATUS__INIT,
                .sort = SORTD__WIRE__SORT__INIT,
                .inline_data = SORTD__WIRE__INLINE_DATA__INIT,
                .region = SORTD__WIRE__REGION_DATA__INIT,
                .segments = SORTD__WIRE__SEGMENTS__INIT,
                .topk_out = SORTD__WIRE__TOPK_OUT__INIT,
                .reg = SORTD__WIRE__REGISTER_REGION__INIT,
                .unreg = SORTD__WIRE__UNREGISTER_REGION__INIT,
        };
        m->req.id = id;
        for (unsigned i = 0; i <= SORTD_MAX_COLUMNS; i++) {
                m->column[i] = (Sortd__Wire__Column)SORTD__WIRE__COLUMN__INIT;
                m->columns[i] = &m->column[i];
        }
}

#endif
