/* What a connection's timeouts measure (see timeouts.h). */
#include <stdio.h>

#include "timeouts.h"

/* idle-timeout-ms counts from when the connection became idle, not from its last byte: a
   request that took longer than the timeout must not cost the client the next one it sends. */
void sortd__timeouts_idle(sortd__timeouts *t, bool idle, uint64_t now)
{
        if (idle && !t->idle)
                t->idle_since = now;
        t->idle = idle;
}

/*
 * write-timeout-ms counts from when the queued reply bytes last moved (or began to wait).
 * libuv's write queue grows only when the pipeline flushes and shrinks only as the socket
 * takes bytes, so looking before and after each flush, and at each check, sees every move: a
 * queue smaller than it was last seen.
 */
void sortd__timeouts_writes(sortd__timeouts *t, size_t queued, uint64_t now)
{
        if (queued && (queued < t->wq_seen || t->wq_seen == 0))
                t->write_since = now;
        t->wq_seen = queued;
}

/*
 * The reaper reads the clock once for every connection, and closing one of them can wake
 * another in the same pass (the memory it frees admits a waiter, whose reads start and stamp
 * its times after now): a time after now is no time gone by, not a wrap to 584 years.
 */
static uint64_t ms_since(uint64_t now, uint64_t t)
{
        return now > t ? (now - t) / 1000000 : 0;
}

bool sortd__timeouts_passed(const sortd__timeouts *t, const sortd__timeouts_limits *lim,
                            const sortd__timeouts_now *seen, uint64_t now, char *why, size_t len)
{
        uint64_t ms = ms_since(now, t->write_since);

        if (t->wq_seen && lim->write_ms && ms >= lim->write_ms) {
                snprintf(why, len,
                         "none of its %zu queued reply bytes taken for %llu ms (write-timeout-ms)",
                         t->wq_seen, (unsigned long long)ms);
                return true;
        }
        if (!seen->reading)
                return false;
        ms = ms_since(now, t->last_byte);
        if (seen->mid_frame && lim->frame_ms && ms >= lim->frame_ms) {
                snprintf(why, len, "no byte of its request for %llu ms (frame-timeout-ms)",
                         (unsigned long long)ms);
                return true;
        }
        /* A request answered at once (a ping) never shows the connection busy: its last byte
           starts the count again. */
        ms = ms_since(now, t->idle_since > t->last_byte ? t->idle_since : t->last_byte);
        if (t->idle && seen->idle && lim->idle_ms && ms >= lim->idle_ms) {
                snprintf(why, len, "idle for %llu ms (idle-timeout-ms)", (unsigned long long)ms);
                return true;
        }
        return false;
}
