/*
 * daemon/sched/region.c on its own, with real memfds: what a region must be to be mapped (sealed
 * against shrinking, not against writes, the size it claims), that every fd handed in is
 * closed, the limits, span checks against overflow and misalignment, isolation between
 * connections' tables, and the in-use rule in both directions.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "region.h"
#include "suite.h"

#define PAGE 4096u

static sortd__region_limits limits;
static sortd__regions table;
static char why[256];

static void setup(void)
{
        limits = (sortd__region_limits){.max_per_conn = 4, .max_bytes = 64 * PAGE};
        sortd__regions_init(&table, &limits);
        why[0] = 0;
}

static void teardown(void)
{
        sortd__regions_destroy(&table);
        ck_assert_uint_eq(limits.mapped_bytes, 0);
        ck_assert_uint_eq(limits.regions, 0);
}

/* A memfd of size bytes with the given seals, as a client makes it. */
static int memfd(size_t size, int seals)
{
        int fd = memfd_create("sortd-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
        if (seals)
                ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
        return fd;
}

static int is_closed(int fd)
{
        return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

/*
 * Registers a dup of fd (the daemon closes what it is given; the test keeps fd) and, as the
 * engine thread's open would, makes it ready.
 */
static int add_dup(int fd, uint64_t size, uint64_t *id)
{
        int copy = dup(fd);
        sortd__region *r = NULL;

        ck_assert_int_ge(copy, 0);
        int s = sortd__regions_add(&table, copy, size, &r, why, sizeof(why));
        ck_assert_msg(is_closed(copy), "the fd given was left open");
        if (s == 0) {
                ck_assert_ptr_null(sortd__regions_find(&table, r->id, why, sizeof(why)));
                sortd__region_ready(r);
                *id = r->id;
        }
        return s;
}

/* An unregister as the daemon does it, the engine's close included (it has none here). */
static int remove_id(sortd__regions *t, uint64_t id, char *msg, size_t len)
{
        sortd__region *r;
        int s = sortd__regions_begin_remove(t, id, &r, msg, len);

        if (s != 0)
                return s;
        ck_assert_ptr_null(sortd__regions_find(t, id, msg, len)); /* closing: gone for sorts */
        ck_assert_int_eq(sortd__regions_begin_remove(t, id, &r, msg, len), -EINVAL);
        sortd__regions_forget(t, r);
        return 0;
}

static void expect_refused(int fd, uint64_t size, int want, const char *text)
{
        uint64_t id = 0;

        ck_assert_int_eq(add_dup(fd, size, &id), want);
        ck_assert_msg(strstr(why, text), "'%s' lacks '%s'", why, text);
        ck_assert_uint_eq(table.count, 0);
        ck_assert_uint_eq(limits.mapped_bytes, 0);
}

/* The daemon's writes through the mapping are the client's bytes, and the other way round. */
START_TEST(register_and_share)
{
        int fd = memfd(2 * PAGE, F_SEAL_SHRINK | F_SEAL_SEAL);
        uint32_t v = 0xfeedf00d, got = 0;
        uint64_t id = 0;
        sortd__region *r;
        uint8_t *p;

        ck_assert_int_eq(add_dup(fd, 2 * PAGE, &id), 0);
        ck_assert_uint_eq(id, 1);
        ck_assert_uint_eq(limits.mapped_bytes, 2 * PAGE);
        r = sortd__regions_find(&table, id, why, sizeof(why));
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(sortd__region_span(r, "keys", 8, 10, 4, &p, why, sizeof(why)), 0);
        memcpy(p, &v, 4);
        ck_assert_int_eq(pread(fd, &got, 4, 8), 4);
        ck_assert_uint_eq(got, v);
        v = 0x01020304;
        ck_assert_int_eq(pwrite(fd, &v, 4, 12), 4);
        ck_assert_int_eq(memcmp(p + 4, &v, 4), 0);
        /* The page the client wrote is on one of the machine's nodes; a bad address on none. */
        ck_assert_int_ge(sortd__region_numa_node(p), 0);
        ck_assert_int_lt(sortd__region_numa_node(p), 1024);
        ck_assert_int_eq(sortd__region_numa_node((void *)8), -1);
        close(fd);
}
END_TEST

START_TEST(refusals)
{
        int plain = memfd_create("sortd-test", MFD_CLOEXEC); /* no sealing at all */
        int unsealed = memfd(PAGE, 0), growable = memfd(PAGE, F_SEAL_GROW);
        int written = memfd(PAGE, F_SEAL_SHRINK | F_SEAL_WRITE), good = memfd(PAGE, F_SEAL_SHRINK);
        int pipefd[2];

        ck_assert_int_ge(plain, 0);
        ck_assert_int_eq(ftruncate(plain, PAGE), 0);
        ck_assert_int_eq(pipe(pipefd), 0);
        expect_refused(plain, PAGE, -EINVAL, "not sealed against shrinking");
        expect_refused(unsealed, PAGE, -EINVAL, "not sealed against shrinking");
        expect_refused(growable, PAGE, -EINVAL, "not sealed against shrinking");
        expect_refused(written, PAGE, -EINVAL, "sealed against writes");
        expect_refused(pipefd[0], PAGE, -EINVAL, "not a sealable memfd");
        expect_refused(good, 2 * PAGE, -EINVAL, "has 4096 bytes, RegisterRegion says 8192");
        expect_refused(good, PAGE / 2, -EINVAL, "has 4096 bytes");
        expect_refused(good, 0, -EINVAL, "region size 0");
        close(plain);
        close(unsealed);
        close(growable);
        close(written);
        close(good);
        close(pipefd[0]);
        close(pipefd[1]);
}
END_TEST

/* The seal holds after registration: the client cannot pull the memory from under a sort. */
START_TEST(shrink_after_register_fails)
{
        int fd = memfd(4 * PAGE, F_SEAL_SHRINK);
        uint64_t id;

        ck_assert_int_eq(add_dup(fd, 4 * PAGE, &id), 0);
        ck_assert_int_eq(ftruncate(fd, PAGE), -1);
        ck_assert_int_eq(errno, EPERM);
        ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), -1); /* mapped writable: EBUSY */
        close(fd);
}
END_TEST

