/*
 * NUMA placement of a device's work (numa.c): the node a PCI device sits on and the CPUs of a
 * node, as sysfs says. A device's engines are made, and its engine threads run, on its node's
 * CPUs, so that its pinned staging memory is first touched there and the copies to and from it
 * stay off the inter-socket link. All of it reads files under a root: /sys, or a test's tree.
 */
#ifndef SORTD_DAEMON_NUMA_H
#define SORTD_DAEMON_NUMA_H

#include <sched.h>
#include <stdbool.h>

/* Where sysfs is: SORTD_TEST_SYSFS (tests only), else /sys. */
const char *sortd__numa_root(void);

/* The machine's NUMA nodes (node/online: "0-1" is 2); 1 when it cannot be read. */
int sortd__numa_nodes(const char *root);

/* The node of the PCI device pci_bus_id ("0000:3B:00.0", any case); -1 when unknown. */
int sortd__numa_node_of(const char *root, const char *pci_bus_id);

/* The CPUs of node into *cpus (node/nodeN/cpulist); false when they cannot be read or none
   is online. */
bool sortd__numa_cpus(const char *root, int node, cpu_set_t *cpus);

/* A cpulist ("0-3,8,10-11") into *cpus: false for one that does not parse. */
bool sortd__numa_parse_cpulist(const char *text, cpu_set_t *cpus);

#endif
