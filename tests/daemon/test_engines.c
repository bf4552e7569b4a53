/*
 * daemon/sched/engines.c with its engine threads, on cpu engines standing in for two devices
 * of two lanes each: host sorts spread over every lane of both devices; a sort that chooses
 * its device runs there alone; a sort goes only where it fits; a device whose engines are lost for
 * good, with nothing to replace them, hands its queued sorts to the other device, and each sort
 * comes back sorted right or failed saying the device was lost; segmented sorts that the
 * lanes' engines lack go to the CPU path, or fail with their answer. Also run under ThreadSanitizer
 * (scripts/test): the loop hands jobs to four engine threads and takes them back.
 */
#include <check.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "engines.h"
#include "suite.h"

#define DEVICES 2
#define STREAMS 2
#define LANES (DEVICES * STREAMS)
#define FLOWS 3
#define JOBS 48
#define N 5000

static uv_loop_t loop;
static sortd__engines e;
static sortd__engines_flows flows[FLOWS];
static sortd_engine *engines[LANES];
static uint32_t *keys[JOBS];
static sortd__job *jobs[JOBS];
static unsigned done;
static size_t dev1_capacity = N; /* start's */

static const uint8_t uuid[DEVICES][SORTD_DEVICE_UUID_BYTES] = {{0xd0}, {0xd1}};

static void complete(sortd__job *j, void *arg)
{
        done++;
}

/* Nothing replaces a lost engine: its lane stops (drop), as with several devices. */
static sortd_engine *no_replacement(sortd_engine *lost, void *arg)
{
        return NULL;
}

/* Two devices of STREAMS lanes; device 1's engines lose their device on their lose_at-th sort
   (0: never). Devices are pinned to CPU sets before their threads start: cpus[d], where given. */
static void start_pinned(unsigned lose_at, const cpu_set_t *cpus)
{
        const sortd__worker_loss loss = {.replace = no_replacement, .drop = true};
        char why[256];

        ck_assert_int_eq(uv_loop_init(&loop), 0);
        memset(&e, 0, sizeof(e));
        memset(flows, 0, sizeof(flows));
        ck_assert_int_eq(sortd__engines_init(&e, 0), 0);
        for (int d = 0; d < DEVICES; d++) {
                ck_assert_int_eq(sortd__engines_add_device(&e, uuid[d]), d);
                for (int k = 0; k < STREAMS; k++) {
                        sortd_engine_config ec = {.capacity = d == 1 ? dev1_capacity : N,
                                                  .threads = 1};
                        sortd_engine **out = &engines[d * STREAMS + k];

                        if (d == 1 && lose_at)
                                ec.faults = (sortd_engine_faults){.every = lose_at,
                                                                  .status = SORTD_E_DEVICE,
                                                                  .lose_device = 1};
                        ck_assert_int_eq(sortd_engine_create("cpu", &ec, out, why, sizeof(why)),
                                         SORTD_OK);
                        ck_assert_int_eq(sortd__engines_add_lane(&e, d, *out, &loss), 0);
                }
        }
        ck_assert_int_eq(sortd__engines_add_lane(&e, 0, engines[0], &loss), -EINVAL);
        for (int d = 0; cpus && d < DEVICES; d++)
                sortd__engines_pin_device(&e, (unsigned)d, d, cpus);
        ck_assert_int_eq(sortd__engines_start(&e, &loop, NULL, complete, NULL), 0);
        done = 0;
}

static void start(unsigned lose_at)
{
        start_pinned(lose_at, NULL);
}

static void stop(void)
{
        sortd__engines_stop(&e);
        ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
        sortd__engines_destroy(&e);
        for (int i = 0; i < LANES; i++)
                sortd_engine_destroy(engines[i]);
        for (int i = 0; i < JOBS; i++) {
                sortd__job_free(jobs[i]);
                free(keys[i]);
                jobs[i] = NULL;
        }
}

/* Job i: N distinct u32 keys in no order, on device (-1: any). */
static sortd__job *sort_job(int i, int device)
{
        sortd__job *j = sortd__job_new((uint64_t)i);

        ck_assert_ptr_nonnull(j);
        keys[i] = malloc(N * 4);
        for (uint32_t x = 0; x < N; x++)
                keys[i][x] = (x * 2654435761u) ^ (uint32_t)i;
        j->work.op = SORTD__JOB_OP_SORT;
        j->work.desc = (sortd_sort_desc){.key_type = SORTD_KEY_U32, .payload = SORTD_PAYLOAD_NONE};
        j->work.n = N;
        j->work.sizes.reply_len = N * 4;
        j->work.keys = (uint8_t *)keys[i];
        j->device = device;
        return j;
}

/* Submits JOBS sorts from FLOWS connections (device: the one they choose, -1 for any), runs
   the loop until every one is back. */
