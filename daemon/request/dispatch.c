/*
 * Dispatch (see dispatch.h). A refused request's payload is read and dropped while the stream
 * stays in sync, unless it is too large to be worth reading (max-drain-bytes).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "fdpass.h"
#include "log.h"
#include "reply.h"
#include "request.h"
#include "route.h"
#include "server.h"

/* A stream we can no longer parse: say why, answer what came before, then close. */
static void fatal(sortd__conn *c, sortd_status s, const char *why)
{
        c->srv->stats.protocol_errors++;
        sortd__log(SORTD__LOG_WARNING, "%s: closing: %s", c->name, why);
        sortd__pipeline_refuse(&c->out, 0, s, why);
        c->out.close_after_flush = true;
}

/* A refused request whose frame is still in sync: drop its payload, or close if it is huge. */
static void skip_payload(sortd__conn *c)
{
        uint64_t len = c->fr.h.payload_len;

        if (len == 0)
                return;
        if (len <= c->srv->cfg.max_drain_bytes) {
                sortd__frame_discard(&c->fr);
                return;
        }
        sortd__log(SORTD__LOG_WARNING, "%s: closing rather than draining a %llu-byte payload",
                   c->name, (unsigned long long)len);
        c->out.close_after_flush = true;
}

/* No buffer for the reading sort: it is answered with SORTD_E_NOMEM, and its payload dropped. */
static void no_buffer(sortd__conn *c, sortd__job *j, size_t bytes)
{
        c->srv->stats.sorts_failed++; /* done here: no engine's outcome will count it */
        j->work.status = SORTD_E_NOMEM;
        snprintf(j->work.why, sizeof(j->work.why), "cannot allocate %zu bytes", bytes);
        j->state = SORTD__JOB_DONE;
        c->reading = NULL;
        sortd__frame_discard(&c->fr);
}

/*
 * The reading sort's bytes are charged: it gets its buffer, from the host pool where it has
 * room, and its payload goes there; or it is answered with SORTD_E_NOMEM.
 */
void sortd__dispatch_admitted(sortd__conn *c)
{
        sortd__job *j = c->reading;
        size_t bytes = sortd__job_buffer_bytes(j);
        bool moves_vals = j->work.desc.payload == SORTD_PAYLOAD_VALUES32 ||
                          j->work.desc.payload == SORTD_PAYLOAD_VALUES64;
        int r = sortd__job_buffer(j, &c->srv->pool);

        if (r < 0) {
                sortd__admission_uncharge(&c->srv->adm, bytes);
                no_buffer(c, j, bytes);
                return;
        }
        c->srv->stats.host_pool_misses += r == 1;
        sortd__job_charge(j, &c->srv->adm, bytes);
        sortd__frame_sink(&c->fr, j->work.keys, (size_t)j->work.sizes.keys_bytes,
                          moves_vals ? j->work.vals : NULL,
                          moves_vals ? (size_t)j->work.sizes.vals_bytes : 0);
}

/* The job of a sort, in its place in the pipeline; NULL (and the stream ends) without memory. */
static sortd__job *sort_job(sortd__conn *c, const sortd__request *rq)
{
        sortd__job *j = sortd__pipeline_push(&c->out, rq->id);

        if (!j) {
                c->srv->stats.sorts_failed++; /* counted in sort_requests: it ends here */
                fatal(c, SORTD_E_NOMEM, "out of memory");
                return NULL;
        }
        j->owner = c;
        j->work.op = SORTD__JOB_OP_SORT;
        j->work.desc = rq->desc;
        j->work.n = rq->n;
        j->work.sizes = rq->sizes;
        j->t_frame = c->fr_started;
        return j;
}

static void start_sort(sortd__conn *c, const sortd__request *rq)
{
        sortd__job *j = sort_job(c, rq);

        if (!j)
                return;
        if (rq->n == 0) {
                c->srv->stats.sorts_ok++;
                return; /* done: nothing to read or sort */
        }
        j->state = SORTD__JOB_READING;
        c->reading = j;
        if (sortd__admission_charge(&c->srv->adm, &c->wait, sortd__job_buffer_bytes(j),
                                    (uv_stream_t *)&c->pipe))
                sortd__dispatch_admitted(c);
}

/* A small sort that waits for nobody, the first of its read: sorted here, on the loop thread
   (loop-sort-keys). */
