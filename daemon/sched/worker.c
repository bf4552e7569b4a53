/*
 * The engine thread: takes jobs from the fair queue, sorts (or opens and closes regions: every
 * engine call happens here), and hands them back to the loop. Small sorts come as batches
 * (sortd__queue_pop_batch), sorted in one engine call (sortd_engine_sort_batch); the rest one at
 * a time.
 * Sorts do not go to libuv's thread pool: it is shared with filesystem and DNS work and a
 * long sort there would stall both.
 *
 * Hand-off: the thread appends to done_head/done_tail under done_mu and wakes the loop only
 * when the list goes from empty to non-empty (uv_async_send coalesces anyway; this saves the
 * write to the eventfd). The loop takes the whole list in one locked step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "region.h"
#include "worker.h"

/* Segments and top-k: their offsets are the daemon's copy, checked (dispatch). */
static sortd_status sort_segments(sortd__worker *w, sortd__job *j)
{
        const sortd__job_work *k = &j->work;
        const sortd_segments *seg = k->segmented ? &k->seg : NULL;

        if (k->k)
                return sortd_engine_topk(w->engine, &k->desc, seg, k->k, sortd__job_memory(j),
                                         k->keys, k->vals, k->out_keys, k->out_vals, (size_t)k->n);
        return sortd_engine_sort_segments(w->engine, &k->desc, seg, sortd__job_memory(j), k->keys,
                                          k->vals, (size_t)k->n);
}

/* Key columns: each column's keys at its offset in their buffer (sortd_columns_offset). */
static sortd_status sort_columns(sortd__worker *w, sortd__job *j)
{
        const sortd__job_work *k = &j->work;
        void *keys[SORTD_MAX_COLUMNS];

        for (unsigned i = 0; i < k->cols.count; i++)
                keys[i] = k->keys + sortd_columns_offset(k->cols.col, k->cols.count, k->n, i);
        return sortd_engine_sort_columns(w->engine, k->cols.col, k->cols.count, k->desc.payload,
                                         SORTD_COLUMNS_AUTO, sortd__job_memory(j), keys, k->vals,
                                         (size_t)k->n);
}

static sortd_status sort(sortd__worker *w, sortd__job *j)
{
        size_t n = (size_t)j->work.n;
        sortd_status s;

        if (j->work.cols.count)
                s = sort_columns(w, j);
        else if (!sortd__job_plain(j))
                s = sort_segments(w, j);
        else if (j->work.op == SORTD__JOB_OP_SORT_DEVICE)
                s = sortd_engine_sort_device(w->engine, &j->work.desc, j->work.keys, j->work.vals,
                                             n);
        else if (j->work.shared) /* the client may write them meanwhile */
                s = sortd_engine_sort_shared(w->engine, &j->work.desc, j->work.keys, j->work.vals,
                                             n);
        else
                s = sortd_engine_sort(w->engine, &j->work.desc, j->work.keys, j->work.vals, n);
        /* An engine without it touched nothing: the CPU path may run it (engines.c). */
        j->work.unsupported = s == SORTD_E_UNSUPPORTED && j->work.cpu_fallback;
        if (s != SORTD_OK)
                snprintf(j->work.why, sizeof(j->work.why), "%s", sortd_engine_error(w->engine));
        return s;
}

/* t_done is taken before the turn ends: sort_ns is the engine's time, and what follows is the
   hand-back's (the reply's phase). Only a plain sort's call sets the device's time afresh. */
static void run_sort(sortd__worker *w, sortd__job *j)
{
        j->work.status = sort(w, j);
        j->work.t_done = uv_hrtime();
        if (sortd__job_plain(j))
                j->work.device_ns = (uint64_t)(sortd_engine_last_device_seconds(w->engine) * 1e9);
        if (!j->work.unsupported) /* else its turn goes with it to the CPU path */
                sortd__turns_end(j);
}

static void run_job(sortd__worker *w, sortd__job *j)
{
        j->work.t_sort = uv_hrtime();
        switch (j->work.op) {
        case SORTD__JOB_OP_SORT:
        case SORTD__JOB_OP_SORT_DEVICE:
                run_sort(w, j);
                return;
        case SORTD__JOB_OP_REGION_OPEN:
                j->work.status = sortd__region_engine_open(j->work.region, w->engine, j->work.why,
                                                           sizeof(j->work.why));
                break;
        case SORTD__JOB_OP_REGION_CLOSE:
                j->work.status = sortd__region_engine_close(j->work.region, j->work.why,
                                                            sizeof(j->work.why));
                sortd__turns_end(j);
                break;
        case SORTD__JOB_OP_NONE:
                break;
        }
        j->work.t_done = uv_hrtime();
}

/* Small sorts from many connections as one engine call; each keeps its own outcome. */
static void run_batch(sortd__worker *w, sortd__job *list, size_t count)
{
        sortd__job *j;
        uint64_t t = uv_hrtime();
        size_t i = 0;

        for (j = list; j; j = j->qnext, i++) {
                j->work.t_sort = t;
                j->work.batch_size = (uint16_t)count;
                j->work.batch_first = i == 0;
                w->items[i] = (sortd_engine_batch_item){.desc = j->work.desc,
                                                        .keys = j->work.keys,
                                                        .vals = j->work.vals,
                                                        .n = (size_t)j->work.n};
        }
        sortd_engine_sort_batch(w->engine, w->items, count);
        t = uv_hrtime();
        for (j = list, i = 0; j; j = j->qnext, i++) {
                j->work.status = w->items[i].status;
                snprintf(j->work.why, sizeof(j->work.why), "%s", w->items[i].why);
                j->work.t_done = t;
        }
}