START_TEST(limits_hold)
{
        int fd = memfd(16 * PAGE, F_SEAL_SHRINK), big = memfd(64 * PAGE, F_SEAL_SHRINK);
        uint64_t id, ids[4];

        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(add_dup(fd, 16 * PAGE, &ids[i]), 0);
        ck_assert_int_eq(add_dup(fd, 16 * PAGE, &id), -EBUSY);
        ck_assert_msg(strstr(why, "max-regions is 4"), "%s", why);
        ck_assert_uint_eq(table.count, 4);
        /* The byte limit counts every connection's mappings. */
        ck_assert_int_eq(remove_id(&table, ids[0], why, sizeof(why)), 0);
        ck_assert_int_eq(add_dup(big, 64 * PAGE, &id), -EBUSY);
        ck_assert_msg(strstr(why, "max-region-bytes"), "%s", why);
        ck_assert_int_eq(add_dup(fd, 16 * PAGE, &id), 0);
        ck_assert_uint_eq(id, 5); /* ids are not reused */
        ck_assert_uint_eq(limits.mapped_bytes, 64 * PAGE);
        ck_assert_uint_eq(limits.regions, 4);
        close(fd);
        close(big);
}
END_TEST

static int span(const sortd__region *r, uint64_t offset, uint64_t count, size_t elem)
{
        uint8_t *p;

        return sortd__region_span(r, "keys", offset, count, elem, &p, why, sizeof(why));
}

START_TEST(spans_checked)
{
        int fd = memfd(PAGE, F_SEAL_SHRINK);
        uint64_t id;
        sortd__region *r;

        ck_assert_int_eq(add_dup(fd, PAGE, &id), 0);
        r = sortd__regions_find(&table, id, why, sizeof(why));
        ck_assert_int_eq(span(r, 0, PAGE / 8, 8), 0); /* the whole region */
        ck_assert_int_eq(span(r, PAGE - 8, 1, 8), 0); /* its last element */
        ck_assert_int_eq(span(r, PAGE, 0, 8), 0);     /* nothing, at the end */
        ck_assert_int_eq(span(r, 0, PAGE / 8 + 1, 8), -EINVAL);
        ck_assert_msg(strstr(why, "pass the end of region 1 (4096 bytes)"), "%s", why);
        ck_assert_int_eq(span(r, PAGE + 8, 0, 8), -EINVAL);
        ck_assert_int_eq(span(r, 4, 1, 8), -EINVAL);
        ck_assert_msg(strstr(why, "offset 4 is not a multiple of 8"), "%s", why);
        ck_assert_int_eq(span(r, 2, 1, 2), 0);
        ck_assert_int_eq(span(r, 3, 1, 1), 0);
        /* Sums that would wrap around 2^64. */
        ck_assert_int_eq(span(r, UINT64_MAX - 7, 2, 8), -EINVAL);
        ck_assert_int_eq(span(r, 8, UINT64_MAX / 4, 8), -EINVAL);
        ck_assert_int_eq(span(r, 8, (UINT64_MAX / 8) + 2, 8), -EINVAL);
        close(fd);
}
END_TEST

