/*
 * The fair queue: each connection has a flow (its FIFO of sorts); flows with work form a ring,
 * and the engine thread takes one job from the ring's head flow, then moves that flow to the
 * tail. A client that pipelines a thousand sorts gets one turn in n, not the engine.
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

sortd__job *sortd__fq_pop(sortd__fair_queue *q)
{
        sortd__flow *f;
        sortd__job *j;

        pthread_mutex_lock(&q->mu);
        while (!q->ring_head && !q->closing)
                pthread_cond_wait(&q->cv, &q->mu);
        f = q->ring_head;
        if (!f) {
                pthread_mutex_unlock(&q->mu);
                return NULL;
        }
        j = f->head;
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
        pthread_mutex_unlock(&q->mu);
        return j;
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
