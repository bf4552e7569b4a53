/*
 * Dispatch (see dispatch.h). A refused request's payload is read and dropped while the stream
 * stays in sync, unless it is too large to be worth reading (max-drain-bytes).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dispatch.h"
#include "log.h"
#include "request.h"

static const sortd__dispatch_action nothing = {.todo = SORTD__DISPATCH_NOTHING};

void sortd__dispatch_broken(const sortd__dispatch_ctx *d, sortd_status s, const char *why)
{
        d->stats->protocol_errors++;
        sortd__log(SORTD__LOG_WARNING, "%s: closing: %s", d->name, why);
        sortd__pipeline_refuse(d->out, 0, s, why);
}

/* The stream ends after what is queued: there was no memory to answer in order. */
static sortd__dispatch_action no_memory(const sortd__dispatch_ctx *d)
{
        sortd__dispatch_broken(d, SORTD_E_NOMEM, "out of memory");
        return (sortd__dispatch_action){.close = true};
}

/* A refused request whose frame is still in sync: drop its payload, or close if it is huge. */
static void skip_payload(const sortd__dispatch_ctx *d, uint64_t len, sortd__dispatch_action *a)
{
        if (len == 0)
                return;
        if (len <= d->env->max_drain_bytes) {
                a->discard = true;
                return;
        }
        sortd__log(SORTD__LOG_WARNING, "%s: closing rather than draining a %llu-byte payload",
                   d->name, (unsigned long long)len);
        a->close = true;
}

int sortd__dispatch_buffer(const sortd__dispatch_ctx *d, sortd__job *j,
                           struct sortd__hostpool *pool)
{
        int r = sortd__job_buffer(j, pool);

        if (r < 0) {
                d->stats->sorts_failed++; /* done here: no engine's outcome will count it */
                j->work.status = SORTD_E_NOMEM;
                snprintf(j->work.why, sizeof(j->work.why), "cannot allocate %zu bytes",
                         sortd__job_buffer_bytes(j));
                j->state = SORTD__JOB_DONE;
                return -ENOMEM;
        }
        d->stats->host_pool_misses += r == 1;
        return 0;
}

/* The job of a sort, in its place in the pipeline; NULL without memory. */
static sortd__job *sort_job(const sortd__dispatch_ctx *d, const sortd__request *rq,
                            uint64_t t_frame)
{
        sortd__job *j = sortd__pipeline_push(d->out, rq->id);

        if (!j) {
                d->stats->sorts_failed++; /* counted in sort_requests: it ends here */
                return NULL;
        }
        j->owner = d->owner;
        j->work.op = SORTD__JOB_OP_SORT;
        j->work.desc = rq->desc;
        j->work.n = rq->n;
        j->work.sizes = rq->sizes;
        j->work.cols = rq->cols;
        j->parts = (sortd__job_parts){.keys = rq->sizes.keys_bytes, .vals = rq->sizes.vals_bytes};
        j->t_frame = t_frame;
        return j;
}

/* A sort refused for the reason in its why: done, holding nothing. */
static sortd__dispatch_action refused(const sortd__dispatch_ctx *d, sortd__job *j, int err)
{
        d->stats->sorts_failed++;
        j->work.status = sortd__reply_status_of(err);
        sortd__region_release_held(j);
        return nothing; /* done: its error is the reply */
}

/* The UUIDs of the devices that serve now, for a refusal that names them. */
static void served_devices(sortd__engines *e, char *out, size_t len)
{
        char uuid[SORTD_DEVICE_UUID_TEXT];
        size_t used = 0;

        snprintf(out, len, "none");
        for (unsigned i = 0; i < e->n_devices; i++) {
                if (!sortd__engines_device_serving(e, i))
                        continue;
                sortd_device_uuid_format(e->devices[i].uuid, uuid);
                used += (size_t)snprintf(out + used, used < len ? len - used : 0, "%s%s",
                                         used ? ", " : "", uuid);
        }
}

/* The device of uuid, if it serves now: its index, or -EINVAL with why naming those that do. */
static int served_device(const sortd__dispatch_env *env, const uint8_t *uuid, const char *what,
                         char *why, size_t len)
{
        char theirs[SORTD_DEVICE_UUID_TEXT], served[4 * SORTD_DEVICE_UUID_TEXT];
        int d = sortd__engines_find_device(env->engines, uuid);

        if (d >= 0 && sortd__engines_device_serving(env->engines, (unsigned)d))
                return d;
        sortd_device_uuid_format(uuid, theirs);
        served_devices(env->engines, served, sizeof(served));
        snprintf(why, len, "%s is on device %s, which this daemon %s; it serves %s", what, theirs,
                 d >= 0 ? "has lost" : "does not serve", served);
        return -EINVAL;
}

