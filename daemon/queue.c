/*
 * The fair queue: each connection has a flow (its FIFO of sorts); flows with work form a ring,
 * and the engine thread takes one job from the ring's head flow, then moves that flow to the
 * tail. A client that pipelines a thousand sorts gets one turn in n, not the engine. A batch
 * is the same turns taken in one go: small sorts, one from each flow in ring order, as many
 * rounds as fit.
 */
#include "queue.h"

int sortd__fq_init(sortd__fair_queue *q)
{
        *q = (sortd__fair_queue){0};
        if (pthread_mutex_init(&q->mu, NULL) != 0)
                return -1;
        if (pthread_cond_init(&q->cv, NULL) != 0) {
                pthread_mutex_destroy(&q->mu);
                return -1;
        }
        return 0;
}

void sortd__fq_destroy(sortd__fair_queue *q)
{
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
}

static void ring_append(sortd__fair_queue *q, sortd__flow *f)
{
        f->ring_next = NULL;
        f->in_ring = true;
        if (q->ring_tail)
                q->ring_tail->ring_next = f;
        else
                q->ring_head = f;
        q->ring_tail = f;
}

static void ring_remove(sortd__fair_queue *q, sortd__flow *f)
{
        sortd__flow **pp = &q->ring_head, *prev = NULL;

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

void sortd__fq_push(sortd__fair_queue *q, sortd__flow *f, sortd__job *j)
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

/* Takes the head flow's first job and moves the flow to the ring's tail. Locked, ring not empty. */
static sortd__job *take_head(sortd__fair_queue *q)
{
        sortd__flow *f = q->ring_head;
        sortd__job *j = f->head;

        f->head = j->qnext;
        if (!f->head)
                f->tail = NULL;
        j->qnext = NULL;
        q->ring_head = f->ring_next;
        if (!q->ring_head)
                q->ring_tail = NULL;
        f->in_ring = false;
        f->ring_next = NULL;
        if (f->head)
                ring_append(q, f);
        q->queued--;
        return j;
}

/* Waits for work the loop thread has not claimed the engine over; false once the queue is
   closed and empty. Locked. */
static bool wait_for_work(sortd__fair_queue *q)
{
        q->busy = false;
        while ((!q->ring_head || q->claimed) && !q->closing)
                pthread_cond_wait(&q->cv, &q->mu);
        q->busy = q->ring_head != NULL;
        return q->busy;
}

sortd__job *sortd__fq_pop(sortd__fair_queue *q)
{
        sortd__job *j = NULL;

        pthread_mutex_lock(&q->mu);
        if (wait_for_work(q))
                j = take_head(q);
        pthread_mutex_unlock(&q->mu);
        return j;
}

static bool small_sort(const sortd__job *j, const sortd__batch_limits *lim)
{
        return j->op == SORTD__OP_SORT && j->n <= lim->member_keys;
}

sortd__job *sortd__fq_pop_batch(sortd__fair_queue *q, const sortd__batch_limits *lim, size_t *count)
{
        sortd__job *first = NULL, *last;
        uint64_t keys, bytes;

        *count = 0;
        pthread_mutex_lock(&q->mu);
        if (!wait_for_work(q))
                goto out;
        first = last = take_head(q);
        *count = 1;
        if (!small_sort(first, lim))
                goto out;
        keys = first->n;
        bytes = first->sizes.reply_len;
        while (q->ring_head && *count < lim->max_jobs) {
                const sortd__job *next = q->ring_head->head;

                /* The head flow's next job, or none: a flow's order is its replies' order. */
                if (!small_sort(next, lim) || keys + next->n > lim->max_keys ||
                    bytes + next->sizes.reply_len > lim->max_bytes)
                        break;
                keys += next->n;
                bytes += next->sizes.reply_len;
                last->qnext = take_head(q);
                last = last->qnext;
                ++*count;
        }
out:
        pthread_mutex_unlock(&q->mu);
        return first;
}

bool sortd__fq_claim(sortd__fair_queue *q)
{
        bool ok;

        pthread_mutex_lock(&q->mu);
        ok = !q->busy && !q->ring_head && !q->claimed && !q->closing;
        q->claimed = ok;
        pthread_mutex_unlock(&q->mu);
        return ok;
}

void sortd__fq_release(sortd__fair_queue *q)
{
        pthread_mutex_lock(&q->mu);
        q->claimed = false;
        if (q->ring_head || q->closing)
                pthread_cond_signal(&q->cv);
        pthread_mutex_unlock(&q->mu);
}

sortd__job *sortd__fq_cancel(sortd__fair_queue *q, sortd__flow *f)
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

void sortd__fq_close(sortd__fair_queue *q)
{
        pthread_mutex_lock(&q->mu);
        q->closing = true;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
}

size_t sortd__fq_length(sortd__fair_queue *q)
{
        size_t n;

        pthread_mutex_lock(&q->mu);
        n = q->queued;
        pthread_mutex_unlock(&q->mu);
        return n;
}
