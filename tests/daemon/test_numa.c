/*
 * daemon/server/numa.c alone, on a sysfs tree of its own: two nodes, a PCI device on the
 * second; cpulists as the kernel writes them, and what is refused.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "numa.h"
#include "suite.h"

static char root[64];

static void put(const char *path, const char *text)
{
        char full[256], dir[256], *slash;
        FILE *f;

        snprintf(full, sizeof(full), "%s/%s", root, path);
        snprintf(dir, sizeof(dir), "%s", full);
        for (slash = strchr(dir + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                mkdir(dir, 0755);
                *slash = '/';
        }
        f = fopen(full, "w");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
}

static void setup(void)
{
        strcpy(root, "/tmp/sortd-numa-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(root));
        put("devices/system/node/online", "0-1\n");
        put("devices/system/node/node0/cpulist", "0\n");
        put("devices/system/node/node1/cpulist", "1-3,5\n");
        put("bus/pci/devices/0000:3b:00.0/numa_node", "1\n");
        put("bus/pci/devices/0000:3c:00.0/numa_node", "-1\n");
}

static void teardown(void)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
        ck_assert_int_eq(system(cmd), 0);
}

START_TEST(nodes_and_cpus)
{
        cpu_set_t cpus;

        ck_assert_int_eq(sortd__numa_nodes(root), 2);
        ck_assert_int_eq(sortd__numa_node_of(root, "0000:3B:00.0"), 1); /* as CUDA writes it */
        ck_assert_int_eq(sortd__numa_node_of(root, "0000:3c:00.0"), -1);
        ck_assert_int_eq(sortd__numa_node_of(root, "0000:99:00.0"), -1);
        ck_assert_int_eq(sortd__numa_node_of(root, ""), -1);
        ck_assert_int_eq(sortd__numa_node_of(root, "../../x"), -1);
        ck_assert(sortd__numa_cpus(root, 1, &cpus));
        ck_assert_int_eq(CPU_COUNT(&cpus), 4);
        ck_assert(CPU_ISSET(1, &cpus) && CPU_ISSET(3, &cpus) && CPU_ISSET(5, &cpus));
        ck_assert(!CPU_ISSET(4, &cpus));
        ck_assert(!sortd__numa_cpus(root, 2, &cpus));
        ck_assert_int_eq(sortd__numa_nodes("/nonexistent"), 1);
}
END_TEST

START_TEST(cpulists)
{
        static const char *const bad[] = {"", "-1", "3-1", "1,", "a", "1-", "0-99999", "1 2"};
        cpu_set_t cpus;

        ck_assert(sortd__numa_parse_cpulist("0-3,8,10-11", &cpus));
        ck_assert_int_eq(CPU_COUNT(&cpus), 7);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(!sortd__numa_parse_cpulist(bad[i], &cpus), "'%s'", bad[i]);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("numa");
        TCase *tc = tcase_create("numa");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, nodes_and_cpus);
        tcase_add_test(tc, cpulists);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
