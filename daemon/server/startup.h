/*
 * What a start makes before the loop (startup.c): the engine with its self-check, the CPU
 * path, the host pool. server.c calls them in order and turns a failure into the daemon's exit.
 */
#ifndef SORTD_DAEMON_STARTUP_H
#define SORTD_DAEMON_STARTUP_H

#include <stddef.h>

#include "engine.h"
#include "recovery.h"
#include "server.h"

/*
 * SORTD_TEST_FAULT=KIND:EVERY, for tests only: the engine's every EVERY-th sort fails, as a
 * device out of memory (nomem), a device error (device) or one that loses the device (lost).
 * 0 (f set, or untouched when unset), or -EINVAL (logged).
 */
int sortd__startup_test_faults(sortd_engine_faults *f);
/* srv->engine as cfg.engine says (auto: cuda where it passes its self-check, else cpu), made
   with ec, replaced on a loss as policy says; srv->engine_reason says how it was chosen, or
   why none could be (then the status is not SORTD_OK). */
sortd_status sortd__startup_engine(sortd__server *srv, const sortd_engine_config *ec,
                                   enum sortd__recovery_policy policy);
/* The CPU path beside srv's engine (route.c), as cpu-path-keys says; why on a failure. */
sortd_status sortd__startup_cpu_path(sortd__server *srv, char *why, size_t why_len);
/* srv's host pool as host-pool says; without it the daemon serves from the heap (a warning). */
void sortd__startup_host_pool(sortd__server *srv);
/* A notice when shared-memory regions would get 4 KiB pages. */
void sortd__startup_note_shmem_pages(void);

#endif
