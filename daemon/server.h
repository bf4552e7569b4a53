/*
 * The server (server.c) and its connections (conn.c): what both reach into. Everything here
 * runs on the loop thread.
 */
#ifndef SORTD_DAEMON_SERVER_H
#define SORTD_DAEMON_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "admission.h"
#include "config.h"
#include "engine.h"
#include "frame.h"
#include "job.h"
#include "pipeline.h"
#include "queue.h"
#include "stats.h"
#include "worker.h"

typedef struct sortd__server {
        uv_loop_t *loop;
        sortd__config cfg;
        sortd_engine *engine;
        char engine_reason[1024]; /* how it was chosen and its self-check: logs, Status */
        sortd__fair_queue queue;
        sortd__worker worker;
        uv_pipe_t listener;
        bool listening;
        uv_signal_t sigterm, sigint;
        uv_timer_t watchdog, drain_timer;
        bool watchdog_on, draining;
        uint64_t started_ns;
        struct sortd__conn *conns; /* every open connection */
        sortd__admission adm;
        sortd__stats stats;
} sortd__server;

typedef struct sortd__conn {
        uv_pipe_t pipe;
        sortd__server *srv;
        struct sortd__conn *prev, *next; /* srv->conns */
        char name[64];                   /* "pid 123 uid 1000" for logs */
        sortd__frame_reader fr;
        sortd__flow flow;
        sortd__waiter wait;  /* in line for in-flight memory */
        sortd__pipeline out; /* its requests, in order, until their replies are written */
        sortd__job *reading; /* the sort whose payload is arriving */
        size_t in_engine;    /* jobs the engine thread holds */
        uint64_t fr_started; /* when the current frame's first byte came */
        bool reading_on, closing, closed;
} sortd__conn;

/* Accepts one connection from the listener. */
void sortd__conn_accept(sortd__server *srv);
/* A job came back from the engine thread. */
void sortd__conn_complete(sortd__job *j, void *arg);
/* Re-evaluates whether c should read (limits, memory, draining). */
void sortd__conn_update(sortd__conn *c);
/* Starts the close of c (idempotent). */
void sortd__conn_close(sortd__conn *c);
/* The admission's callback: c's reading sort got its memory. */
void sortd__conn_admitted(sortd__waiter *w);
/* A connection went away: finish the drain when it was the last. */
void sortd__server_conn_gone(sortd__server *srv);

/* main.c's whole body. */
int sortd__run(int argc, char **argv);

#endif