/* The device a sort asked for, into j->device: 0, or -EINVAL with why (the job's). */
static int chosen_device(const sortd__dispatch_ctx *d, const sortd__request *rq, sortd__job *j)
{
        int dev;

        if (!rq->has_device)
                return 0;
        dev = served_device(d->env, rq->device_uuid, "the sort's chosen device", j->work.why,
                            sizeof(j->work.why));
        if (dev < 0)
                return dev;
        j->device = dev;
        return 0;
}

static sortd__dispatch_action start_sort(const sortd__dispatch_ctx *d, const sortd__request *rq,
                                         uint64_t t_frame)
{
        sortd__job *j = sort_job(d, rq, t_frame);
        int r;

        if (!j)
                return no_memory(d);
        r = chosen_device(d, rq, j);
        if (r == 0 && rq->n)
                r = sortd__dispatch_segments(d, rq, j);
        if (r < 0)
                return refused(d, j, r);
        if (rq->n == 0) {
                d->stats->sorts_ok++;
                return nothing; /* done: nothing to read or sort */
        }
        j->state = SORTD__JOB_READING;
        return (sortd__dispatch_action){.todo = SORTD__DISPATCH_ADMIT, .job = j};
}

/* Finds the regions and spans of a region sort: j's keys and vals, and *kr and *vr. */
static int region_spans(const sortd__dispatch_ctx *d, const sortd__request *rq, sortd__job *j,
                        sortd__region **kr, sortd__region **vr)
{
        size_t ks = sortd_key_size(rq->desc.key_type), vs = sortd_payload_size(rq->desc.payload);
        char *why = j->work.why;
        size_t len = sizeof(j->work.why);
        int r;

        if (rq->cols.count)
                return sortd__dispatch_columns_spans(d, rq, j, kr, vr);
        *vr = NULL;
        *kr = sortd__regions_find(d->regions, rq->region_id, why, len);
        if (!*kr)
                return -EINVAL;
        r = sortd__region_span(*kr, "keys", rq->keys_offset, rq->n, ks, &j->work.keys, why, len);
        /* a top-k's indices are results, which go where topk_out says */
        if (r < 0 || !vs || (rq->seg.k && sortd_payload_is_argsort(rq->desc.payload)))
                return r;
        *vr = sortd__regions_find(d->regions, rq->vals_region_id, why, len);
        if (!*vr)
                return -EINVAL;
        if ((*vr)->kind != (*kr)->kind) {
                snprintf(why, len,
                         "keys and values must both be in host memory (memfd regions) or both in "
                         "device memory (CUDA regions)");
                return -EINVAL;
        }
        return sortd__region_span(*vr, "values", rq->vals_offset, rq->n, vs, &j->work.vals, why,
                                  len);
}

/* A CUDA region's sort runs on its device, which a chosen one must be. */
static int region_device(const sortd__dispatch_ctx *d, const sortd__request *rq, sortd__job *j,
                         const sortd__region *kr)
{
        char ours[SORTD_DEVICE_UUID_TEXT], theirs[SORTD_DEVICE_UUID_TEXT];
        int r = chosen_device(d, rq, j);

        if (r < 0 || kr->kind != SORTD__REGION_CUDA || j->device < 0 || j->device == kr->device)
                return r;
        sortd_device_uuid_format(rq->device_uuid, theirs);
        sortd_device_uuid_format(d->env->engines->devices[kr->device].uuid, ours);
        snprintf(j->work.why, sizeof(j->work.why),
                 "the sort chose device %s, but its CUDA region is on %s", theirs, ours);
        return -EINVAL;
}

/* A region sort's segments: a buffer for their offsets, charged as any sort's, into which
   they are read from the payload or copied from their region; then checked there. */
static sortd__dispatch_action region_segments(const sortd__dispatch_ctx *d,
                                              const sortd__request *rq, sortd__job *j)
{
        int r = sortd__dispatch_segments(d, rq, j);

        if (r == 0 && j->parts.offsets) {
                j->state = SORTD__JOB_READING;
                return (sortd__dispatch_action){.todo = SORTD__DISPATCH_ADMIT, .job = j};
        }
        if (r == 0)
                r = sortd__dispatch_segments_ready(j);
        if (r < 0)
                return refused(d, j, r);
        return (sortd__dispatch_action){.todo = SORTD__DISPATCH_SUBMIT, .job = j};
}

