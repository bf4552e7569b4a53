/*
 * The CPU path (route.c): beside a GPU engine, small sorts go to a CPU engine of their own,
 * with its own queue and engine thread (batched the same way), so that they pay neither the
 * device's round trip (launches, copies, a synchronisation) nor a wait behind large sorts.
 * cpu-path-keys sets how small; auto measures, at start-up, up to which n the CPU is the
 * faster of the two.
 */
#ifndef SORTD_DAEMON_ROUTE_H
#define SORTD_DAEMON_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "job.h"

/* The CPU path: its engine and how small a sort must be to take it. Loop thread only. */
typedef struct sortd__route {
        sortd_engine *cpu;      /* NULL: no CPU path */
        uint64_t cpu_path_keys; /* sorts up to this n take it; 0 without one */
} sortd__route;

/* The settings the CPU path is opened with (sortd.conf's). */
typedef struct sortd__route_settings {
        uint64_t cpu_path_keys; /* 0: none; SORTD__ROUTE_AUTO: measured */
        uint64_t capacity;      /* the most an explicit cpu-path-keys can be */
        unsigned threads;       /* the CPU path engine's */
} sortd__route_settings;

/* cpu-path-keys auto: the CPU path is measured against the engine at start-up. */
#define SORTD__ROUTE_AUTO UINT64_MAX

/* The largest n calibration tries, and so the most auto can choose. */
#define SORTD__ROUTE_CALIBRATE_MAX ((uint64_t)1 << 16)

/* Whether j goes to the CPU path: a sort in host memory of up to cpu_path_keys. */
bool sortd__route_cpu_path(const sortd__route *r, const sortd__job *j);

/*
 * Opens the CPU path beside engine as s says and logs what it chose; r->cpu stays NULL for
 * none. Fails only when an explicit setting cannot be met, and then logs nothing: why gets the
 * reason, for the caller to report (the daemon cannot start).
 */
sortd_status sortd__route_open(sortd__route *r, sortd_engine *engine,
                               const sortd__route_settings *s, char *why, size_t why_len);
void sortd__route_close(sortd__route *r);

/*
 * The largest n in 256, 1K, 4K, 16K, 64K (up to the capacities) up to which cpu sorts random u32
 * keys faster than engine, each timed as the median of several sorts of the same keys in memory
 * from engine's host allocator; 0 when engine is faster from the first. report gets the
 * timings.
 */
uint64_t sortd__route_calibrate(sortd_engine *engine, sortd_engine *cpu, char *report,
                                size_t report_len);

#endif
