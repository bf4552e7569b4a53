/*
 * The server (server.c): configuration, engine, listener, signals, the drain, and what every
 * connection shares (the queue, admission and its host pool, the counters). Everything here
 * runs on the loop thread but what queue.c and worker.c say otherwise.
 */
#ifndef SORTD_DAEMON_SERVER_H
#define SORTD_DAEMON_SERVER_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "access.h"
#include "admission.h"
#include "config.h"
#include "engine.h"
#include "hostpool.h"
#include "listener.h"
#include "conn.h"
#include "devices.h"
#include "engines.h"
#include "log.h"
#include "recovery.h"
#include "region.h"
#include "stats.h"

/* capacity=auto on the cpu engine, which has no device memory to size it by. */
#define SORTD__SERVER_CPU_CAPACITY (16u << 20)

/* A device the daemon was asked to serve: what the driver says of it, and how it went. */
typedef struct sortd__server_device {
        sortd_device_info info;
        int numa_node; /* -1: unknown */
        bool pinned;   /* its engines were made, and its threads run, on cpus */
        cpu_set_t cpus;
        int index;                  /* in srv->engines.devices; -1: left out at start-up */
        unsigned first_lane, lanes; /* its lanes' engines and recoveries in srv */
        char reason[512];           /* its self-check's account, or why it was left out */
        sortd__recovery_device recovery;
} sortd__server_device;

typedef struct sortd__server {
        uv_loop_t *loop;
        sortd__config cfg;
        sortd_engine *engine;     /* the first lane's: capacity, the host pool, the CPU path */
        char engine_reason[1024]; /* how the engines were chosen, their self-checks: logs, Status */
        /* Every lane's first engine, and what replaces it when its device is lost. */
        sortd_engine *lane_engines[SORTD__ENGINES_MAX_LANES];
        sortd__recovery recovery[SORTD__ENGINES_MAX_LANES];
        unsigned n_lanes;
        sortd__server_device devices[SORTD__DEVICES_MAX];
        unsigned n_devices, n_serving;
        sortd__engines engines; /* the lanes' queues and threads, the CPU path beside them */
        sortd__admission adm;
        sortd__hostpool pool; /* request buffers' memory, for admission; off on cpu by default */
        sortd__region_limits regions; /* every connection's regions together */
        sortd__listener listener;
        /* What the connections see of the server (conn.h, dispatch.h). */
        sortd__conn_limits conn_limits;
        sortd__dispatch_env env;
        sortd__conn_ctx conn_ctx;
        uv_signal_t sigterm, sigint, sighup; /* sighup: logged, nothing reloaded */
        uv_timer_t watchdog, drain_timer, reaper;
        bool watchdog_on, reaper_on, draining;
        uint64_t started_ns;
        sortd__conn *conns; /* every open connection: the server's list alone */
        sortd__stats stats;
        /* Why start-up failed, for the log and STATUS=, and the exit status it means: 1, or 2
           where a setting or sortd.socket is wrong and a restart would fail again (sortd(8)).
           0 while nothing failed. As long as a log line, so that it holds an engine's reason and
           its status whole. */
        int exit_status;
        char failure[SORTD__LOG_LINE_MAX];
} sortd__server;

/* Logs a start-up failure as an error and keeps the first one as srv's failure. */
void sortd__server_fail(sortd__server *srv, int status, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* main.c's whole body. */
int sortd__server_run(int argc, char **argv);

#endif