/* A job holds its regions until the engine gives it back (the connection releases them). */
static sortd__dispatch_action start_region_sort(const sortd__dispatch_ctx *d,
                                                const sortd__request *rq, uint64_t t_frame)
{
        sortd__job *j = sort_job(d, rq, t_frame);
        sortd__region *kr, *vr;
        int r;

        if (!j)
                return no_memory(d);
        j->parts = (sortd__job_parts){0}; /* its keys and values are the client's */
        r = region_spans(d, rq, j, &kr, &vr);
        if (r == 0)
                r = region_device(d, rq, j, kr);
        if (r < 0)
                return refused(d, j, r);
        if (rq->n == 0) {
                d->stats->sorts_ok++;
                return nothing; /* done: nothing to sort, nothing held */
        }
        if (kr->kind == SORTD__REGION_CUDA)
                j->work.op = SORTD__JOB_OP_SORT_DEVICE;
        j->keys_rg = kr;
        j->vals_rg = vr;
        j->work.shared = true; /* the client may write them meanwhile */
        if (kr->kind == SORTD__REGION_MEMFD)
                j->numa_node = sortd__region_numa_node(j->work.keys);
        sortd__region_hold(kr);
        if (vr)
                sortd__region_hold(vr);
        return region_segments(d, rq, j);
}

/* j becomes the engine thread's job op on region r. */
static void region_job(const sortd__dispatch_ctx *d, sortd__job *j, sortd__job_op op,
                       sortd__region *r)
{
        j->owner = d->owner;
        j->work.op = op;
        j->work.region = r;
}

/* An engine thread's job on region r whose reply comes in the pipeline's order. */
static sortd__dispatch_action region_request(const sortd__dispatch_ctx *d, sortd__job_op op,
                                             sortd__region *r, uint64_t id)
{
        sortd__job *j = sortd__pipeline_push(d->out, id);

        if (!j)
                return no_memory(d);
        region_job(d, j, op, r);
        return (sortd__dispatch_action){.todo = SORTD__DISPATCH_SUBMIT, .job = j};
}

/* A new region goes to the engine thread, which opens it; the reply comes from there. */
static sortd__dispatch_action open_region(const sortd__dispatch_ctx *d, uint64_t id,
                                          sortd__region *r)
{
        sortd__dispatch_action a;

        r->close_job = sortd__job_new(0);
        if (!r->close_job) {
                sortd__regions_forget(d->regions, r);
                sortd__pipeline_refuse(d->out, id, SORTD_E_NOMEM, "out of memory for a region");
                return nothing;
        }
        a = region_request(d, SORTD__JOB_OP_REGION_OPEN, r, id);
        if (a.close)
                sortd__regions_forget(d->regions, r);
        return a;
}

static sortd__dispatch_action register_memfd(const sortd__dispatch_ctx *d, const sortd__request *rq,
                                             const sortd__dispatch_frame *f)
{
        char why[256];
        int fd = f->take_fd(f->take_fd_arg);
        sortd__region *r;
        int err;

        if (fd == -ENOENT) {
                sortd__pipeline_refuse(d->out, rq->id, SORTD_E_INVAL,
                                       "RegisterRegion came without its memfd (SCM_RIGHTS)");
                return nothing;
        }
        if (fd < 0) {
                snprintf(why, sizeof(why), "could not take the memfd that came: %s", strerror(-fd));
                sortd__pipeline_refuse(d->out, rq->id, SORTD_E_SYSTEM, why);
                return nothing;
        }
        err = sortd__regions_add(d->regions, fd, rq->region_size, &r, why, sizeof(why));
        if (err < 0) {
                sortd__pipeline_refuse(d->out, rq->id, sortd__reply_status_of(err), why);
                return nothing;
        }
        return open_region(d, rq->id, r);
}

static sortd__dispatch_action register_cuda(const sortd__dispatch_ctx *d, const sortd__request *rq)
{
        const sortd__dispatch_env *env = d->env;
        sortd__dispatch_action a;
        char why[512];
        sortd__region *r;
        int dev, err;

        if (env->engines->n_devices == 0) {
                snprintf(why, sizeof(why),
                         "this daemon's engine (%s) sorts in host memory: CUDA IPC regions need "
                         "a GPU engine (sortd --engine cuda)",
                         env->engine_kind);
                sortd__pipeline_refuse(d->out, rq->id, SORTD_E_UNSUPPORTED, why);
                return nothing;
        }
        dev = served_device(env, rq->device_uuid, "the CUDA region", why, sizeof(why));
        if (dev < 0) {
                sortd__pipeline_refuse(d->out, rq->id, SORTD_E_INVAL, why);
                return nothing;
        }
        err = sortd__regions_add_cuda(d->regions, rq->ipc_handle, rq->region_offset,
                                      rq->region_size, &r, why, sizeof(why));
        if (err < 0) {
                sortd__pipeline_refuse(d->out, rq->id, sortd__reply_status_of(err), why);
                return nothing;
        }
        r->device = dev;
        a = open_region(d, rq->id, r);
        if (a.job)
                a.job->device = dev;
        return a;
}

