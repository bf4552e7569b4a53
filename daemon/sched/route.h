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

struct sortd__server;

/* The largest n calibration tries, and so the most auto can choose. */
#define SORTD__ROUTE_CALIBRATE_MAX ((uint64_t)1 << 16)

/* Whether j goes to the CPU path: a sort in host memory of up to cpu_path_keys. */
bool sortd__route_cpu_path(const struct sortd__server *srv, const sortd__job *j);

/*
 * Opens the CPU path as cpu-path-keys says and logs what it chose; srv->cpu_path stays NULL for
 * none. Fails only when an explicit setting cannot be met, and then logs nothing: why gets the
 * reason, for the caller to report (the daemon cannot start).
 */
sortd_status sortd__route_open(struct sortd__server *srv, char *why, size_t why_len);
void sortd__route_close(struct sortd__server *srv);

/*
 * The largest n in 256, 1K, 4K, 16K, 64K (up to the capacities) up to which cpu sorts random u32
 * keys faster than engine, each timed as the median of several sorts of the same keys in memory
 * from engine's host allocator; 0 when engine is faster from the first. report gets the
 * timings.
 */
uint64_t sortd__route_calibrate(sortd_engine *engine, sortd_engine *cpu, char *report,
                                size_t report_len);

#endif
