/*
 * The server: configuration, engine, the listening socket (listener.c), signals,
 * the SIGTERM drain, systemd notification and the status counters. sortd__server_run is main.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "conn.h"
#include "facts.h"
#include "listener.h"
#include "log.h"
#include "region.h"
#include "route.h"
#include "server.h"
#include "startup.h"
#include "sortd_version.h"

void sortd__server_fail(sortd__server *srv, int status, const char *fmt, ...)
{
        char line[sizeof(srv->failure)];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        sortd__log(SORTD__LOG_ERR, "%s", line);
        if (srv->exit_status)
                return;
        srv->exit_status = status;
        memcpy(srv->failure, line, sizeof(line));
}

/* SORTD_E_INVAL: a kind this build lacks, or settings it refuses: a restart fails the same
   way. A device that is absent or failing, or memory or threads short now, may come back. */
static int exit_status_of(sortd_status s)
{
        return s == SORTD_E_INVAL ? 2 : 1;
}

/* STOPPING=1 for systemd, with why when sortd__server_fail said it; the exit status. */
static int notify_stopping(const sortd__server *srv)
{
        if (srv->exit_status)
                sd_notifyf(0, "STOPPING=1\nSTATUS=%s", srv->failure);
        else
                sd_notify(0, "STOPPING=1");
        return srv->exit_status;
}

/* ---- engines ---- */

/* The engine, then the CPU path beside it; false (the start's failure said) if either fails. */
static bool start_engines(sortd__server *srv, const sortd_engine_config *ec)
{
        char why[512]; /* route.c's prefix, then the engine's reason: srv->failure holds both */
        sortd_status s = sortd__startup_engine(
                srv, ec, (enum sortd__recovery_policy)srv->cfg.on_device_loss);

        if (s != SORTD_OK) {
                sortd__server_fail(srv, exit_status_of(s), "%s (%s)", srv->engine_reason,
                                   sortd_strerror(s));
                return false;
        }
        /* An explicit cpu-path-keys it cannot meet ends the start, where serving without the
           CPU path would quietly ignore the setting. */
        s = sortd__startup_cpu_path(srv, why, sizeof(why));
        if (s != SORTD_OK)
                sortd__server_fail(srv, exit_status_of(s), "%s (%s)", why, sortd_strerror(s));
        return s == SORTD_OK;
}

/* ---- drain and shutdown ---- */

static void close_handle(uv_handle_t *h)
{
        if (!uv_is_closing(h))
                uv_close(h, NULL);
}

/* Every connection is gone while draining: close the rest so the loop ends. */
static void finish(sortd__server *srv)
{
        sortd__listener_close(&srv->listener);
        close_handle((uv_handle_t *)&srv->sigterm);
        close_handle((uv_handle_t *)&srv->sigint);
        close_handle((uv_handle_t *)&srv->sighup);
        close_handle((uv_handle_t *)&srv->drain_timer);
        if (srv->watchdog_on)
                close_handle((uv_handle_t *)&srv->watchdog);
        if (srv->reaper_on)
                close_handle((uv_handle_t *)&srv->reaper);
        sortd__engines_stop(&srv->engines);
}

/* The drain ends with the last connection. */
static void check_drained(sortd__server *srv)
{
        if (srv->draining && !srv->conns)
                finish(srv);
}

/* A connection has gone: off the list, and the last one ends a drain. */
static void on_conn_gone(sortd__conn *c, void *arg)
{
        sortd__server *srv = arg;

        if (c->prev)
                c->prev->next = c->next;
        else
                srv->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        srv->stats.connections--;
        check_drained(srv);
}

/* The listener's: a connection to accept. */
static int on_connection(void *arg, uv_stream_t *server)
{
        sortd__server *srv = arg;

        sortd__conn *c = sortd__conn_new(&srv->conn_ctx);

        if (!c)
                return -ENOMEM;
        c->next = srv->conns;
        if (srv->conns)
                srv->conns->prev = c;
        srv->conns = c;
        srv->stats.connections++;
        sortd__conn_start(c, server);
        return 0;
}

