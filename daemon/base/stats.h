/* The counters Status reports, one uint64_t each, named as sortd_counters.h lists them. */
#ifndef SORTD_DAEMON_STATS_H
#define SORTD_DAEMON_STATS_H

#include <stdint.h>

#include "sortd_counters.h"

/* queued, regions, region_bytes and host_pool_bytes stay 0 here: Status reads them from the
   queue, the region limits and the host pool. */
typedef struct sortd__stats {
#define SORTD__STAT(name, field, wire_type, label) uint64_t name;
        SORTD_STATUS_COUNTERS(SORTD__STAT)
#undef SORTD__STAT
} sortd__stats;

#endif
