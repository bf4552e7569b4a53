/* The engines as the connections see them (see engines.h). */
#include "engines.h"

int sortd__engines_init(sortd__engines *e, uint64_t loop_sort_keys)
{
        int r;

        e->loop_sort_keys = loop_sort_keys;
        r = sortd__queue_init(&e->queue);
        if (r < 0)
                return r;
        r = sortd__queue_init(&e->cpu_queue);
        if (r < 0)
                sortd__queue_destroy(&e->queue);
        return r;
}

void sortd__engines_destroy(sortd__engines *e)
{
        sortd__queue_destroy(&e->cpu_queue);
        sortd__queue_destroy(&e->queue);
}

int sortd__engines_start(sortd__engines *e, uv_loop_t *loop, sortd_engine *engine,
                         const sortd__queue_batch_limits *lim, sortd__worker_complete_fn complete,
                         sortd__worker_replace_fn replace, void *replace_arg)
{
        int r;

        sortd__worker_on_loss(&e->worker, replace, replace_arg);
        r = sortd__worker_start(&e->worker, loop, engine, &e->queue, lim, complete, NULL);
        if (r == 0 && e->route.cpu) {
                r = sortd__worker_start(&e->cpu_worker, loop, e->route.cpu, &e->cpu_queue, lim,
                                        complete, NULL);
                if (r < 0)
                        sortd__worker_stop(&e->worker);
        }
        return r;
}

void sortd__engines_stop(sortd__engines *e)
{
        sortd__worker_stop(&e->worker);
        sortd__worker_stop(&e->cpu_worker);
}

/* A small sort that waits for nobody, sorted here on the loop thread (loop-sort-keys). */
static bool sort_here(sortd__engines *e, sortd__job *j)
{
        return j->work.op == SORTD__JOB_OP_SORT && j->work.n <= e->loop_sort_keys &&
               sortd__worker_run_here(j->cpu_path ? &e->cpu_worker : &e->worker, j);
}

bool sortd__engines_submit(sortd__engines *e, sortd__engines_flows *f, sortd__job *j, bool here)
{
        if (j->work.shared)
                sortd__turns_take(&f->turns, j, &e->queue, &e->cpu_queue);
        j->t_read = uv_hrtime();
        j->cpu_path = sortd__route_cpu_path(&e->route, j);
        if (here && sort_here(e, j)) {
                j->state = SORTD__JOB_DONE;
                return true;
        }
        j->state = SORTD__JOB_QUEUED;
        if (j->cpu_path)
                sortd__queue_push(&e->cpu_queue, &f->cpu_flow, j);
        else
                sortd__queue_push(&e->queue, &f->flow, j);
        return false;
}

static sortd__job *append(sortd__job *list, sortd__job *more)
{
        sortd__job *last = list;

        if (!list)
                return more;
        while (last->qnext)
                last = last->qnext;
        last->qnext = more;
        return list;
}

sortd__job *sortd__engines_cancel(sortd__engines *e, sortd__engines_flows *f)
{
        sortd__job *list = sortd__queue_cancel(&e->queue, &f->flow);

        return append(list, sortd__queue_cancel(&e->cpu_queue, &f->cpu_flow));
}

size_t sortd__engines_queued(sortd__engines *e)
{
        return sortd__queue_length(&e->queue) + sortd__queue_length(&e->cpu_queue);
}
