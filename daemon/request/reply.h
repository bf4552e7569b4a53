/*
 * Replies (reply.c): each kind of Reply message, and the packing of a reply's header and
 * message into its job. Nothing here writes: the pipeline does, in request order.
 */
#ifndef SORTD_DAEMON_REPLY_H
#define SORTD_DAEMON_REPLY_H

#include <stdint.h>

#include "job.h"
#include "stats.h"

/* The most devices a reply lists. */
#define SORTD__REPLY_MAX_DEVICES 16

/* A device's row (proto's Device); its strings must outlive the reply. */
typedef struct sortd__reply_device {
        unsigned ordinal;
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES];
        const char *name, *pci_bus_id, *reason;
        int numa_node;
        Sortd__Wire__DeviceState state;
        uint64_t capacity, sorts, bytes, busy_ns, queued;
        unsigned streams;
} sortd__reply_device;

/* What Hello and Status report of the server, as it stands when asked (server.c). */
typedef struct sortd__reply_facts {
        const char *engine, *device; /* the engine serving now */
        const char *engine_reason;   /* how it was chosen, its self-check, any replacement */
        uint64_t capacity;
        uint64_t uptime_ms;
        sortd__stats stats; /* the counters, those read from elsewhere filled in */
        Sortd__Wire__Limits limits;
        sortd__reply_device devices[SORTD__REPLY_MAX_DEVICES];
        unsigned n_devices;
} sortd__reply_facts;

/*
 * A Reply with room for every part it may point to. It points into itself: build it in
 * place, pack it, let it go; never copy it.
 */
typedef struct sortd__reply {
        Sortd__Wire__Reply r;
        union {
                Sortd__Wire__HelloReply hello;
                Sortd__Wire__StatusReply status;
                Sortd__Wire__PingReply ping;
                Sortd__Wire__RegisterRegionReply registered;
                Sortd__Wire__UnregisterRegionReply unregistered;
        } body;
        Sortd__Wire__Limits limits;
        Sortd__Wire__Device devices[SORTD__REPLY_MAX_DEVICES];
        Sortd__Wire__Device *device_ptrs[SORTD__REPLY_MAX_DEVICES];
} sortd__reply;

/* f must outlive m. */
void sortd__reply_hello(sortd__reply *m, uint64_t id, const sortd__reply_facts *f);
/* The status counters, the engine and the limits of f, which must outlive m. */
void sortd__reply_status(sortd__reply *m, uint64_t id, const sortd__reply_facts *f);
void sortd__reply_ping(sortd__reply *m, uint64_t id, uint64_t nonce);
void sortd__reply_registered(sortd__reply *m, uint64_t id, uint64_t region_id);
void sortd__reply_unregistered(sortd__reply *m, uint64_t id);
/* The status a client is told for a negative errno of the daemon's: -EINVAL a bad argument,
   -EBUSY a limit, -ENOMEM memory, -ENOTSUP what this daemon does not do, any other a system
   call's failure. */
sortd_status sortd__reply_status_of(int err);
/* why must outlive m. */
void sortd__reply_error(sortd__reply *m, uint64_t id, sortd_status s, const char *why);

/* Packs the header and message of r, followed by payload_len bytes, into j->out; -ENOMEM if no
 * memory.
 */
int sortd__reply_pack(sortd__job *j, const Sortd__Wire__Reply *r, uint64_t payload_len);
/* Packs the reply of the sort j at now (uv_hrtime): its status, and when it succeeded n,
   timings and its payload. */
int sortd__reply_pack_sort(sortd__job *j, uint64_t now);

#endif