static bool sort_here(sortd__conn *c, sortd__job *j)
{
        sortd__server *srv = c->srv;

        if (!c->loop_sort_ok || j->work.op != SORTD__JOB_OP_SORT ||
            j->work.n > srv->cfg.loop_sort_keys ||
            !sortd__worker_run_here(j->cpu_path ? &srv->cpu_worker : &srv->worker, j))
                return false;
        c->loop_sort_ok = false;
        sortd__conn_sorted_here(c, j);
        return true;
}

/* The job goes to the fair queue now (or is sorted now): a region sort has nothing to read. */
static void queue_job(sortd__conn *c, sortd__job *j)
{
        j->t_read = uv_hrtime();
        j->cpu_path = sortd__route_cpu_path(c->srv, j);
        if (sort_here(c, j))
                return;
        j->state = SORTD__JOB_QUEUED;
        c->in_engine++;
        if (j->cpu_path)
                sortd__queue_push(&c->srv->cpu_queue, &c->cpu_flow, j);
        else
                sortd__queue_push(&c->srv->queue, &c->flow, j);
}

/* Finds the regions and spans of a region sort: j's keys and vals, and *kr and *vr. */
static sortd_status region_spans(sortd__conn *c, const sortd__request *rq, sortd__job *j,
                                 sortd__region **kr, sortd__region **vr)
{
        size_t ks = sortd_key_size(rq->desc.key_type), vs = sortd_payload_size(rq->desc.payload);
        sortd_status s;

        *vr = NULL;
        *kr = sortd__regions_find(&c->regions, rq->region_id, j->work.why, sizeof(j->work.why));
        if (!*kr)
                return SORTD_E_INVAL;
        s = sortd__region_span(*kr, "keys", rq->keys_offset, rq->n, ks, &j->work.keys, j->work.why,
                               sizeof(j->work.why));
        if (s != SORTD_OK || !vs)
                return s;
        *vr = sortd__regions_find(&c->regions, rq->vals_region_id, j->work.why,
                                  sizeof(j->work.why));
        if (!*vr)
                return SORTD_E_INVAL;
        if ((*vr)->kind != (*kr)->kind) {
                snprintf(j->work.why, sizeof(j->work.why),
                         "keys and values must both be in host memory (memfd regions) or both in "
                         "device memory (CUDA regions)");
                return SORTD_E_INVAL;
        }
        return sortd__region_span(*vr, "values", rq->vals_offset, rq->n, vs, &j->work.vals,
                                  j->work.why, sizeof(j->work.why));
}

/* A job's regions are those it holds: conn.c releases them when the engine gives it back. */
static void start_region_sort(sortd__conn *c, const sortd__request *rq)
{
        sortd__job *j = sort_job(c, rq);
        sortd__region *kr, *vr;

        if (!j)
                return;
        j->work.status = region_spans(c, rq, j, &kr, &vr);
        if (j->work.status != SORTD_OK) {
                c->srv->stats.sorts_failed++;
                return; /* done: its error is the reply */
        }
        if (rq->n == 0) {
                c->srv->stats.sorts_ok++;
                return; /* done: nothing to sort, nothing held */
        }
        if (kr->kind == SORTD__REGION_CUDA)
                j->work.op = SORTD__JOB_OP_SORT_DEVICE;
        j->keys_rg = kr;
        j->vals_rg = vr;
        j->work.shared = true; /* the client may write them meanwhile */
        sortd__region_hold(kr);
        if (vr)
                sortd__region_hold(vr);
        sortd__turns_take(&c->regions.turns, j, &c->srv->queue, &c->srv->cpu_queue);
        queue_job(c, j);
}

/* Queues job j on region r for the engine thread. */
static void queue_region_job(sortd__conn *c, sortd__job *j, sortd__job_op op, sortd__region *r)
{
        j->owner = c;
        j->work.op = op;
        j->work.region = r;
        queue_job(c, j);
}

/* An engine thread's job on region r whose reply comes in the pipeline's order; false without
   memory. */
static bool region_request(sortd__conn *c, sortd__job_op op, sortd__region *r, uint64_t id)
{
        sortd__job *j = sortd__pipeline_push(&c->out, id);

        if (!j)
                return false;
        queue_region_job(c, j, op, r);
        return true;
}