/* Ends a drain now: why says what ended it. */
static void close_all(sortd__server *srv, const char *why)
{
        sortd__log(SORTD__LOG_WARNING, "%s: closing the remaining connections", why);
        for (sortd__conn *c = srv->conns; c; c = c->next)
                sortd__conn_close(c);
}

static void on_drain_timeout(uv_timer_t *t)
{
        close_all(t->data, "drain timeout");
}

static void on_signal(uv_signal_t *s, int signum)
{
        sortd__server *srv = s->data;
        sortd__conn *c, *next;

        /* A second signal is an operator's "now" (Ctrl-C again, kill again): the drain ends as
           its timeout would end it, rather than after up to drain-timeout-ms more. */
        if (srv->draining) {
                close_all(srv, strsignal(signum));
                return;
        }
        srv->draining = true;
        sortd__log(SORTD__LOG_NOTICE, "%s: draining %llu connection(s), then exiting",
                   strsignal(signum), (unsigned long long)srv->stats.connections);
        sd_notify(0, "STOPPING=1\nSTATUS=draining");
        sortd__listener_close(
                &srv->listener); /* a new daemon may bind the path while this one drains */
        if (srv->cfg.drain_timeout_ms)
                uv_timer_start(&srv->drain_timer, on_drain_timeout, srv->cfg.drain_timeout_ms, 0);
        for (c = srv->conns; c; c = next) {
                next = c->next;
                sortd__conn_update(c);
        }
        check_drained(srv);
}

/*
 * SIGTERM and SIGINT are held (blocked) from before the socket is claimed until the loop's
 * handlers can take them: by their default action they would end the daemon while its engine
 * starts (seconds, for a self-check) and leave the socket file it bound. Threads made meanwhile
 * (the engines' workers, the engine threads) keep them held, so that they reach the loop thread.
 */
static void stop_signals(sigset_t *set)
{
        sigemptyset(set);
        sigaddset(set, SIGTERM);
        sigaddset(set, SIGINT);
}

static void hold_stop_signals(void)
{
        sigset_t set;

        stop_signals(&set);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/*
 * Once the loop's handlers are in place: whether a stop signal came while the engine started,
 * which ends the start before READY=1 (the signals stay held while it stops). If none did, they
 * are let through to on_signal: one that comes after the check is taken there.
 */
static bool stopped_while_starting(void)
{
        const struct timespec now = {0};
        sigset_t set;
        int sig;

        stop_signals(&set);
        sig = sigtimedwait(&set, NULL, &now);
        if (sig <= 0) {
                pthread_sigmask(SIG_UNBLOCK, &set, NULL);
                return false;
        }
        sortd__log(SORTD__LOG_NOTICE, "%s during start-up: stopping before serving",
                   strsignal(sig));
        return true;
}

/* Settings are read once, at start-up. SIGHUP, the usual request to read them again, would
   otherwise end the daemon at once: no drain, its queued sorts lost. */
static void on_sighup(uv_signal_t *s, int signum)
{
        sortd__log(SORTD__LOG_WARNING, "SIGHUP ignored: sortd does not reload its settings; "
                                       "restart it to apply a changed configuration");
}

static void on_watchdog(uv_timer_t *t)
{
        sd_notify(0, "WATCHDOG=1");
}

/* One clock read for every connection: conn.c takes a time stamped after it as no time gone
   by (a close may wake a connection later in the list). */
static void on_reaper(uv_timer_t *t)
{
        sortd__server *srv = t->data;
        uint64_t now = uv_hrtime();

        for (sortd__conn *c = srv->conns, *next; c; c = next) {
                next = c->next; /* a close unlinks c only later, in its handle's callback */
                sortd__conn_check_timeouts(c, now);
        }
}

/* Checks the connections' timeouts a few times per the shortest one, at most every second. */
static void start_reaper(sortd__server *srv)
{
        const uint64_t timeouts[] = {srv->cfg.frame_timeout_ms, srv->cfg.idle_timeout_ms,
                                     srv->cfg.write_timeout_ms};
        uint64_t t = 0;

        for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++)
                if (timeouts[i] && (!t || timeouts[i] < t))
                        t = timeouts[i];
        if (!t)
                return;
        t = t / 4 < 10 ? 10 : t / 4 > 1000 ? 1000 : t / 4;
        uv_timer_init(srv->loop, &srv->reaper);
        srv->reaper.data = srv;
        uv_timer_start(&srv->reaper, on_reaper, t, t);
        srv->reaper_on = true;
}

