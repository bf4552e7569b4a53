/*
 * The daemon's status in Prometheus' text exposition format (metrics.c), for node_exporter's
 * textfile collector (systemd/sortd-metrics.service) or any scraper that reads a file.
 */
#ifndef SORTCTL_METRICS_H
#define SORTCTL_METRICS_H

#include "sortd.h"

#include <stdio.h>

/* Prints st to f: every counter of sortd_counters.h with its HELP and TYPE (a counter as
   sortd_NAME_total), the engine, capacity and uptime, and each device's (sortd_device_*). */
void sc_metrics_print(FILE *f, const sortd_server_status *st);

#endif
