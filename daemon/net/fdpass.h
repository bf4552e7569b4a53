/*
 * File descriptors that come with a connection's bytes (fdpass.c). A connection's pipe is
 * opened with ipc = 1, so libuv reads it with recvmsg and keeps each SCM_RIGHTS fd as a
 * pending handle; it hands out only pipe, TCP and UDP handles, so these take a pending fd out
 * as a plain fd of the caller's (a memfd, for a region).
 */
#ifndef SORTD_DAEMON_FDPASS_H
#define SORTD_DAEMON_FDPASS_H

#include <uv.h>

/* The oldest fd pending on p, now the caller's to close (close-on-exec); -ENOENT when none is
   pending, or another negative errno when one could not be taken. */
int sortd__fdpass_take(uv_pipe_t *p);
/* Closes every fd pending on p; returns how many there were. */
unsigned sortd__fdpass_drop_all(uv_pipe_t *p);

#endif
