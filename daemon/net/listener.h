/*
 * The listening socket and the connections taken off it (listener.c). It knows nothing of
 * connections: each one waiting is handed to the accept callback its owner (the server) set,
 * and one the callback has no memory for is taken off and closed here. A failure is kept with
 * its line and exit status for the owner to report.
 */
#ifndef SORTD_DAEMON_LISTENER_H
#define SORTD_DAEMON_LISTENER_H

#include <stdbool.h>
#include <sys/un.h>

#include <uv.h>

#include "log.h"
#include "stats.h"

/* A connection waits on server: 0 once it is accepted (uv_accept), or a negative errno (no
   memory), and the listener closes it. */
typedef int (*sortd__listener_accept_fn)(void *arg, uv_stream_t *server);

typedef struct sortd__listener {
        char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* where to bind, unless passed */
        sortd__stats *stats;                                    /* connections_refused */
        uv_loop_t *loop;
        uv_pipe_t handle;
        bool listening; /* handle is initialised: sortd__listener_close closes it */
        int fd;         /* claimed, not yet adopted by the handle; -1: none */
        bool activated; /* passed by systemd, not bound: its file is never removed */
        bool bound;     /* path is a file this daemon bound, to remove when it stops */
        sortd__listener_accept_fn accept;
        void *accept_arg;
        uv_pipe_t dropped; /* takes a connection there is no memory for off the listener */
        bool dropping, drop_waiting;
        /* The first failure: 1, or 2 where a setting or sortd.socket is wrong and a restart
           would fail again (sortd(8)); 0 while nothing failed. */
        int exit_status;
        char failure[SORTD__LOG_LINE_MAX];
} sortd__listener;

/* l, to claim path (a setting that fits sun_path) unless systemd passed a socket. */
void sortd__listener_init(sortd__listener *l, const char *path, sortd__stats *stats);
/*
 * Claims the socket before the engine is made, with no loop yet: the one systemd passed
 * (l->activated), else l->path, bound and listening. 0, or a negative errno with l's failure
 * set. Whatever it claimed, even when it fails, is sortd__listener_close's to let go.
 */
int sortd__listener_claim(sortd__listener *l);
/*
 * Adopts the claimed socket into loop and hands every connection from then on to accept(arg,
 * ...). 0, or a libuv error with l's failure set; l->listening says whether the handle must be
 * closed.
 */
int sortd__listener_open(sortd__listener *l, uv_loop_t *loop, sortd__listener_accept_fn accept,
                         void *arg);
/* Stops listening: removes the socket file this daemon bound and closes the socket, adopted
   or not. Any number of times, from any exit path after a claim. */
void sortd__listener_close(sortd__listener *l);

#endif
