/* The listening socket and the connections taken off it (listener.c). */
#ifndef SORTD_DAEMON_LISTENER_H
#define SORTD_DAEMON_LISTENER_H

#include "server.h"

/*
 * Claims the socket before the engine is made, with no loop yet: the one systemd passed
 * (srv->activated), else srv->cfg.socket, bound and listening. 0, or a negative errno (logged
 * with sortd__server_fail). Whatever it claimed, even when it fails, is sortd__listener_close's to
 * let go.
 */
int sortd__listener_claim(sortd__server *srv);
/*
 * Adopts the claimed socket into srv->loop and accepts every connection from then on, gone
 * called as each one closes. 0, or a libuv error (logged); srv->listening says whether
 * srv->listener must be closed.
 */
int sortd__listener_open(sortd__server *srv, sortd__conn_gone_fn gone);
/* Stops listening: removes the socket file this daemon bound and closes the socket, adopted
   or not. Any number of times, from any exit path after a claim. */
void sortd__listener_close(sortd__server *srv);

#endif
