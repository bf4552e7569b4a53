/* The counters Status reports, one uint64_t each, named as sortd_counters.h lists them. */
#ifndef SORTD_DAEMON_STATS_H
#define SORTD_DAEMON_STATS_H

#include <stdint.h>

#include "sortd_counters.h"

/* queued stays 0 here: Status reads the queue's length instead. */
typedef struct sortd__stats {
#define SORTD__STAT(name, field, wire_type, label) uint64_t name;
        SORTD_STATUS_COUNTERS(SORTD__STAT)
#undef SORTD__STAT
} sortd__stats;

#endif