/* ---- run ---- */

/* What --help, --version, --print-config or --check-config printed reached stdout: status,
   else 1. "sortd --print-config >sortd.conf" on a full disk would exit 0 with a cut file. */
static int flushed(int status)
{
        if (fflush(stdout) == 0 && !ferror(stdout))
                return status;
        sortd__log(SORTD__LOG_ERR, "cannot write the standard output: %s", strerror(errno));
        return 1;
}

static int start_handles(sortd__server *srv)
{
        uint64_t usec;
        int r;

        uv_signal_init(srv->loop, &srv->sigterm);
        uv_signal_init(srv->loop, &srv->sigint);
        uv_signal_init(srv->loop, &srv->sighup);
        uv_timer_init(srv->loop, &srv->drain_timer);
        srv->sigterm.data = srv->sigint.data = srv->drain_timer.data = srv;
        r = uv_signal_start(&srv->sigterm, on_signal, SIGTERM);
        if (r == 0)
                r = uv_signal_start(&srv->sigint, on_signal, SIGINT);
        if (r == 0)
                r = uv_signal_start(&srv->sighup, on_sighup, SIGHUP);
        if (r < 0)
                return r;
        if (sd_watchdog_enabled(0, &usec) > 0 && usec >= 2000) {
                uv_timer_init(srv->loop, &srv->watchdog);
                uv_timer_start(&srv->watchdog, on_watchdog, usec / 2000, usec / 2000);
                srv->watchdog_on = true;
        }
        start_reaper(srv);
        return 0;
}

static int serve(sortd__server *srv)
{
        bool stop;
        int r;

        sortd__queue_batch_limits lim = {
                .member_keys = srv->cfg.batch_member_keys,
                .max_keys = srv->cfg.batch_max_keys,
                .max_bytes = srv->cfg.batch_max_bytes,
                .max_jobs = SORTD__WORKER_BATCH_MAX_JOBS,
        };

        r = sortd__engines_start(&srv->engines, srv->loop, &lim, sortd__conn_complete, NULL);
        if (r < 0) {
                sortd__server_fail(srv, 1, "cannot start the engine thread: %s", uv_strerror(r));
                return r;
        }
        r = start_handles(srv);
        if (r < 0)
                sortd__server_fail(srv, 1, "cannot watch for signals: %s", uv_strerror(r));
        stop = r < 0 || stopped_while_starting();
        if (!stop) {
                r = sortd__listener_open(&srv->listener, srv->loop, on_connection, srv);
                stop = r < 0;
                if (stop)
                        sortd__server_fail(srv, 1, "%s", srv->listener.failure);
        }
        if (stop) {
                srv->draining = true;
                finish(srv);
                uv_run(srv->loop, UV_RUN_DEFAULT);
                return r;
        }
        sortd__log(SORTD__LOG_NOTICE,
                   "serving on %s with engine %s (%s), capacity %zu, on %u device(s)",
                   srv->listener.activated ? "the socket passed by systemd" : srv->cfg.socket,
                   sortd_engine_kind(srv->engine), sortd_engine_device(srv->engine),
                   (size_t)sortd__server_capacity(srv), srv->n_serving);
        sd_notifyf(0, "READY=1\nSTATUS=serving with engine %s (%s), capacity %zu",
                   sortd_engine_kind(srv->engine), sortd_engine_device(srv->engine),
                   (size_t)sortd__server_capacity(srv));
        uv_run(srv->loop, UV_RUN_DEFAULT);
        return 0;
}

