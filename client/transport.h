/*
 * libsortd's private transport (transport.c): the connection, its socket, and one framed
 * request or reply at a time. Shared only inside client/; the version script keeps every
 * sortd__ name out of the library's exports.
 */
#ifndef SORTD_CLIENT_TRANSPORT_H
#define SORTD_CLIENT_TRANSPORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sortd.h"
#include "wire.h"

struct sortd_conn {
        int fd;
        int timeout_ms;
        bool broken;
        sortd_status broken_status;
        atomic_bool interrupted; /* by sortd_interrupt, from another thread or a handler */
        uint64_t next_id;
        uint64_t outstanding;  /* submitted, not yet received */
        uint64_t replies_left; /* broken by the daemon's close after a refusal, but the replies
                                  it sent before, to this many of them, are in the socket */
        sortd_info info;
        char name[65];                /* sent in Hello: the daemon logs up to 64 bytes */
        int64_t deadline_ms;          /* of the call in progress; -1 = none */
        uint8_t *msg;                 /* SORTD__WIRE_MAX_MESSAGE bytes */
        struct sortd_region *regions; /* created on c and not yet destroyed (region.c) */
        struct {
                sortd_progress_fn *fn;
                void *user;
                sortd_progress_phase phase;
                uint64_t skip; /* frame bytes before the arrays (header and message) */
                uint64_t done, total;
        } progress;

        char err[256];
        char broken_err[256]; /* the err that broke c, which every call refused after says */
};

/* Records the call's message in c and returns s, so a failure is one return statement. */
sortd_status sortd__transport_fail(sortd_conn *c, sortd_status s, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* The stream is out of sync or gone: refuse everything from now on. */
sortd_status sortd__transport_breaks(sortd_conn *c, sortd_status s);

/*
 * Whether c refuses every call (with c->broken_status; c->err says why again): it is broken,
 * or sortd_interrupt was called on it. An interruption too late to fail the call it aimed at
 * (its whole reply was already in) breaks c here, at the next call, so that every later call
 * fails as interrupted, whatever else the socket still holds, replies_left included.
 */
bool sortd__transport_broken(sortd_conn *c);

/* Whether sortd_receive still takes a reply on broken c: replies_left, and no interruption. */
bool sortd__transport_replies_left(const sortd_conn *c);

/* Monotonic: a deadline must not move when the wall clock is set. */
int64_t sortd__transport_now_ms(void);

/* Every call starts here, so that one deadline covers all its waits and a success leaves "". */
void sortd__transport_start_call(sortd_conn *c);

/* Opens c->fd to the socket at path; a full backlog is waited out within the deadline. */
sortd_status sortd__transport_connect(sortd_conn *c, const char *path);

/* sortd_interrupt: shuts c->fd down, so that every wait on it ends. Async-signal-safe. */
void sortd__transport_interrupt(sortd_conn *c);

/* Closes c->fd if it is open; the fd is opened and closed only here. */
void sortd__transport_disconnect(sortd_conn *c);

/* Starts counting the arrays of one direction; skip bytes of the frame come first. */
void sortd__transport_progress_begin(sortd_conn *c, sortd_progress_phase phase, uint64_t skip,
                                     uint64_t total);

/* A reply's payload lands straight in the caller's buffer, so a reply is read in two steps. */
sortd_status sortd__transport_read_all(sortd_conn *c, void *buf, size_t len);

/* The most pieces a request's payload has: keys, values, segment offsets; or each key column
   and its padding, then the values. */
#define SORTD__TRANSPORT_MAX_PIECES (2 * SORTD_MAX_COLUMNS + 1)

/* One piece of a request's payload; a piece of len 0 is skipped. */
typedef struct sortd__transport_piece {
        const void *data;
        size_t len;
} sortd__transport_piece;

/*
 * Sends one request frame: header, the packed Request, then the count payload pieces
 * (SORTD__TRANSPORT_MAX_PIECES at most). pass_fd >= 0 (a region's memfd) goes with the frame's
 * first bytes as SCM_RIGHTS; -1 sends none.
 */
sortd_status sortd__transport_send_request(sortd_conn *c, const Sortd__Wire__Request *req,
                                           int pass_fd, const sortd__transport_piece *pieces,
                                           int count);

/*
 * Receives one reply frame for request id: *out is the unpacked Reply (free it), *payload_len
 * the bytes that follow it and remain to be read.
 */
sortd_status sortd__transport_recv_reply(sortd_conn *c, uint64_t id, Sortd__Wire__Reply **out,
                                         uint64_t *payload_len);

#endif