static void run(int device)
{
        for (int i = 0; i < JOBS; i++) {
                jobs[i] = sort_job(i, device);
                ck_assert(!sortd__engines_submit(&e, &flows[i % FLOWS], jobs[i], false));
        }
        while (done < JOBS)
                uv_run(&loop, UV_RUN_ONCE);
        ck_assert_uint_eq(sortd__engines_queued(&e), 0);
}

static bool sorted(int i)
{
        for (uint32_t x = 1; x < N; x++)
                if (keys[i][x - 1] > keys[i][x])
                        return false;
        return true;
}

START_TEST(host_sorts_spread)
{
        start(0);
        run(-1);
        for (int i = 0; i < JOBS; i++)
                ck_assert_msg(jobs[i]->work.status == SORTD_OK && sorted(i), "job %d", i);
        for (int d = 0; d < DEVICES; d++) {
                ck_assert_uint_gt(e.devices[d].sorts, 0);
                ck_assert_uint_gt(e.devices[d].busy_ns, 0);
        }
        ck_assert_uint_eq(e.devices[0].sorts + e.devices[1].sorts, JOBS);
        ck_assert_uint_eq(e.devices[0].bytes + e.devices[1].bytes, (uint64_t)JOBS * N * 4);
        for (int l = 0; l < LANES; l++)
                ck_assert_uint_eq(e.lanes[l].queued_bytes, 0);
        ck_assert_int_eq(sortd__engines_find_device(&e, uuid[1]), 1);
        ck_assert_int_eq(sortd__engines_find_device(&e, (uint8_t[SORTD_DEVICE_UUID_BYTES]){7}), -1);
        stop();
}
END_TEST

START_TEST(chosen_device_only)
{
        start(0);
        run(1);
        for (int i = 0; i < JOBS; i++)
                ck_assert(jobs[i]->work.status == SORTD_OK && sorted(i));
        ck_assert_uint_eq(e.devices[0].sorts, 0);
        ck_assert_uint_eq(e.devices[1].sorts, JOBS);
        stop();
}
END_TEST

/* Idle lanes tie: a sort whose memory lies on device 1's node goes there, one on device 0's
   there, one whose node is unknown takes turns. */
