/*
 * Every header of daemon/, for the tests and tools that reach inside the daemon. The daemon's
 * own files include only the headers of the steps they use.
 *
 * Data path: socket (conn.c) -> frame (frame.c) -> request (request.c, via dispatch.c) ->
 * admission (admission.c; its buffers from hostpool.c) -> fair queue (queue.c) -> engine
 * thread (worker.c) -> completion back on the loop -> reply (reply.c) written in order
 * (pipeline.c). Calls go down this path only; where a lower step must tell a higher one, it
 * calls a function pointer its owner set (worker -> conn_complete, admission -> conn_admitted,
 * pipeline -> the connection's written, conn -> the server's gone). Everything runs on the loop
 * thread except what queue.c and worker.c say otherwise.
 */
#ifndef SORTD_DAEMON_INTERNAL_H
#define SORTD_DAEMON_INTERNAL_H

#include "admission.h"
#include "config.h"
#include "conn.h"
#include "dispatch.h"
#include "frame.h"
#include "hostpool.h"
#include "job.h"
#include "log.h"
#include "pipeline.h"
#include "queue.h"
#include "reply.h"
#include "request.h"
#include "server.h"
#include "stats.h"
#include "worker.h"

#endif
