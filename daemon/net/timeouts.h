/*
 * What a connection's timeouts measure (timeouts.c): when its last byte came, when it became
 * idle, when its queued reply bytes last moved; and which timeout it has passed. No socket and
 * no clock of its own: the connection says what it sees and when.
 */
#ifndef SORTD_DAEMON_TIMEOUTS_H
#define SORTD_DAEMON_TIMEOUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sortd__timeouts {
        uint64_t last_byte;   /* when the last byte came (or reads started again) */
        uint64_t idle_since;  /* when it last became idle, while idle */
        uint64_t write_since; /* when its queued reply bytes last moved, while wq_seen > 0 */
        size_t wq_seen;       /* bytes in its write queue when last looked at */
        bool idle;            /* nothing in progress nor unanswered, since idle_since */
} sortd__timeouts;

/* The limits, in ms; 0: none. */
typedef struct sortd__timeouts_limits {
        uint64_t frame_ms, idle_ms, write_ms;
} sortd__timeouts_limits;

/* What the connection is doing when it is checked. */
typedef struct sortd__timeouts_now {
        bool reading;   /* its reads are on (reads the daemon stopped are no client's stall) */
        bool mid_frame; /* a frame, or a payload, is under way */
        bool idle;      /* nothing in progress nor unanswered */
} sortd__timeouts_now;

/* The connection is idle, or not, at now. */
void sortd__timeouts_idle(sortd__timeouts *t, bool idle, uint64_t now);
/* Its write queue holds queued bytes at now. */
void sortd__timeouts_writes(sortd__timeouts *t, size_t queued, uint64_t now);
/* Whether the connection has passed one of lim's timeouts at now; why says which. */
bool sortd__timeouts_passed(const sortd__timeouts *t, const sortd__timeouts_limits *lim,
                            const sortd__timeouts_now *seen, uint64_t now, char *why, size_t len);

#endif
