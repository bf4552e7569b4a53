/* NUMA placement from sysfs (see numa.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numa.h"

const char *sortd__numa_root(void)
{
        const char *root = getenv("SORTD_TEST_SYSFS");

        return root && *root ? root : "/sys";
}

/* The first line of root/path into buf; false when it cannot be read. */
static bool read_line(const char *root, const char *path, char *buf, size_t len)
{
        char full[512];
        FILE *f;
        bool ok;

        snprintf(full, sizeof(full), "%s/%s", root, path);
        f = fopen(full, "r");
        if (!f)
                return false;
        ok = fgets(buf, (int)len, f) != NULL;
        fclose(f);
        if (ok)
                buf[strcspn(buf, "\n")] = '\0';
        return ok;
}

bool sortd__numa_parse_cpulist(const char *text, cpu_set_t *cpus)
{
        const char *p = text;

        CPU_ZERO(cpus);
        while (*p) {
                char *end;
                long lo = strtol(p, &end, 10), hi = lo;

                if (end == p || lo < 0)
                        return false;
                p = end;
                if (*p == '-') {
                        hi = strtol(++p, &end, 10);
                        if (end == p || hi < lo)
                                return false;
                        p = end;
                }
                if (hi >= CPU_SETSIZE)
                        return false;
                for (long c = lo; c <= hi; c++)
                        CPU_SET((int)c, cpus);
                if (*p == ',' && p[1])
                        p++;
                else if (*p)
                        return false;
        }
        return CPU_COUNT(cpus) > 0;
}

int sortd__numa_nodes(const char *root)
{
        char line[256];
        cpu_set_t nodes;

        if (!read_line(root, "devices/system/node/online", line, sizeof(line)) ||
            !sortd__numa_parse_cpulist(line, &nodes))
                return 1;
        return CPU_COUNT(&nodes);
}

int sortd__numa_node_of(const char *root, const char *pci_bus_id)
{
        char path[128], id[32], line[32], *end;
        size_t i;
        long node;

        for (i = 0; pci_bus_id[i] && i + 1 < sizeof(id); i++)
                id[i] = (char)tolower((unsigned char)pci_bus_id[i]);
        id[i] = '\0';
        if (!*id || strchr(id, '/'))
                return -1;
        snprintf(path, sizeof(path), "bus/pci/devices/%s/numa_node", id);
        if (!read_line(root, path, line, sizeof(line)))
                return -1;
        node = strtol(line, &end, 10);
        return end != line && !*end && node >= 0 && node < 1024 ? (int)node : -1;
}

bool sortd__numa_cpus(const char *root, int node, cpu_set_t *cpus)
{
        char path[96], line[4096];

        snprintf(path, sizeof(path), "devices/system/node/node%d/cpulist", node);
        return node >= 0 && read_line(root, path, line, sizeof(line)) &&
               sortd__numa_parse_cpulist(line, cpus);
}
