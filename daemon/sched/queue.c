/*
 * The fair queue: each connection has a flow (its FIFO of sorts); flows with work form a ring,
 * and the engine thread takes one job from the ring's head flow, then moves that flow to the
 * tail. A client that pipelines a thousand sorts gets one turn in n, not the engine. A batch
 * is the same turns taken in one go: small inline sorts, one from each flow in ring order, as
 * many rounds as fit.
 */
#include "queue.h"

int sortd__queue_init(sortd__queue *q)
{
        int r;

        *q = (sortd__queue){0};
        r = pthread_mutex_init(&q->mu, NULL);
        if (r != 0)
                return -r;
        r = pthread_cond_init(&q->cv, NULL);
        if (r != 0) {
                pthread_mutex_destroy(&q->mu);
                return -r;
        }
        return 0;
}

void sortd__queue_destroy(sortd__queue *q)
{
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
}

static void ring_append(sortd__queue *q, sortd__queue_flow *f)
{
        f->ring_next = NULL;
        f->in_ring = true;
        if (q->ring_tail)
                q->ring_tail->ring_next = f;
        else
                q->ring_head = f;
        q->ring_tail = f;
}

static void ring_remove(sortd__queue *q, sortd__queue_flow *f)
{
        sortd__queue_flow **pp = &q->ring_head, *prev = NULL;

        while (*pp && *pp != f) {
                prev = *pp;
                pp = &(*pp)->ring_next;
        }
        if (!*pp)
                return;
        *pp = f->ring_next;
        if (q->ring_tail == f)
                q->ring_tail = prev;
        f->in_ring = false;
        f->ring_next = NULL;
}

void sortd__queue_push(sortd__queue *q, sortd__queue_flow *f, sortd__job *j)
{
        j->qnext = NULL;
        pthread_mutex_lock(&q->mu);
        if (f->tail)
                f->tail->qnext = j;
        else
                f->head = j;
        f->tail = j;
        if (!f->in_ring)
                ring_append(q, f);
        q->queued++;
        pthread_cond_signal(&q->cv);
        pthread_mutex_unlock(&q->mu);
}

/* Takes f's first job and moves f to the ring's tail. Locked, f in the ring. */
static sortd__job *take(sortd__queue *q, sortd__queue_flow *f)
{
        sortd__job *j = f->head;

        f->head = j->qnext;
        if (!f->head)
                f->tail = NULL;
        j->qnext = NULL;
        ring_remove(q, f);
        if (f->head)
                ring_append(q, f);
        q->queued--;
        return j;
}

/* The first flow in ring order whose next job may start, or NULL. Locked. */
static sortd__queue_flow *runnable(sortd__queue *q)
{
        sortd__queue_flow *f = q->ring_head;

        while (f && !sortd__turns_now(f->head))
                f = f->ring_next;
        return f;
}

/*
 * Waits for the flow of a job that may start, and that the loop thread has not claimed the
 * engine over (a closing queue ignores the claim); NULL once the queue is closed and empty.
 * Locked. A closing queue still waits for a job whose turn will come: the sort before it
 * runs on another thread, which wakes this one when it ends.
 */
static sortd__queue_flow *wait_for_work(sortd__queue *q)
{
        sortd__queue_flow *f;

        q->busy = false;
        for (;;) {
                f = q->claimed && !q->closing ? NULL : runnable(q);
                if (f || (q->closing && !q->ring_head))
                        break;
                pthread_cond_wait(&q->cv, &q->mu);
        }
        q->busy = f != NULL;
        return f;
}

sortd__job *sortd__queue_pop(sortd__queue *q)
{
        sortd__job *j = NULL;
        sortd__queue_flow *f;

        pthread_mutex_lock(&q->mu);
        f = wait_for_work(q);
        if (f)
                j = take(q, f);
        pthread_mutex_unlock(&q->mu);
        return j;
}

/* Only an inline sort of a plain array (no segments, no top-k) joins a batch: its members run at
   once on different threads, and two sorts in one region would write the same memory (and its
   client expects them one by one). */
static bool small_sort(const sortd__job *j, const sortd__queue_batch_limits *lim)
{
        return j->work.op == SORTD__JOB_OP_SORT && !j->work.shared && sortd__job_plain(j) &&
               j->work.n <= lim->member_keys;
}

sortd__job *sortd__queue_pop_batch(sortd__queue *q, const sortd__queue_batch_limits *lim,
                                   size_t *count)
{
        sortd__job *first = NULL, *last;
        sortd__queue_flow *f;
        uint64_t keys, bytes;

        *count = 0;
        pthread_mutex_lock(&q->mu);
        f = wait_for_work(q);
        if (!f)
                goto out;
        first = last = take(q, f);
        *count = 1;
        if (!small_sort(first, lim))
                goto out;
        keys = first->work.n;
        bytes = first->work.sizes.reply_len;
        while (q->ring_head && *count < lim->max_jobs) {
                const sortd__job *next = q->ring_head->head;

                /* The head flow's next job, or none: a flow's order is its replies' order. */
                if (!small_sort(next, lim) || keys + next->work.n > lim->max_keys ||
                    bytes + next->work.sizes.reply_len > lim->max_bytes)
                        break;
                keys += next->work.n;
                bytes += next->work.sizes.reply_len;
                last->qnext = take(q, q->ring_head);
                last = last->qnext;
                ++*count;
        }
out:
        pthread_mutex_unlock(&q->mu);
        return first;
}

bool sortd__queue_claim(sortd__queue *q)
{
        bool ok;

        pthread_mutex_lock(&q->mu);
        ok = !q->busy && !q->ring_head && !q->claimed && !q->closing;
        q->claimed = ok;
        pthread_mutex_unlock(&q->mu);
        return ok;
}

void sortd__queue_release(sortd__queue *q)
{
        pthread_mutex_lock(&q->mu);
        q->claimed = false;
        if (q->ring_head || q->closing)
                pthread_cond_signal(&q->cv);
        pthread_mutex_unlock(&q->mu);
}

sortd__job *sortd__queue_cancel(sortd__queue *q, sortd__queue_flow *f)
{
        sortd__job *list, *j;

        pthread_mutex_lock(&q->mu);
        list = f->head;
        for (j = list; j; j = j->qnext)
                q->queued--;
        f->head = f->tail = NULL;
        if (f->in_ring)
                ring_remove(q, f);
        pthread_mutex_unlock(&q->mu);
        return list;
}

void sortd__queue_close(sortd__queue *q)
{
        pthread_mutex_lock(&q->mu);
        q->closing = true;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
}

size_t sortd__queue_length(sortd__queue *q)
{
        size_t n;

        pthread_mutex_lock(&q->mu);
        n = q->queued;
        pthread_mutex_unlock(&q->mu);
        return n;
}
