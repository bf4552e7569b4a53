/*
 * Every header of daemon/, for the tests and tools that reach inside the daemon. The daemon's
 * own files include only the headers of the steps they use.
 *
 * Data path: socket -> frame (frame.c) -> admission and dispatch (conn.c) -> fair queue
 * (queue.c) -> engine thread (worker.c) -> completion back on the loop -> reply (conn.c).
 * Everything runs on the loop thread except what queue.c and worker.c say otherwise.
 */
#ifndef SORTD_DAEMON_INTERNAL_H
#define SORTD_DAEMON_INTERNAL_H

#include "admission.h"
#include "config.h"
#include "frame.h"
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