START_TEST(tie_goes_near_the_memory)
{
        static const int nodes[] = {1, 0, -1};
        cpu_set_t cpus;

        ck_assert_int_eq(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
        start_pinned(0, &cpus);
        for (int k = 0; k < 3; k++) {
                uint64_t before[DEVICES] = {e.devices[0].sorts, e.devices[1].sorts};

                for (int i = k * 8; i < k * 8 + 8; i++) { /* one at a time: every lane idle */
                        jobs[i] = sort_job(i, -1);
                        jobs[i]->numa_node = nodes[k];
                        ck_assert(!sortd__engines_submit(&e, &flows[0], jobs[i], false));
                        while (done < (unsigned)i + 1)
                                uv_run(&loop, UV_RUN_ONCE);
                        ck_assert(jobs[i]->work.status == SORTD_OK && sorted(i));
                }
                if (nodes[k] >= 0) {
                        ck_assert_uint_eq(e.devices[nodes[k]].sorts, before[nodes[k]] + 8);
                } else {
                        ck_assert_uint_gt(e.devices[0].sorts, before[0]);
                        ck_assert_uint_gt(e.devices[1].sorts, before[1]);
                }
        }
        stop();
}
END_TEST

/* Device 1's engines take fewer keys than these sorts have: every sort goes to device 0. */
START_TEST(sorts_go_where_they_fit)
{
        dev1_capacity = N / 2;
        start(0);
        dev1_capacity = N;
        run(-1);
        for (int i = 0; i < JOBS; i++)
                ck_assert(jobs[i]->work.status == SORTD_OK && sorted(i));
        ck_assert_uint_eq(e.devices[0].sorts, JOBS);
        ck_assert_uint_eq(e.devices[1].sorts, 0);
        stop();
}
END_TEST

/*
 * Device 1's engines are lost on their second sort and nothing replaces them: the sorts
 * running then fail saying so, the rest that were queued there move to device 0, and device 1
 * stops serving; each sort is back exactly once.
 */
START_TEST(lost_device_hands_its_sorts_over)
{
        unsigned failed = 0;

        start(2);
        run(-1);
        for (int i = 0; i < JOBS; i++) {
                if (jobs[i]->work.status == SORTD_OK) {
                        ck_assert_msg(sorted(i), "job %d", i);
                        continue;
                }
                ck_assert_msg(strstr(jobs[i]->work.why, "lost"), "job %d: %s", i,
                              jobs[i]->work.why);
                failed++;
        }
        ck_assert_uint_le(failed, STREAMS); /* the sort each lost engine was running */
        ck_assert(!sortd__engines_device_serving(&e, 1));
        ck_assert(sortd__engines_device_serving(&e, 0));
        ck_assert_uint_ge(e.devices[0].sorts, JOBS - 2 * STREAMS);
        stop();
}
END_TEST

/* ---- segments on engines without them ---- */

static sortd_engine *cpu_path_engine;

/*
 * Both devices' lanes answer every sort SORTD_E_UNSUPPORTED (fault injection: as a GPU engine
 * without segmented kernels), beside a CPU path of cpu_capacity keys (0: none) that routing
 * sends nothing to (cpu-path-keys 0).
 */
static void start_without_segments(size_t cpu_capacity)
{
        const sortd__worker_loss loss = {0};
        char why[256];

        ck_assert_int_eq(uv_loop_init(&loop), 0);
        memset(&e, 0, sizeof(e));
        memset(flows, 0, sizeof(flows));
        ck_assert_int_eq(sortd__engines_init(&e, 0), 0);
        for (int d = 0; d < DEVICES; d++) {
                ck_assert_int_eq(sortd__engines_add_device(&e, uuid[d]), d);
                for (int k = 0; k < STREAMS; k++) {
                        sortd_engine_config ec = {
                                .capacity = N,
                                .threads = 1,
                                .faults = {.every = 1, .status = SORTD_E_UNSUPPORTED}};
                        sortd_engine **out = &engines[d * STREAMS + k];

                        ck_assert_int_eq(sortd_engine_create("cpu", &ec, out, why, sizeof(why)),
                                         SORTD_OK);
                        ck_assert_int_eq(sortd__engines_add_lane(&e, d, *out, &loss), 0);
                }
        }
        cpu_path_engine = NULL;
        if (cpu_capacity) {
                sortd_engine_config ec = {.capacity = cpu_capacity, .threads = 1};

                ck_assert_int_eq(
                        sortd_engine_create("cpu", &ec, &cpu_path_engine, why, sizeof(why)),
                        SORTD_OK);
                e.route = (sortd__route){.cpu = cpu_path_engine};
        }
        ck_assert_int_eq(sortd__engines_start(&e, &loop, NULL, complete, NULL), 0);
        done = 0;
}

/* SEG_JOBS sorts of 10 rows each, every other one in "shared" memory (a region's: it takes
   turns with its connection's others), submitted and run until every one is back. */
#define SEG_JOBS 12

static void run_segmented(void)
{
        for (int i = 0; i < SEG_JOBS; i++) {
                jobs[i] = sort_job(i, -1);
                jobs[i]->work.segmented = true;
                jobs[i]->work.seg = (sortd_segments){.count = 10, .row_len = N / 10};
                jobs[i]->work.shared = i % 2;
                ck_assert(!sortd__engines_submit(&e, &flows[i % FLOWS], jobs[i], false));
        }
        while (done < SEG_JOBS)
                uv_run(&loop, UV_RUN_ONCE);
        ck_assert_uint_eq(sortd__engines_queued(&e), 0);
}

static bool rows_sorted(int i)
{
        for (uint32_t x = 1; x < N; x++)
                if (x % (N / 10) && keys[i][x - 1] > keys[i][x])
                        return false;
        return true;
}

/* The CPU path sorts what the lanes' engines cannot, each in its turn. */
START_TEST(segments_fall_back_to_the_cpu_path)
{
        start_without_segments(N);
        run_segmented();
        for (int i = 0; i < SEG_JOBS; i++) {
                ck_assert_msg(jobs[i]->work.status == SORTD_OK, "job %d: %s", i, jobs[i]->work.why);
                ck_assert(jobs[i]->cpu_path);
                ck_assert_msg(rows_sorted(i), "job %d", i);
        }
        for (int d = 0; d < DEVICES; d++)
                ck_assert_uint_eq(e.devices[d].sorts, 0); /* none ran there */
        stop();
        sortd_engine_destroy(cpu_path_engine);
}
END_TEST

/* Without a CPU path, or one too small for the sort, the engine's answer is the reply. */
START_TEST(segments_unsupported_without_a_cpu_path)
{
        for (size_t cap = 0; cap <= N - 1; cap += N - 1) {
                start_without_segments(cap);
                run_segmented();
                for (int i = 0; i < SEG_JOBS; i++) {
                        ck_assert_int_eq(jobs[i]->work.status, SORTD_E_UNSUPPORTED);
                        ck_assert_msg(strstr(jobs[i]->work.why, "injected"), "job %d: %s", i,
                                      jobs[i]->work.why);
                        ck_assert(!jobs[i]->cpu_path);
                }
                stop();
                sortd_engine_destroy(cpu_path_engine);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("engines");
        TCase *tc = tcase_create("engines");

        /* ThreadSanitizer takes seconds to start and stop four engine threads and a CPU path */
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, host_sorts_spread);
        tcase_add_test(tc, chosen_device_only);
        tcase_add_test(tc, sorts_go_where_they_fit);
        tcase_add_test(tc, tie_goes_near_the_memory);
        tcase_add_test(tc, lost_device_hands_its_sorts_over);
        tcase_add_test(tc, segments_fall_back_to_the_cpu_path);
        tcase_add_test(tc, segments_unsupported_without_a_cpu_path);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
