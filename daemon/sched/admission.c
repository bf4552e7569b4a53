/*
 * Admission: request buffers and the bytes in flight. First come, first served: a sort that
 * finds others in line queues behind them, so a large request is not overtaken forever by
 * small ones; and with nothing in flight a request always goes, so progress is guaranteed.
 *
 * But a waiter whose connection leaves replies unread (bytes in its socket's write queue)
 * holds nobody up: those behind it go first while memory allows. Its replies hold memory
 * only its client can free, by reading; one that never reads would otherwise stop every
 * other client's sorts for ever. It keeps its place, and holds the line again once its
 * client reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "admission.h"
#include "pipeline.h"

/*
 * Request buffers come from the host pool where it has room: on a GPU engine they are then
 * pinned, and the engine moves them at full speed. The rest come from the heap, as below.
 *
 * Heap buffers of 4 MiB and more are their own mappings with transparent huge pages asked
 * for: the engine's passes over them then miss the TLB far less, and a freed one goes back to
 * the system at once (the RSS follows the in-flight bytes).
 */
#define MAPPED_MIN (4u << 20)

static uint8_t *heap_alloc(size_t n)
{
        void *p;

        if (n < MAPPED_MIN)
                return aligned_alloc(64, (n + 63) & ~(size_t)63);
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return NULL;
        madvise(p, n, MADV_HUGEPAGE);
        return p;
}

static void heap_free(uint8_t *p, size_t n)
{
        if (!p)
                return;
        if (n < MAPPED_MIN)
                free(p);
        else
                munmap(p, n);
}

/* j's buffer of n bytes, from the pool or else the heap (a miss, when the pool is on). */
static void buffer_alloc(sortd__admission *a, sortd__job *j, size_t n)
{
        j->buf = sortd__hostpool_alloc(a->pool, n);
        j->buf_pooled = j->buf != NULL;
        j->buf_bytes = n;
        if (j->buf)
                return;
        if (sortd__hostpool_on(a->pool))
                a->stats->host_pool_misses++;
        j->buf = heap_alloc(n);
}

static void buffer_free(sortd__admission *a, sortd__job *j)
{
        if (j->buf_pooled)
                sortd__hostpool_free(a->pool, j->buf, j->buf_bytes);
        else
                heap_free(j->buf, j->buf_bytes);
}

static size_t buffer_bytes(const sortd__job *j, size_t *vals_off)
{
        /* Values start 8-aligned: u8 keys may leave the keys an odd length. */
        *vals_off = (size_t)((j->sizes.keys_bytes + 7) & ~(uint64_t)7);
        return *vals_off + (size_t)j->sizes.vals_bytes;
}

static void charge(sortd__admission *a, sortd__job *j, size_t bytes)
{
        j->charged = bytes;
        a->stats->inflight_bytes += bytes;
        if (a->stats->inflight_bytes > a->stats->inflight_peak)
                a->stats->inflight_peak = a->stats->inflight_bytes;
}

/* Gives j its buffer; false if the in-flight limit says wait. */
static bool try_charge(sortd__admission *a, sortd__job *j)
{
        size_t need = buffer_bytes(j, &j->vals_off);

        if (a->stats->inflight_bytes && a->stats->inflight_bytes + need > a->max_inflight_bytes)
                return false;
        buffer_alloc(a, j, need);
        if (!j->buf) {
                a->stats->sorts_failed++; /* done here: no engine's outcome will count it */
                j->status = SORTD_E_NOMEM;
                snprintf(j->why, sizeof(j->why), "cannot allocate %zu bytes", need);
                j->state = SORTD__JOB_DONE;
                return true;
        }
        charge(a, j, need);
        return true;
}

void sortd__admission_init(sortd__admission *a, uint64_t max_inflight_bytes, sortd__hostpool *pool,
                           sortd__stats *stats, sortd__admission_admitted_fn admitted)
{
        *a = (sortd__admission){
                .max_inflight_bytes = max_inflight_bytes,
                .pool = pool,
                .stats = stats,
                .admitted = admitted,
        };
}

/* Whether w keeps those behind it waiting: it does while its client reads its replies. */
static bool holds_line(const sortd__admission_waiter *w)
{
        return !sortd__pipeline_unread(w->replies);
}

/* Whether a newcomer may go before those in line: none of them holds it. */
static bool line_open(const sortd__admission *a)
{
        for (const sortd__admission_waiter *w = a->head; w; w = w->next)
                if (holds_line(w))
                        return false;
        return true;
}

bool sortd__admission_admit(sortd__admission *a, sortd__admission_waiter *w, sortd__job *j,
                            const sortd__pipeline *replies)
{
        w->replies = replies;
        if (line_open(a) && try_charge(a, j))
                return true;
        w->job = j;
        w->next = NULL;
        if (a->tail)
                a->tail->next = w;
        else
                a->head = w;
        a->tail = w;
        return false;
}

void sortd__admission_leave(sortd__admission *a, sortd__admission_waiter *w)
{
        sortd__admission_waiter **pp = &a->head, *prev = NULL;

        if (!w->job)
                return;
        while (*pp && *pp != w) {
                prev = *pp;
                pp = &(*pp)->next;
        }
        if (*pp) {
                *pp = w->next;
                if (a->tail == w)
                        a->tail = prev;
        }
        w->job = NULL;
        w->next = NULL;
}

/* In order, up to the first waiter that gets no memory and holds the line. After each one
   admitted the walk starts again: its callback may change the line. */
static void admit_waiting(sortd__admission *a)
{
        sortd__admission_waiter *w = a->head;

        while (w) {
                if (try_charge(a, w->job)) {
                        sortd__admission_leave(a, w);
                        a->admitted(w);
                        w = a->head;
                } else if (!holds_line(w)) {
                        w = w->next;
                } else {
                        return;
                }
        }
}

void sortd__admission_replies_wait(sortd__admission *a)
{
        admit_waiting(a);
}

void sortd__admission_release(sortd__admission *a, sortd__job *j)
{
        size_t released = j->charged;

        a->stats->inflight_bytes -= j->charged;
        buffer_free(a, j);
        free(j->out);
        free(j);
        if (released)
                admit_waiting(a);
}
