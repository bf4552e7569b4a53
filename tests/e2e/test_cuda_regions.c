/*
 * CUDA IPC regions through libsortd against a real sortd on the CPU engine, which has no device
 * to open them on: each registration is refused with SORTD_E_UNSUPPORTED and a message, no
 * region is returned, the daemon keeps no fd or region for it, and the connection, memfd
 * regions included, works on. (tests/e2e/test_cuda_ipc.c sorts in them on a GPU.)
 */
#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* Waits until the daemon's fd count reads want (a refusal's cleanup may trail its reply). */
static int fds_settle(const daemon_proc *d, int want)
{
        int n = 0;

        for (int k = 0; k < 200 && (n = daemon_fd_count(d)) != want; k++)
                usleep(10000);
        return n;
}

/* A u32 sort in a memfd region: the connection still serves regions. */
static void memfd_sort_works(sortd_conn *c)
{
        const uint32_t in[5] = {9, 3, 7, 3, 0}, want[5] = {0, 3, 3, 7, 9};
        sortd_region *r = NULL;
        sortd_region_sort rs = {.n = 5, .key_type = SORTD_KEY_U32};

        ck_assert_msg(sortd_region_create(c, 4096, &r) == SORTD_OK, "%s", sortd_error_message(c));
        memcpy(sortd_region_data(r), in, sizeof(in));
        rs.keys = r;
        ck_assert_msg(sortd_sort_in_region(c, &rs) == SORTD_OK, "%s", sortd_error_message(c));
        ck_assert_mem_eq(sortd_region_data(r), want, sizeof(want));
        ck_assert_int_eq(sortd_region_destroy(c, r), SORTD_OK);
}

START_TEST(cuda_region_refused_on_cpu)
{
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES], uuid[SORTD_DEVICE_UUID_BYTES];
        daemon_proc d = {0};
        sortd_conn *c;
        int base;

        memset(handle, 0xC3, sizeof(handle));
        memset(uuid, 0x5A, sizeof(uuid));
        daemon_start(&d, NULL);
        c = client_open(&d);
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        base = daemon_fd_count(&d);
        /* More than once: a refusal must not hold anything a second one would pile on. */
        for (int i = 0; i < 3; i++) {
                sortd_region *r = (sortd_region *)1;
                sortd_status s =
                        sortd_region_register_cuda(c, handle, 256 * (uint64_t)i, 4096, uuid, &r);

                ck_assert_msg(s == SORTD_E_UNSUPPORTED, "%s: %s", sortd_strerror(s),
                              sortd_error_message(c));
                ck_assert_str_ne(sortd_error_message(c), "");
                ck_assert_ptr_eq(r, (sortd_region *)1);
        }
        ck_assert_int_eq(fds_settle(&d, base), base);
        ck_assert_uint_eq(status_of(&d).regions, 0);
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        memfd_sort_works(c);
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("cuda_regions");
        TCase *tc = tcase_create("cuda_regions");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cuda_region_refused_on_cpu);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
