/*
 * Every header of daemon/, for the tests and tools that reach inside the daemon. The daemon's
 * own files include only the headers of the steps they use.
 *
 * Data path: net/ (listener.c, conn.c; frame.c reads the frames) -> request/ (request.c
 * decodes, dispatch.c decides) -> sched/ (admission.c charges the bytes, job.c takes the
 * buffer, engines.c submits: queue.c, worker.c on an engine thread) -> the completion back on
 * the loop -> request/ (reply.c packs, pipeline.c writes in order). Calls go down this path
 * only; where a lower step must tell a higher one, it calls a function pointer its owner set
 * (worker -> sortd__conn_complete, admission -> the waiter's admitted, pipeline -> the
 * connection's written, listener -> the server's accept, conn -> the server's gone).
 * Everything runs on the loop thread except what queue.c and worker.c say otherwise.
 */
#ifndef SORTD_DAEMON_INTERNAL_H
#define SORTD_DAEMON_INTERNAL_H

#include "admission.h"
#include "config.h"
#include "conn.h"
#include "dispatch.h"
#include "engines.h"
#include "frame.h"
#include "hostpool.h"
#include "job.h"
#include "listener.h"
#include "log.h"
#include "pipeline.h"
#include "queue.h"
#include "region.h"
#include "reply.h"
#include "request.h"
#include "route.h"
#include "server.h"
#include "stats.h"
#include "turns.h"
#include "worker.h"

#endif