/* Another connection's ids are unknown to it, with the same error as an id never given. */
START_TEST(connections_isolated)
{
        int fd = memfd(PAGE, F_SEAL_SHRINK);
        sortd__regions other;
        char other_why[256], never_why[256];
        uint64_t id;

        sortd__regions_init(&other, &limits);
        ck_assert_int_eq(add_dup(fd, PAGE, &id), 0);
        ck_assert_ptr_null(sortd__regions_find(&other, id, other_why, sizeof(other_why)));
        ck_assert_ptr_null(sortd__regions_find(&table, 99, never_why, sizeof(never_why)));
        ck_assert_int_eq(remove_id(&other, id, other_why, sizeof(other_why)), -EINVAL);
        ck_assert_str_eq(other_why, "no region 1 on this connection");
        ck_assert_int_eq(remove_id(&table, 99, never_why, sizeof(never_why)), -EINVAL);
        ck_assert_str_eq(never_why, "no region 99 on this connection");
        ck_assert_ptr_nonnull(sortd__regions_find(&table, id, why, sizeof(why)));
        sortd__regions_destroy(&other);
        ck_assert_uint_eq(limits.regions, 1); /* the other's destroy left ours alone */
        close(fd);
}
END_TEST

/* Held: refused, and still there. Released: removed. Never held: not reported busy. */
START_TEST(in_use_rule_both_ways)
{
        int fd = memfd(PAGE, F_SEAL_SHRINK);
        uint64_t held, idle;
        sortd__region *r;

        ck_assert_int_eq(add_dup(fd, PAGE, &held), 0);
        ck_assert_int_eq(add_dup(fd, PAGE, &idle), 0);
        r = sortd__regions_find(&table, held, why, sizeof(why));
        sortd__region_hold(r);
        sortd__region_hold(r);
        ck_assert_int_eq(remove_id(&table, held, why, sizeof(why)), -EBUSY);
        ck_assert_msg(strstr(why, "in use by 2 sort(s)"), "%s", why);
        ck_assert_int_eq(remove_id(&table, idle, why, sizeof(why)), 0);
        sortd__region_release(r);
        ck_assert_int_eq(remove_id(&table, held, why, sizeof(why)), -EBUSY);
        sortd__region_release(r);
        ck_assert_int_eq(remove_id(&table, held, why, sizeof(why)), 0);
        ck_assert_int_eq(remove_id(&table, held, why, sizeof(why)), -EINVAL);
        ck_assert_uint_eq(table.count, 0);
        close(fd);
}
END_TEST

static sortd_engine *cpu_engine(void)
{
        sortd_engine_config cfg = {.capacity = 16, .threads = 1};
        sortd_engine *e = NULL;

        ck_assert_int_eq(sortd_engine_create("cpu", &cfg, &e, why, sizeof(why)), SORTD_OK);
        return e;
}

/*
 * The engine's part: a memfd opens and closes on the CPU engine (nothing to pin); a CUDA region
 * is refused by it with the engine's reason, and what did not open has nothing to close.
 */