/* A new region goes to the engine thread, which opens it; the reply comes from there. */
static void open_region(sortd__conn *c, uint64_t id, sortd__region *r)
{
        r->close_job = calloc(1, sizeof(*r->close_job));
        if (!r->close_job) {
                sortd__regions_forget(&c->regions, r);
                sortd__pipeline_refuse(&c->out, id, SORTD_E_NOMEM, "out of memory for a region");
                return;
        }
        if (!region_request(c, SORTD__JOB_OP_REGION_OPEN, r, id)) {
                sortd__regions_forget(&c->regions, r);
                fatal(c, SORTD_E_NOMEM, "out of memory");
        }
}

static void register_memfd(sortd__conn *c, const sortd__request *rq)
{
        char why[256];
        int fd = -1;
        sortd__region *r;
        sortd_status s;

        errno = ENOENT;
        if (sortd__conn_frame_fds(c))
                fd = sortd__fdpass_take(&c->pipe);
        if (fd < 0 && errno == ENOENT) {
                sortd__pipeline_refuse(&c->out, rq->id, SORTD_E_INVAL,
                                       "RegisterRegion came without its memfd (SCM_RIGHTS)");
                return;
        }
        if (fd < 0) {
                snprintf(why, sizeof(why), "could not take the memfd that came: %s",
                         strerror(errno));
                sortd__pipeline_refuse(&c->out, rq->id, SORTD_E_SYSTEM, why);
                return;
        }
        s = sortd__regions_add(&c->regions, fd, rq->region_size, &r, why, sizeof(why));
        if (s != SORTD_OK) {
                sortd__pipeline_refuse(&c->out, rq->id, s, why);
                return;
        }
        open_region(c, rq->id, r);
}

static void register_cuda(sortd__conn *c, const sortd__request *rq)
{
        const sortd__server *srv = c->srv;
        char why[256], theirs[SORTD__REGION_UUID_TEXT], ours[SORTD__REGION_UUID_TEXT];
        sortd__region *r;
        sortd_status s;

        if (!srv->has_device) {
                snprintf(why, sizeof(why),
                         "this daemon's engine (%s) sorts in host memory: CUDA IPC regions need "
                         "a GPU engine (sortd --engine cuda)",
                         sortd_engine_kind(srv->engine));
                sortd__pipeline_refuse(&c->out, rq->id, SORTD_E_UNSUPPORTED, why);
                return;
        }
        if (memcmp(rq->device_uuid, srv->device_uuid, SORTD_DEVICE_UUID_BYTES) != 0) {
                sortd__region_uuid_format(rq->device_uuid, theirs);
                sortd__region_uuid_format(srv->device_uuid, ours);
                snprintf(why, sizeof(why),
                         "the CUDA region is on device %s; this daemon sorts on %s", theirs, ours);
                sortd__pipeline_refuse(&c->out, rq->id, SORTD_E_INVAL, why);
                return;
        }
        s = sortd__regions_add_cuda(&c->regions, rq->ipc_handle, rq->region_offset, rq->region_size,
                                    &r, why, sizeof(why));
        if (s != SORTD_OK) {
                sortd__pipeline_refuse(&c->out, rq->id, s, why);
                return;
        }
        open_region(c, rq->id, r);
}

/* A region that no sort holds goes to the engine thread to be closed; the reply comes after. */
static void unregister_region(sortd__conn *c, const sortd__request *rq)
{
        char why[256];
        sortd__region *r;
        sortd_status s =
                sortd__regions_begin_remove(&c->regions, rq->region_id, &r, why, sizeof(why));

        if (s != SORTD_OK) {
                sortd__pipeline_refuse(&c->out, rq->id, s, why);
                return;
        }
        /* Without memory the region stays CLOSING, and the connection's close closes it. */
        if (!region_request(c, SORTD__JOB_OP_REGION_CLOSE, r, rq->id))
                fatal(c, SORTD_E_NOMEM, "out of memory");
}

void sortd__dispatch_region_done(sortd__conn *c, sortd__job *j)
{
        sortd__region *r = j->work.region;
        sortd__reply m;

        if (j->work.status != SORTD_OK) {
                sortd__pipeline_error(&c->out, &m, j->id, j->work.status, j->work.why);
        } else if (j->work.op == SORTD__JOB_OP_REGION_OPEN) {
                sortd__log(SORTD__LOG_DEBUG, "%s: region %llu, %llu bytes", c->name,
                           (unsigned long long)r->id, (unsigned long long)r->bytes);
                sortd__reply_registered(&m, j->id, r->id);
        } else {
                sortd__reply_unregistered(&m, j->id);
        }
        /* A region that did not open is gone; a closed one too, even if its close failed. */
        if (j->work.op == SORTD__JOB_OP_REGION_OPEN && j->work.status == SORTD_OK)
                sortd__region_ready(r);
        else
                sortd__regions_forget(&c->regions, r);
        j->work.region = NULL;
        sortd__pipeline_fill(&c->out, j, &m.r);
}