/* What the connections see of the server: its limits, counters and stages. */
static void wire_connections(sortd__server *srv)
{
        const sortd__config *cfg = &srv->cfg;

        srv->conn_limits = (sortd__conn_limits){
                .max_connections = cfg->max_connections,
                .max_pipeline = cfg->max_pipeline,
                .max_write_queue = cfg->max_write_queue,
                .frame_timeout_ms = cfg->frame_timeout_ms,
                .idle_timeout_ms = cfg->idle_timeout_ms,
                .write_timeout_ms = cfg->write_timeout_ms,
        };
        srv->env.capacity = sortd__server_capacity(srv);
        srv->env.max_request_bytes = cfg->max_request_bytes;
        srv->env.max_drain_bytes = cfg->max_drain_bytes;
        srv->env.engine_kind = sortd_engine_kind(srv->engine);
        srv->env.engines = &srv->engines;
        srv->env.facts = sortd__server_facts;
        srv->env.facts_arg = srv;
        srv->conn_ctx = (sortd__conn_ctx){
                .loop = srv->loop,
                .limits = &srv->conn_limits,
                .access = &cfg->access,
                .env = &srv->env,
                .draining = &srv->draining,
                .stats = &srv->stats,
                .adm = &srv->adm,
                .pool = &srv->pool,
                .engines = &srv->engines,
                .regions = &srv->regions,
                .gone = on_conn_gone,
                .gone_arg = srv,
        };
}

/* The lanes and their devices, for the engines to route to. With several devices a lane that
   loses its device and cannot make it again stops, and its jobs go to the others. */
static int add_lanes(sortd__server *srv)
{
        sortd__worker_loss loss = {.replace = sortd__recovery_replace,
                                   .stale = sortd__recovery_stale,
                                   .drop = srv->n_serving > 1};
        int r = 0;

        if (srv->n_serving == 0) {
                loss.arg = &srv->recovery[0];
                return sortd__engines_add_lane(&srv->engines, -1, srv->lane_engines[0], &loss);
        }
        for (unsigned i = 0; i < srv->n_devices && r >= 0; i++) {
                const sortd__server_device *d = &srv->devices[i];

                if (d->index < 0)
                        continue;
                r = sortd__engines_add_device(&srv->engines, d->info.uuid);
                for (unsigned k = d->first_lane; r >= 0 && k < d->first_lane + d->lanes; k++) {
                        loss.arg = &srv->recovery[k];
                        r = sortd__engines_add_lane(&srv->engines, d->index, srv->lane_engines[k],
                                                    &loss);
                }
                if (r >= 0 && d->pinned)
                        sortd__engines_pin_device(&srv->engines, (unsigned)d->index, d->numa_node,
                                                  &d->cpus);
        }
        return r < 0 ? r : 0;
}

/* Everything between the engine and its destruction: queues, loop, serving. */
static int run_loop(sortd__server *srv)
{
        uv_loop_t loop;
        int r;

        sortd__admission_init(&srv->adm, srv->cfg.max_inflight_bytes, &srv->stats);
        srv->regions = (sortd__region_limits){.max_per_conn = srv->cfg.max_regions,
                                              .max_bytes = srv->cfg.max_region_bytes};
        r = sortd__engines_init(&srv->engines, srv->cfg.loop_sort_keys);
        if (r == 0)
                r = add_lanes(srv);
        if (r < 0) {
                sortd__server_fail(srv, 1, "cannot initialise the queues: %s", strerror(-r));
                return r;
        }
        r = uv_loop_init(&loop);
        if (r == 0) {
                srv->loop = &loop;
                wire_connections(srv);
                r = serve(srv);
                if (uv_loop_close(&loop) != 0)
                        sortd__log(SORTD__LOG_WARNING, "loop closed with handles still open");
        } else {
                sortd__server_fail(srv, 1, "cannot initialise the loop: %s", uv_strerror(r));
        }
        sortd__engines_destroy(&srv->engines);
        return r;
}