START_TEST(engine_open_and_close)
{
        int fd = memfd(PAGE, F_SEAL_SHRINK);
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES];
        sortd_engine *e = cpu_engine();
        sortd__region *m, *d;

        memset(handle, 0x5a, sizeof(handle));
        ck_assert_int_eq(sortd__regions_add(&table, fd, PAGE, &m, why, sizeof(why)), 0);
        ck_assert_int_eq(sortd__region_engine_open(m, e, why, sizeof(why)), SORTD_OK);
        ck_assert_ptr_eq(m->engine, e);
        ck_assert_int_eq(sortd__region_engine_close(m, why, sizeof(why)), SORTD_OK);
        ck_assert_ptr_null(m->engine);
        ck_assert_int_eq(sortd__region_engine_close(m, why, sizeof(why)), SORTD_OK);

        ck_assert_int_eq(sortd__regions_add_cuda(&table, handle, 256, 1024, &d, why, sizeof(why)),
                         0);
        ck_assert_int_eq(d->kind, SORTD__REGION_CUDA);
        ck_assert_mem_eq(d->ipc_handle, handle, sizeof(handle));
        ck_assert_int_eq(sortd__region_engine_open(d, e, why, sizeof(why)), SORTD_E_UNSUPPORTED);
        ck_assert_msg(strstr(why, "cannot open the CUDA IPC handle") && strstr(why, "GPU engine"),
                      "%s", why);
        ck_assert_ptr_null(d->engine);
        ck_assert_ptr_null(d->base);
        ck_assert_int_eq(sortd__region_engine_close(d, why, sizeof(why)), SORTD_OK);
        /* Device regions count against max-regions, not against the host bytes mapped. */
        ck_assert_uint_eq(table.count, 2);
        ck_assert_uint_eq(limits.mapped_bytes, PAGE);
        sortd__regions_forget(&table, d);
        ck_assert_uint_eq(limits.regions, 1);
        sortd_engine_destroy(e);
}
END_TEST

/* The per-connection count limits CUDA regions too. */
START_TEST(cuda_regions_limited)
{
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES] = {0};
        sortd__region *r;

        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(sortd__regions_add_cuda(&table, handle, 0, UINT64_MAX, &r, why,
                                                         sizeof(why)),
                                 0);
        ck_assert_int_eq(sortd__regions_add_cuda(&table, handle, 0, 8, &r, why, sizeof(why)),
                         -EBUSY);
        ck_assert_msg(strstr(why, "max-regions is 4"), "%s", why);
        ck_assert_uint_eq(limits.mapped_bytes, 0);
}
END_TEST

/* The mode in brackets of shmem_enabled, from files written like the kernel's. */
START_TEST(shmem_thp_mode_read)
{
        static const struct {
                const char *text, *mode;
        } cases[] = {
                {"always within_size advise [never] deny force\n", "never"},
                {"always within_size [advise] never deny force\n", "advise"},
                {"[always] madvise never\n", "always"},
                {"always advise never\n", NULL},
                {"always [advise never\n", NULL},
                {"[]\n", NULL},
                {"[a_mode_name_longer_than_the_buffer]\n", NULL},
        };
        char path[] = "/tmp/sortd-test-thp-XXXXXX", mode[16];
        int fd = mkstemp(path);

        ck_assert_int_ge(fd, 0);
        close(fd);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                FILE *f = fopen(path, "w");

                ck_assert_ptr_nonnull(f);
                fputs(cases[i].text, f);
                fclose(f);
                ck_assert_int_eq(sortd__region_shmem_thp_mode(path, mode, sizeof(mode)),
                                 cases[i].mode ? 0 : -EBADMSG);
                if (cases[i].mode)
                        ck_assert_str_eq(mode, cases[i].mode);
        }
        unlink(path);
        ck_assert_int_eq(sortd__region_shmem_thp_mode(path, mode, sizeof(mode)), -ENOENT);
}
END_TEST

START_TEST(uuid_text)
{
        uint8_t u[SORTD_DEVICE_UUID_BYTES];
        char text[SORTD_DEVICE_UUID_TEXT];

        for (unsigned i = 0; i < sizeof(u); i++)
                u[i] = (uint8_t)(i * 17 + 0x0f);
        sortd_device_uuid_format(u, text);
        ck_assert_str_eq(text, "GPU-0f203142-5364-7586-97a8-b9cadbecfd0e");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("region");
        TCase *tc = tcase_create("region");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, register_and_share);
        tcase_add_test(tc, refusals);
        tcase_add_test(tc, shrink_after_register_fails);
        tcase_add_test(tc, limits_hold);
        tcase_add_test(tc, spans_checked);
        tcase_add_test(tc, connections_isolated);
        tcase_add_test(tc, engine_open_and_close);
        tcase_add_test(tc, cuda_regions_limited);
        tcase_add_test(tc, uuid_text);
        tcase_add_test(tc, shmem_thp_mode_read);
        tcase_add_test(tc, in_use_rule_both_ways);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
