/* See route.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "route.h"

#define CALIBRATE_RUNS 5

bool sortd__route_cpu_path(const sortd__route *r, const sortd__job *j)
{
        return r->cpu && j->work.op == SORTD__JOB_OP_SORT && j->work.n <= r->cpu_path_keys;
}

static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return (x > y) - (x < y);
}

/* Median ns of sorting the n keys of src in keys (restored before each run); 0 on an error. */
static uint64_t time_sort(sortd_engine *e, const uint32_t *src, uint32_t *keys, size_t n)
{
        const sortd_sort_desc d = {.key_type = SORTD_KEY_U32};
        uint64_t t[CALIBRATE_RUNS];

        for (int r = 0; r < CALIBRATE_RUNS; r++) {
                uint64_t t0;

                memcpy(keys, src, n * sizeof(*keys));
                t0 = now_ns();
                if (sortd_engine_sort(e, &d, keys, NULL, n) != SORTD_OK)
                        return 0;
                t[r] = now_ns() - t0;
        }
        qsort(t, CALIBRATE_RUNS, sizeof(t[0]), cmp_u64);
        return t[CALIBRATE_RUNS / 2];
}

uint64_t sortd__route_calibrate(sortd_engine *engine, sortd_engine *cpu, char *report,
                                size_t report_len)
{
        uint64_t max = SORTD__ROUTE_CALIBRATE_MAX, chosen = 0, x = 0x9e3779b97f4a7c15ull;
        size_t len = 0;
        uint32_t *src;
        void *keys;

        if (sortd_engine_capacity(engine) < max)
                max = sortd_engine_capacity(engine);
        if (sortd_engine_capacity(cpu) < max)
                max = sortd_engine_capacity(cpu);
        src = malloc(max * sizeof(*src));
        if (!src || sortd_engine_host_alloc(engine, max * sizeof(*src), &keys) != SORTD_OK) {
                free(src);
                snprintf(report, report_len, "no memory to measure in");
                return 0;
        }
        for (uint64_t i = 0; i < max; i++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                src[i] = (uint32_t)(x >> 32);
        }
        len = (size_t)snprintf(report, report_len,
                               "u32 sort times, cpu / %s:", sortd_engine_kind(engine));
        for (uint64_t n = 256; n <= max; n *= 4) {
                uint64_t tc = time_sort(cpu, src, keys, (size_t)n);
                uint64_t te = time_sort(engine, src, keys, (size_t)n);

                if (len < report_len)
                        len += (size_t)snprintf(report + len, report_len - len,
                                                " %" PRIu64 " keys %.1f / %.1f us;", n,
                                                (double)tc / 1e3, (double)te / 1e3);
                if (!tc || !te || tc >= te)
                        break;
                chosen = n;
        }
        sortd_engine_host_free(engine, keys, max * sizeof(*src));
        free(src);
        return chosen;
}

static sortd_status open_cpu(const sortd__route_settings *s, uint64_t capacity, sortd_engine **out,
                             char *why, size_t why_len)
{
        sortd_engine_config ec = {.capacity = capacity, .threads = s->threads};

        return sortd_engine_create("cpu", &ec, out, why, why_len);
}

/* auto: measured against the engine, and only worth having where the CPU wins. */
static uint64_t open_auto(sortd__route *r, sortd_engine *engine, const sortd__route_settings *s,
                          char *report, size_t report_len)
{
        char why[256];
        uint64_t keys;

        if (strcmp(sortd_engine_kind(engine), "cpu") == 0)
                return 0; /* the engine is the CPU: no path beside it */
        /* A warning: the engine serves every sort without it, only slower for small ones. */
        if (open_cpu(s, SORTD__ROUTE_CALIBRATE_MAX, &r->cpu, why, sizeof(why)) != SORTD_OK) {
                sortd__log(SORTD__LOG_WARNING, "no CPU path: cannot create its engine: %s", why);
                return 0;
        }
        keys = sortd__route_calibrate(engine, r->cpu, report, report_len);
        if (keys == 0) {
                sortd__log(SORTD__LOG_NOTICE,
                           "no CPU path: the %s engine is faster "
                           "from the smallest sort measured (%s)",
                           sortd_engine_kind(engine), report);
                sortd__route_close(r);
        }
        return keys;
}

/* The engine's reason goes straight after the prefix, into the rest of why: a copy of its own
   would cut it shorter than why can hold. */
static sortd_status open_explicit(sortd__route *r, const sortd__route_settings *s, uint64_t keys,
                                  char *why, size_t why_len)
{
        size_t at;

        snprintf(why, why_len, "cannot create the CPU path (cpu-path-keys %" PRIu64 "): ", keys);
        at = why_len ? strlen(why) : 0;
        return open_cpu(s, keys, &r->cpu, why + at, why_len - at);
}

sortd_status sortd__route_open(sortd__route *r, sortd_engine *engine,
                               const sortd__route_settings *s, char *why, size_t why_len)
{
        uint64_t keys = s->cpu_path_keys;
        char report[512] = "";
        sortd_status st;

        *r = (sortd__route){0};
        if (keys == 0)
                return SORTD_OK;
        if (keys == SORTD__ROUTE_AUTO) {
                keys = open_auto(r, engine, s, report, sizeof(report));
                if (keys == 0)
                        return SORTD_OK;
        } else {
                if (keys > s->capacity)
                        keys = s->capacity;
                st = open_explicit(r, s, keys, why, why_len);
                if (st != SORTD_OK)
                        return st;
                snprintf(report, sizeof(report), "cpu-path-keys %" PRIu64, keys);
        }
        r->cpu_path_keys = keys;
        sortd__log(SORTD__LOG_NOTICE, "CPU path: sorts of up to %" PRIu64 " keys (%s): %s", keys,
                   sortd_engine_device(r->cpu), report);
        return SORTD_OK;
}

void sortd__route_close(sortd__route *r)
{
        sortd_engine_destroy(r->cpu);
        *r = (sortd__route){0};
}