/*
 * Everything a run holds, let go in one place whichever way it ends: the socket (a file this
 * daemon bound is removed), the host pool's arena, then the engines that gave it. Each part
 * is let go only if it was taken; the engine threads have stopped and every job is freed by
 * the time it runs.
 */
static void server_release(sortd__server *srv)
{
        sortd__listener_close(&srv->listener);
        sortd__hostpool_close(&srv->pool);
        sortd__route_close(&srv->engines.route);
        for (unsigned i = 0; i < srv->n_lanes; i++) {
                sortd__recovery_close(&srv->recovery[i]);
                sortd_engine_destroy(srv->lane_engines[i]);
        }
}

int sortd__server_run(int argc, char **argv)
{
        sortd__server srv __attribute__((cleanup(server_release))) = {.listener = {.fd = -1}};
        sortd_engine_config ec = {0};
        bool check;
        int r;

        r = sortd__config_load(&srv.cfg, argc, argv);
        if (r < 0)
                return 2;
        if (r == SORTD__CONFIG_EXIT)
                return flushed(0);
        check = r == SORTD__CONFIG_CHECK;
        sortd__log_set_level(srv.cfg.log_level);
        signal(SIGPIPE, SIG_IGN);
        /* Ignored until the loop's handler says so (on_sighup): the socket is claimed before the
           engine starts, so a reload can come while it does, and would end the daemon. */
        signal(SIGHUP, SIG_IGN);
        /* Reply and request buffers from 1 to 4 MiB come from mmap too (larger ones are mapped
           by admission.c): a freed buffer goes back to the system at once, so the RSS
           follows the bytes in flight instead of their high-water mark. */
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        srv.started_ns = uv_hrtime();
        /* auto: each GPU's own (startup.c); the cpu engine takes the default. */
        ec.capacity = srv.cfg.capacity == SORTD__CONFIG_AUTO ? SORTD__SERVER_CPU_CAPACITY
                                                             : srv.cfg.capacity;
        ec.threads = (unsigned)srv.cfg.threads;
        if (sortd__startup_test_faults(&ec.faults) < 0)
                return 2;
        /* This, and the load (which resolved allow-uid and allow-gid), is all a start checks
           before it claims the socket and makes the engine: a check touches neither, and may
           run beside a serving daemon. */
        if (check) {
                printf("sortd: configuration OK\n");
                return flushed(0);
        }
        hold_stop_signals();
        /* The socket first: a second daemon, or a sortd.socket that passes the wrong sockets,
           is refused at once, not after it has taken a GPU's memory and run its self-check
           (seconds), or fallen back to the CPU engine. */
        sortd__listener_init(&srv.listener, srv.cfg.socket, &srv.stats);
        if (sortd__listener_claim(&srv.listener) < 0)
                sortd__server_fail(&srv, srv.listener.exit_status, "%s", srv.listener.failure);
        if (srv.exit_status || !start_engines(&srv, &ec))
                return notify_stopping(&srv);
        sortd__startup_host_pool(&srv);
        if (srv.cfg.max_regions > 0)
                sortd__startup_note_shmem_pages();
        r = run_loop(&srv);
        /* Closed with the loop's handles once it served; not when it failed before that. */
        sortd__listener_close(&srv.listener);
        if (r < 0 && !srv.exit_status) /* every failure says why; this is a backstop */
                sortd__server_fail(&srv, 1, "stopped on an error: %s", uv_strerror(r));
        notify_stopping(&srv);
        if (srv.exit_status) /* said as an error already: no "stopped" notice after it */
                return srv.exit_status;
        sortd__log(SORTD__LOG_NOTICE, "stopped");
        return 0;
}