/* Hands a qnext list of finished jobs to the loop. */
static void finished(sortd__worker *w, sortd__job *list)
{
        sortd__job *last = list;
        bool was_empty;

        while (last->qnext)
                last = last->qnext;
        pthread_mutex_lock(&w->done_mu);
        was_empty = !w->done_head;
        if (w->done_tail)
                w->done_tail->qnext = list;
        else
                w->done_head = list;
        w->done_tail = last;
        pthread_mutex_unlock(&w->done_mu);
        if (was_empty)
                uv_async_send(&w->async);
}

/* The jobs that failed with the lost engine have their replies; later ones get the new one. */
static void replace(sortd__worker *w)
{
        sortd_engine *next;

        if (!w->loss.replace || w->replace_failed)
                return;
        next = w->loss.replace(w->engine, w->loss.arg);
        if (next) {
                w->engine = next;
                return;
        }
        w->replace_failed = true;
        if (w->loss.drop)
                atomic_store(&w->dropped, true);
}

/* A dropped thread's jobs go back unrun, but for a region's close: the lost engine that opened
   the region releases it without its device, and no other engine may. */
static void bounce(sortd__worker *w, sortd__job *list)
{
        for (sortd__job *j = list; j; j = j->qnext) {
                if (j->work.op == SORTD__JOB_OP_REGION_CLOSE)
                        run_job(w, j);
                else
                        j->work.bounced = true;
        }
}

bool sortd__worker_run_here(sortd__worker *w, sortd__job *j)
{
        bool cpu;

        if (!sortd__turns_now(j) || !sortd__queue_claim(w->queue))
                return false;
        /* Only a CPU engine: a device's round trip would hold every connection's reads. */
        cpu = strcmp(sortd_engine_kind(w->engine), "cpu") == 0 && !sortd_engine_lost(w->engine);
        if (cpu) {
                run_job(w, j);
                if (sortd_engine_lost(w->engine))
                        replace(w);
        }
        sortd__queue_release(w->queue);
        return cpu;
}

static void *thread_main(void *arg)
{
        sortd__worker *w = arg;
        sortd__job *list;
        size_t count;

        /* Best effort: a CPU set the kernel refuses (taken offline since) leaves it anywhere. */
        if (w->pinned)
                (void)pthread_setaffinity_np(pthread_self(), sizeof(w->cpus), &w->cpus);
        while ((list = sortd__queue_pop_batch(w->queue, &w->limits, &count))) {
                if (w->loss.stale && !w->replace_failed && w->loss.stale(w->engine, w->loss.arg))
                        replace(w);
                if (atomic_load(&w->dropped))
                        bounce(w, list);
                else if (count == 1)
                        run_job(w, list);
                else
                        run_batch(w, list, count);
                finished(w, list);
                if (sortd_engine_lost(w->engine))
                        replace(w);
        }
        return NULL;
}

static void deliver(sortd__worker *w)
{
        sortd__job *list, *next;

        pthread_mutex_lock(&w->done_mu);
        list = w->done_head;
        w->done_head = w->done_tail = NULL;
        pthread_mutex_unlock(&w->done_mu);
        for (; list; list = next) {
                next = list->qnext;
                list->qnext = NULL;
                w->complete(list, w->arg);
        }
}

static void on_async(uv_async_t *a)
{
        deliver(a->data);
}

int sortd__worker_start(sortd__worker *w, uv_loop_t *loop, sortd_engine *e, sortd__queue *q,
                        const sortd__queue_batch_limits *lim, sortd__worker_complete_fn complete,
                        void *arg)
{
        int r;

        *w = (sortd__worker){
                .engine = e, .queue = q, .complete = complete, .arg = arg, .loss = w->loss};
        atomic_init(&w->dropped, false);
        if (lim && lim->member_keys && lim->max_jobs > 1) {
                w->limits = *lim;
                if (w->limits.max_jobs > SORTD__WORKER_BATCH_MAX_JOBS)
                        w->limits.max_jobs = SORTD__WORKER_BATCH_MAX_JOBS;
                w->items = calloc(w->limits.max_jobs, sizeof(*w->items));
                if (!w->items)
                        return UV_ENOMEM;
        } else {
                w->limits.max_jobs = 1; /* every pop takes one job */
        }
        if (pthread_mutex_init(&w->done_mu, NULL) != 0) {
                free(w->items);
                return UV_ENOMEM;
        }
        r = uv_async_init(loop, &w->async, on_async);
        if (r < 0) {
                pthread_mutex_destroy(&w->done_mu);
                free(w->items);
                return r;
        }
        w->async.data = w;
        r = -pthread_create(&w->thread, NULL, thread_main, w);
        if (r < 0) {
                uv_close((uv_handle_t *)&w->async, NULL);
                pthread_mutex_destroy(&w->done_mu);
                free(w->items);
                return r;
        }
        w->started = true;
        return 0;
}

void sortd__worker_on_cpus(sortd__worker *w, const cpu_set_t *cpus)
{
        w->cpus = *cpus;
        w->pinned = true;
}

void sortd__worker_on_loss(sortd__worker *w, const sortd__worker_loss *loss)
{
        w->loss = *loss;
}

void sortd__worker_stop(sortd__worker *w)
{
        if (!w->started)
                return;
        sortd__queue_close(w->queue);
        pthread_join(w->thread, NULL);
        deliver(w);
        uv_close((uv_handle_t *)&w->async, NULL);
        pthread_mutex_destroy(&w->done_mu);
        free(w->items);
        w->items = NULL;
        w->started = false;
}