/* A region that no sort holds goes to the engine thread to be closed; the reply comes after.
   Without memory the region stays CLOSING, and the connection's close closes it. */
static sortd__dispatch_action unregister_region(const sortd__dispatch_ctx *d,
                                                const sortd__request *rq)
{
        char why[256];
        sortd__region *r;
        int err = sortd__regions_begin_remove(d->regions, rq->region_id, &r, why, sizeof(why));

        if (err < 0) {
                sortd__pipeline_refuse(d->out, rq->id, sortd__reply_status_of(err), why);
                return nothing;
        }
        return region_request(d, SORTD__JOB_OP_REGION_CLOSE, r, rq->id);
}

void sortd__dispatch_region_done(const sortd__dispatch_ctx *d, sortd__job *j)
{
        sortd__region *r = j->work.region;
        sortd__reply m;

        if (j->work.status != SORTD_OK) {
                sortd__pipeline_error(d->out, &m, j->id, j->work.status, j->work.why);
        } else if (j->work.op == SORTD__JOB_OP_REGION_OPEN) {
                sortd__log(SORTD__LOG_DEBUG, "%s: region %llu, %llu bytes", d->name,
                           (unsigned long long)r->id, (unsigned long long)r->bytes);
                sortd__reply_registered(&m, j->id, r->id);
        } else {
                sortd__reply_unregistered(&m, j->id);
        }
        /* A region that did not open is gone; a closed one too, even if its close failed. */
        if (j->work.op == SORTD__JOB_OP_REGION_OPEN && j->work.status == SORTD_OK)
                sortd__region_ready(r);
        else
                sortd__regions_forget(d->regions, r);
        j->work.region = NULL;
        sortd__pipeline_fill(d->out, j, &m.r);
}

/* Each region's own close job (open_region). A region whose close an unregister already
   queued is closed once more, which does nothing. */
sortd__job *sortd__dispatch_closing(const sortd__dispatch_ctx *d)
{
        sortd__job *list = NULL;

        for (sortd__region *r = d->regions->head; r; r = r->next) {
                sortd__job *j = r->close_job;

                r->close_job = NULL;
                region_job(d, j, SORTD__JOB_OP_REGION_CLOSE, r);
                j->qnext = list;
                list = j;
        }
        return list;
}

static sortd__dispatch_action answer(const sortd__dispatch_ctx *d, const sortd__request *rq,
                                     const sortd__dispatch_frame *f)
{
        sortd__reply_facts facts;
        sortd__reply m;

        switch (rq->kind) {
        case SORTD__REQUEST_HELLO:
                if (rq->client_name[0])
                        sortd__log(SORTD__LOG_DEBUG, "%s: hello from '%s'", d->name,
                                   rq->client_name);
                d->env->facts(d->env->facts_arg, &facts);
                sortd__reply_hello(&m, rq->id, &facts);
                break;
        case SORTD__REQUEST_STATUS:
                d->env->facts(d->env->facts_arg, &facts);
                sortd__reply_status(&m, rq->id, &facts);
                break;
        case SORTD__REQUEST_PING:
                sortd__reply_ping(&m, rq->id, rq->nonce);
                break;
        case SORTD__REQUEST_SORT:
                return start_sort(d, rq, f->t_frame);
        case SORTD__REQUEST_REGION_SORT:
                return start_region_sort(d, rq, f->t_frame);
        case SORTD__REQUEST_REGISTER:
                return register_memfd(d, rq, f);
        case SORTD__REQUEST_REGISTER_CUDA:
                return register_cuda(d, rq);
        case SORTD__REQUEST_UNREGISTER:
                return unregister_region(d, rq);
        case SORTD__REQUEST_NONE:
                return nothing;
        }
        sortd__pipeline_answer(d->out, rq->id, &m.r);
        return nothing;
}

sortd__dispatch_action sortd__dispatch_message(const sortd__dispatch_ctx *d,
                                               const sortd__dispatch_frame *f)
{
        sortd__request_limits lim = {
                .capacity = d->env->capacity,
                .max_request_bytes = d->env->max_request_bytes,
        };
        sortd__dispatch_action a;
        sortd__request rq;

        sortd__request_decode(f->msg, f->len, f->payload_len, &lim, d->stats, &rq);
        a = answer(d, &rq, f);
        for (unsigned i = 0; i < rq.refusals; i++)
                sortd__pipeline_refuse(d->out, rq.id, rq.refusal[i].status, rq.refusal[i].why);
        /* A payload nothing reads (refused, or of an empty sort) is dropped. */
        if (a.todo != SORTD__DISPATCH_ADMIT)
                skip_payload(d, f->payload_len, &a);
        return a;
}
