/* The listening socket and the connections taken off it (listener.c). */
#ifndef SORTD_DAEMON_LISTENER_H
#define SORTD_DAEMON_LISTENER_H

#include <stdbool.h>

#include "server.h"

/*
 * Listens on the socket systemd passed (activated: true), else binds srv->cfg.socket, and
 * accepts every connection from then on, gone called as each one closes. 0, or a libuv error
 * (logged); srv->listening says whether srv->listener must be closed.
 */
int sortd__listener_open(sortd__server *srv, sortd__conn_gone_fn gone, bool *activated);

#endif