/* Each region's own close job (open_region): nothing here can fail. A region whose close an
   unregister already queued is closed once more, which does nothing. */
void sortd__dispatch_closing(sortd__conn *c)
{
        for (sortd__region *r = c->regions.head; r; r = r->next) {
                sortd__job *j = r->close_job;

                r->close_job = NULL;
                queue_region_job(c, j, SORTD__JOB_OP_REGION_CLOSE, r);
        }
}

static void answer(sortd__conn *c, const sortd__request *rq)
{
        sortd__reply m;

        switch (rq->kind) {
        case SORTD__REQUEST_HELLO:
                if (rq->client_name[0])
                        sortd__log(SORTD__LOG_DEBUG, "%s: hello from '%s'", c->name,
                                   rq->client_name);
                sortd__reply_hello(&m, rq->id, c->srv);
                break;
        case SORTD__REQUEST_STATUS:
                sortd__reply_status(&m, rq->id, c->srv);
                break;
        case SORTD__REQUEST_PING:
                sortd__reply_ping(&m, rq->id, rq->nonce);
                break;
        case SORTD__REQUEST_SORT:
                start_sort(c, rq);
                return;
        case SORTD__REQUEST_REGION_SORT:
                start_region_sort(c, rq);
                return;
        case SORTD__REQUEST_REGISTER:
                register_memfd(c, rq);
                return;
        case SORTD__REQUEST_REGISTER_CUDA:
                register_cuda(c, rq);
                return;
        case SORTD__REQUEST_UNREGISTER:
                unregister_region(c, rq);
                return;
        case SORTD__REQUEST_NONE:
                return;
        }
        sortd__pipeline_answer(&c->out, rq->id, &m.r);
}

static void on_message(sortd__conn *c)
{
        sortd__server *srv = c->srv;
        sortd__request_limits lim = {
                .capacity = sortd_engine_capacity(srv->engine),
                .max_request_bytes = srv->cfg.max_request_bytes,
        };
        sortd__request rq;

        sortd__request_decode(c->fr.msg, c->fr.h.message_len, c->fr.h.payload_len, &lim,
                              &srv->stats, &rq);
        answer(c, &rq);
        for (unsigned i = 0; i < rq.refusals; i++)
                sortd__pipeline_refuse(&c->out, rq.id, rq.refusal[i].status, rq.refusal[i].why);
        if (rq.kind != SORTD__REQUEST_SORT)
                skip_payload(c);
}

static void on_payload(sortd__conn *c)
{
        sortd__job *j = c->reading;

        c->reading = NULL;
        if (j)
                queue_job(c, j);
}

/*
 * A frame is whole and every fd that came with it has been taken: any of its own left came
 * with a frame that takes none (or more than it takes). Those of a later frame, already read
 * ahead, wait for it (sortd__conn_frame_fds).
 */
static void drop_stray_fds(sortd__conn *c)
{
        char why[128];
        unsigned n = sortd__conn_frame_fds(c) ? sortd__fdpass_drop_all(&c->pipe) : 0;

        if (n == 0)
                return;
        c->srv->stats.protocol_errors++;
        snprintf(why, sizeof(why), "%u fd(s) came with a frame that takes none: closed", n);
        sortd__pipeline_refuse(&c->out, 0, SORTD_E_PROTOCOL, why);
}

void sortd__dispatch(sortd__conn *c, sortd__frame_event ev)
{
        switch (ev) {
        case SORTD__FRAME_MORE:
                break;
        case SORTD__FRAME_MESSAGE:
                on_message(c);
                break;
        case SORTD__FRAME_PAYLOAD:
                on_payload(c);
                break;
        case SORTD__FRAME_ERROR:
                fatal(c, c->fr.status, c->fr.why);
                break;
        }
        if (sortd__frame_at_boundary(&c->fr))
                drop_stray_fds(c);
}
