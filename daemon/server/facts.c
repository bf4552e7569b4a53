/*
 * What the server reports of itself (Hello, Status): its limits, counters, the engine it names
 * and a row per device, read from the lanes, their recoveries and the engines as they stand.
 */
#include <string.h>

#include "facts.h"

/* The largest n any lane sorts: what a request is checked against (the engines send it to a
   lane that can take it). */
uint64_t sortd__server_capacity(const sortd__server *srv)
{
        uint64_t max = 0;

        for (unsigned i = 0; i < srv->n_lanes; i++)
                if (sortd_engine_capacity(srv->lane_engines[i]) > max)
                        max = sortd_engine_capacity(srv->lane_engines[i]);
        return max;
}

/* The limits every reply reports (Hello, Status). */
static void limits_of(const sortd__server *srv, Sortd__Wire__Limits *l)
{
        *l = (Sortd__Wire__Limits)SORTD__WIRE__LIMITS__INIT;
        l->max_message_bytes = SORTD__WIRE_MAX_MESSAGE;
        l->max_request_bytes = srv->cfg.max_request_bytes;
        l->max_inflight_bytes = srv->cfg.max_inflight_bytes;
        l->max_connections = (uint32_t)srv->cfg.max_connections;
        l->max_regions = srv->cfg.max_regions;
        l->max_region_bytes = srv->cfg.max_region_bytes;
}

/* The recovery whose engine Hello and Status name: the first lane's, unless another lane
   counted a loss (its replacement serves now, and its reason says what happened). */
static sortd__recovery *named_recovery(sortd__server *srv)
{
        for (unsigned i = 0; i < srv->n_lanes; i++)
                if (atomic_load(&srv->recovery[i].losses))
                        return &srv->recovery[i];
        return &srv->recovery[0];
}

/* A device is lost once none of its lanes sorts on it: each gave up, or serves on the cpu. */
static bool device_lost(sortd__server *srv, const sortd__server_device *d, const char **why)
{
        for (unsigned k = d->first_lane; k < d->first_lane + d->lanes; k++) {
                sortd__recovery *r = &srv->recovery[k];
                const sortd__recovery_serving *now = sortd__recovery_current(r);

                if (atomic_load(&r->gave_up))
                        *why = r->gave_up_reason;
                else if (strcmp(sortd_engine_kind(now->engine), "cpu") == 0)
                        *why = now->reason;
                else
                        return false;
        }
        return true;
}

static void device_row(sortd__server *srv, const sortd__server_device *d, sortd__reply_device *row)
{
        const sortd__engines_device *ed = d->index >= 0 ? &srv->engines.devices[d->index] : NULL;

        *row = (sortd__reply_device){
                .ordinal = (unsigned)d->info.ordinal,
                .name = d->info.name,
                .pci_bus_id = d->info.pci_bus_id,
                .reason = d->reason,
                .numa_node = d->numa_node,
                .state = SORTD__WIRE__DEVICE_STATE__DEVICE_FAILED,
                .streams = d->lanes,
        };
        memcpy(row->uuid, d->info.uuid, sizeof(row->uuid));
        if (!ed)
                return;
        row->sorts = ed->sorts;
        row->bytes = ed->bytes;
        row->busy_ns = ed->busy_ns;
        row->queued = sortd__engines_device_queued(&srv->engines, (unsigned)d->index);
        if (device_lost(srv, d, &row->reason)) {
                row->state = SORTD__WIRE__DEVICE_STATE__DEVICE_LOST;
                return;
        }
        row->state = SORTD__WIRE__DEVICE_STATE__DEVICE_SERVING;
        row->capacity = sortd_engine_capacity(srv->lane_engines[d->first_lane]);
        row->reason = sortd__recovery_current(&srv->recovery[d->first_lane])->reason;
}

void sortd__server_facts(void *arg, sortd__reply_facts *f)
{
        sortd__server *srv = arg;
        const sortd__recovery_serving *serving = sortd__recovery_current(named_recovery(srv));

        *f = (sortd__reply_facts){
                .engine = sortd_engine_kind(serving->engine),
                .device = sortd_engine_device(serving->engine),
                .engine_reason = serving->reason,
                .capacity = sortd__server_capacity(srv),
                .uptime_ms = (uv_hrtime() - srv->started_ns) / 1000000,
                .stats = srv->stats,
        };
        f->stats.queued = sortd__engines_queued(&srv->engines);
        f->stats.cpu_path_keys = srv->engines.route.cpu_path_keys; /* 0 without a CPU path */
        for (unsigned i = 0; i < srv->n_lanes; i++)
                f->stats.engines_lost += atomic_load(&srv->recovery[i].losses);
        f->stats.regions = srv->regions.regions;
        f->stats.region_bytes = srv->regions.mapped_bytes;
        f->stats.host_pool_bytes = srv->pool.bytes;
        f->stats.host_pool_used = srv->pool.used;
        f->stats.host_pool_peak = srv->pool.peak;
        limits_of(srv, &f->limits);
        for (unsigned i = 0; i < srv->n_devices; i++)
                device_row(srv, &srv->devices[i], &f->devices[f->n_devices++]);
}
