/* Reply messages and their packing (see reply.h). */
#include <errno.h>
#include <stdlib.h>

#include "reply.h"
#include "sortd_version.h"

static void reply_init(sortd__reply *m, uint64_t id)
{
        *m = (sortd__reply){.r = SORTD__WIRE__REPLY__INIT, .limits = SORTD__WIRE__LIMITS__INIT};
        m->r.id = id;
}

/* f's device rows into m: their count, and m->device_ptrs. */
static size_t devices_of(sortd__reply *m, const sortd__reply_facts *f)
{
        for (unsigned i = 0; i < f->n_devices; i++) {
                const sortd__reply_device *d = &f->devices[i];
                Sortd__Wire__Device *w = &m->devices[i];

                *w = (Sortd__Wire__Device)SORTD__WIRE__DEVICE__INIT;
                w->ordinal = d->ordinal;
                w->uuid.data = (uint8_t *)d->uuid;
                w->uuid.len = SORTD_DEVICE_UUID_BYTES;
                w->name = (char *)d->name;
                w->pci_bus_id = (char *)d->pci_bus_id;
                w->numa_node = d->numa_node;
                w->capacity = d->capacity;
                w->state = d->state;
                w->reason = (char *)d->reason;
                w->sorts = d->sorts;
                w->bytes = d->bytes;
                w->busy_ns = d->busy_ns;
                w->queued = d->queued;
                w->streams = d->streams;
                m->device_ptrs[i] = w;
        }
        return f->n_devices;
}

void sortd__reply_hello(sortd__reply *m, uint64_t id, const sortd__reply_facts *f)
{
        Sortd__Wire__HelloReply *hr = &m->body.hello;

        reply_init(m, id);
        *hr = (Sortd__Wire__HelloReply)SORTD__WIRE__HELLO_REPLY__INIT;
        m->limits = f->limits;
        hr->protocol_version = SORTD__WIRE_VERSION;
        hr->server_version = SORTD_VERSION_STRING;
        hr->engine = (char *)f->engine;
        hr->device = (char *)f->device;
        hr->capacity = f->capacity;
        hr->limits = &m->limits;
        hr->n_devices = devices_of(m, f);
        hr->devices = m->device_ptrs;
        m->r.body_case = SORTD__WIRE__REPLY__BODY_HELLO;
        m->r.hello = hr;
}

void sortd__reply_status(sortd__reply *m, uint64_t id, const sortd__reply_facts *f)
{
        Sortd__Wire__StatusReply *r = &m->body.status;

        reply_init(m, id);
        *r = (Sortd__Wire__StatusReply)SORTD__WIRE__STATUS_REPLY__INIT;
        m->limits = f->limits;
        r->server_version = SORTD_VERSION_STRING;
        r->engine = (char *)f->engine;
        r->device = (char *)f->device;
        r->engine_reason = (char *)f->engine_reason;
        r->capacity = f->capacity;
        r->uptime_ms = f->uptime_ms;
#define FILL(name, field, wire_type, label) r->name = f->stats.name;
        SORTD_STATUS_COUNTERS(FILL)
#undef FILL
        r->limits = &m->limits;
        r->n_devices = devices_of(m, f);
        r->devices = m->device_ptrs;
        m->r.body_case = SORTD__WIRE__REPLY__BODY_STATUS_REPLY;
        m->r.status_reply = r;
}

void sortd__reply_ping(sortd__reply *m, uint64_t id, uint64_t nonce)
{
        reply_init(m, id);
        m->body.ping = (Sortd__Wire__PingReply)SORTD__WIRE__PING_REPLY__INIT;
        m->body.ping.nonce = nonce;
        m->r.body_case = SORTD__WIRE__REPLY__BODY_PING;
        m->r.ping = &m->body.ping;
}

void sortd__reply_registered(sortd__reply *m, uint64_t id, uint64_t region_id)
{
        reply_init(m, id);
        m->body.registered =
                (Sortd__Wire__RegisterRegionReply)SORTD__WIRE__REGISTER_REGION_REPLY__INIT;
        m->body.registered.region_id = region_id;
        m->r.body_case = SORTD__WIRE__REPLY__BODY_REGISTER_REGION;
        m->r.register_region = &m->body.registered;
}

void sortd__reply_unregistered(sortd__reply *m, uint64_t id)
{
        reply_init(m, id);
        m->body.unregistered =
                (Sortd__Wire__UnregisterRegionReply)SORTD__WIRE__UNREGISTER_REGION_REPLY__INIT;
        m->r.body_case = SORTD__WIRE__REPLY__BODY_UNREGISTER_REGION;
        m->r.unregister_region = &m->body.unregistered;
}

sortd_status sortd__reply_status_of(int err)
{
        switch (err) {
        case 0:
                return SORTD_OK;
        case -EINVAL:
                return SORTD_E_INVAL;
        case -EBUSY:
                return SORTD_E_BUSY;
        case -ENOMEM:
                return SORTD_E_NOMEM;
        case -ENOTSUP:
                return SORTD_E_UNSUPPORTED;
        default:
                return SORTD_E_SYSTEM;
        }
}

void sortd__reply_error(sortd__reply *m, uint64_t id, sortd_status s, const char *why)
{
        reply_init(m, id);
        m->r.status = sortd__wire_status(s);
        m->r.error = (char *)why;
}

int sortd__reply_pack(sortd__job *j, const Sortd__Wire__Reply *r, uint64_t payload_len)
{
        size_t len = sortd__wire__reply__get_packed_size(r);
        sortd__wire_header h = {
                .magic = SORTD__WIRE_MAGIC,
                .version = SORTD__WIRE_VERSION,
                .message_len = (uint32_t)len,
                .payload_len = payload_len,
        };

        j->out = malloc(SORTD__WIRE_HEADER_SIZE + len);
        if (!j->out)
                return -ENOMEM;
        sortd__wire_header_pack(&h, j->out);
        sortd__wire__reply__pack(r, j->out + SORTD__WIRE_HEADER_SIZE);
        j->out_len = SORTD__WIRE_HEADER_SIZE + len;
        return 0;
}

int sortd__reply_pack_sort(sortd__job *j, uint64_t now)
{
        Sortd__Wire__Reply r = SORTD__WIRE__REPLY__INIT;
        Sortd__Wire__SortReply sr = SORTD__WIRE__SORT_REPLY__INIT;
        Sortd__Wire__Timings t = SORTD__WIRE__TIMINGS__INIT;
        bool ok = j->work.status == SORTD_OK;
        uv_buf_t parts[2];
        unsigned n;

        r.id = j->id;
        r.status = sortd__wire_status(j->work.status);
        r.error = j->work.why;
        if (ok) {
                sr.n = j->work.n;
                if (j->work.n) {
                        t.transfer_ns = j->t_read - j->t_frame;
                        t.queued_ns = j->work.t_sort - j->t_read;
                        t.sort_ns = j->work.t_done - j->work.t_sort;
                        t.reply_ns = now - j->work.t_done;
                        t.device_ns = j->work.device_ns;
                }
                sr.timings = &t;
                r.body_case = SORTD__WIRE__REPLY__BODY_SORT;
                r.sort = &sr;
        }
        return sortd__reply_pack(j, &r, sortd__job_reply_payload(j, parts, &n));
}
