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
#include "admission.h"

static void charge(sortd__admission *a, size_t bytes)
{
        a->stats->inflight_bytes += bytes;
        if (a->stats->inflight_bytes > a->stats->inflight_peak)
                a->stats->inflight_peak = a->stats->inflight_bytes;
}

/* With nothing in flight a request always goes, however large: progress is guaranteed. */
static bool fits(const sortd__admission *a, size_t bytes)
{
        return !a->stats->inflight_bytes ||
               a->stats->inflight_bytes + bytes <= a->max_inflight_bytes;
}

void sortd__admission_init(sortd__admission *a, uint64_t max_inflight_bytes, sortd__stats *stats)
{
        *a = (sortd__admission){
                .max_inflight_bytes = max_inflight_bytes,
                .stats = stats,
        };
}

/* Whether w keeps those behind it waiting: it does while its client reads its replies. */
static bool holds_line(const sortd__admission_waiter *w)
{
        return uv_stream_get_write_queue_size(w->replies) == 0;
}

/* Whether a newcomer may go before those in line: none of them holds it. */
static bool line_open(const sortd__admission *a)
{
        for (const sortd__admission_waiter *w = a->head; w; w = w->next)
                if (holds_line(w))
                        return false;
        return true;
}

bool sortd__admission_charge(sortd__admission *a, sortd__admission_waiter *w, size_t bytes,
                             const uv_stream_t *replies)
{
        w->replies = replies;
        if (line_open(a) && fits(a, bytes)) {
                charge(a, bytes);
                return true;
        }
        w->bytes = bytes;
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

        if (!w->bytes)
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
        w->bytes = 0;
        w->next = NULL;
}

/* In order, up to the first waiter that gets no memory and holds the line. After each one
   admitted the walk starts again: its callback may change the line. */
static void admit_waiting(sortd__admission *a)
{
        sortd__admission_waiter *w = a->head;

        while (w) {
                if (fits(a, w->bytes)) {
                        charge(a, w->bytes);
                        sortd__admission_leave(a, w);
                        w->admitted(w);
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

void sortd__admission_uncharge(sortd__admission *a, size_t bytes)
{
        a->stats->inflight_bytes -= bytes;
        if (bytes)
                admit_waiting(a);
}
