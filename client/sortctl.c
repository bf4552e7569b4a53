/*
 * sortctl: talks to sortd from the shell.
 *
 *   sortctl [--socket PATH] [--timeout MS] hello | ping | status |
 *           sort TYPE N [PAYLOAD] [asc|desc] [--via inline|shm]
 *   sortctl --version
 *
 * `sort` generates N random keys of TYPE (u8 .. f64), sorts them through the daemon with the
 * payload (none, v32, v64, argsort32, argsort64), checks the result and prints the timings.
 * The data goes inline through the socket (the default) or, with --via shm, stays in a
 * shared-memory region that the daemon sorts in place.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sortd.h"
#include "sortd_version.h"

static int usage(void)
{
        fprintf(stderr, "usage: sortctl [--socket PATH] [--timeout MS] hello | ping | status |\n"
                        "               sort TYPE N [PAYLOAD] [asc|desc] [--via inline|shm]\n"
                        "       sortctl --version\n"
                        "TYPE: u8 i8 u16 i16 u32 i32 f32 u64 i64 f64; "
                        "PAYLOAD: none v32 v64 argsort32 argsort64\n");
        return 2;
}

static int print_status(sortd_conn *c)
{
        sortd_server_status st;

        if (sortd_query_status(c, &st) != SORTD_OK)
                return -1;
        printf("engine             %s (%s)\nengine chosen      %s\ncapacity           %llu\n"
               "uptime             %.1f s\n",
               st.engine, st.device, st.engine_reason, (unsigned long long)st.capacity,
               st.uptime_ms / 1e3);
#define PRINT(name, field, wire_type, label)                                                       \
        printf("%-18s %llu\n", label, (unsigned long long)st.name);
        SORTD_STATUS_COUNTERS(PRINT)
#undef PRINT
        return 0;
}

static int print_hello(sortd_conn *c)
{
        sortd_info i;

        if (sortd_hello(c, &i) != SORTD_OK)
                return -1;
        printf("sortd %s, protocol %u\nengine %s (%s), capacity %llu\nlimits: message %u B, "
               "request %llu B, in flight %llu B, connections %u, regions %llu a connection, "
               "region bytes %llu\n",
               i.server_version, i.protocol_version, i.engine, i.device,
               (unsigned long long)i.capacity, i.max_message_bytes,
               (unsigned long long)i.max_request_bytes, (unsigned long long)i.max_inflight_bytes,
               i.max_connections, (unsigned long long)i.max_regions,
               (unsigned long long)i.max_region_bytes);
        return 0;
}

/* The order-preserving unsigned image of a key (sortd_types.h): what the sort orders by. */
static uint64_t key_image(const uint8_t *k, sortd_key_type t, size_t ks)
{
        uint64_t u = 0, sign = 1ull << (ks * 8 - 1), all = sign | (sign - 1);

        memcpy(&u, k, ks); /* little-endian, as the wire and the engines */
        switch (t) {
        case SORTD_KEY_I8:
        case SORTD_KEY_I16:
        case SORTD_KEY_I32:
        case SORTD_KEY_I64:
                return u ^ sign;
        case SORTD_KEY_F32:
        case SORTD_KEY_F64:
                return u & sign ? ~u & all : u | sign;
        default:
                return u;
        }
}

/* One `sort`: n random keys (seed 1) and, for values, vals[i] = i, so that after the sort the
   values are the permutation, as argsort's output is. */
typedef struct sort_job {
        sortd_key_type t;
        sortd_payload p;
        sortd_order order;
        size_t n, ks, vs;
        uint8_t *keys, *vals; /* where the sort happens: the heap, or a region */
        uint8_t *input;       /* the keys as generated */
} sort_job;

static uint64_t read_index(const uint8_t *v, size_t vs)
{
        uint64_t x = 0;

        memcpy(&x, v, vs);
        return x;
}

/* NULL when keys are in order and, with a payload, vals is a stable permutation of the input
   that carried each key; else what is wrong. */
static const char *check_sorted(const sort_job *j, size_t *at)
{
        uint64_t prev = 0, prev_idx = 0;

        for (size_t i = 0; i < j->n; i++) {
                uint64_t k = key_image(j->keys + i * j->ks, j->t, j->ks), idx = 0;

                *at = i;
                if (j->vs) {
                        idx = read_index(j->vals + i * j->vs, j->vs);
                        if (idx >= j->n ||
                            memcmp(j->keys + i * j->ks, j->input + idx * j->ks, j->ks) != 0)
                                return "a value (or index) does not lead back to its key";
                }
                if (i > 0 && (j->order == SORTD_ASCENDING ? k < prev : k > prev))
                        return "keys out of order";
                if (i > 0 && j->vs && k == prev && idx <= prev_idx)
                        return "equal keys out of input order (not stable)";
                prev = k;
                prev_idx = idx;
        }
        return NULL;
}

static void generate(sort_job *j)
{
        srand(1);
        for (size_t i = 0; i < j->n * j->ks; i++)
                j->keys[i] = (uint8_t)rand();
        memcpy(j->input, j->keys, j->n * j->ks);
        if (j->vs && !sortd_payload_is_argsort(j->p))
                for (uint64_t i = 0; i < j->n; i++)
                        memcpy(j->vals + i * j->vs, &i, j->vs);
}

static sortd_status sort_inline(sortd_conn *c, sort_job *j, sortd_timings *tm)
{
        sortd_request r = {.keys = j->keys,
                           .vals = j->vs ? j->vals : NULL,
                           .n = j->n,
                           .key_type = j->t,
                           .payload = j->p,
                           .opts = {.order = j->order}};
        sortd_status s = sortd_submit(c, &r);

        if (s == SORTD_OK)
                s = sortd_receive(c, &r);
        *tm = r.timings;
        return s;
}

static sortd_status sort_shm(sortd_conn *c, sort_job *j, sortd_region *reg, sortd_timings *tm)
{
        sortd_region_sort rs = {.keys = reg,
                                .vals = j->vs ? reg : NULL,
                                .vals_offset = (size_t)(j->vals - j->keys),
                                .n = j->n,
                                .key_type = j->t,
                                .payload = j->p,
                                .opts = {.order = j->order}};
        sortd_status s = sortd_sort_in_region(c, &rs);

        *tm = rs.timings;
        return s;
}

/*
 * Random keys (and values), sorted through the daemon inline or in a shared-memory region,
 * checked, and the timings printed. argv: TYPE N [PAYLOAD] [desc], and --via inline|shm
 * anywhere among them.
 */
static int sort_random(sortd_conn *c, int argc, char **argv)
{
        const char *pos[4] = {0}, *via = "inline";
        int np = 0, t, p, shm, r = -1;
        sort_job j = {0};
        sortd_region *reg = NULL;
        sortd_timings tm = {0};
        struct timespec t0, t1;
        const char *bad;
        size_t at, vals_at;

        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--via") == 0 && i + 1 < argc)
                        via = argv[++i];
                else if (np < 4 && strncmp(argv[i], "--", 2) != 0)
                        pos[np++] = argv[i];
                else
                        return usage();
        }
        t = np > 0 ? sortd_key_type_parse(pos[0]) : -1;
        p = np > 2 ? sortd_payload_parse(pos[2]) : SORTD_PAYLOAD_NONE;
        shm = strcmp(via, "shm") == 0;
        if (t < 0 || p < 0 || np < 2 || (!shm && strcmp(via, "inline") != 0) ||
            (np > 3 && strcmp(pos[3], "desc") != 0 && strcmp(pos[3], "asc") != 0))
                return usage();
        j = (sort_job){.t = (sortd_key_type)t,
                       .p = (sortd_payload)p,
                       .order = np > 3 && strcmp(pos[3], "desc") == 0 ? SORTD_DESCENDING
                                                                      : SORTD_ASCENDING,
                       .n = strtoull(pos[1], NULL, 0),
                       .ks = sortd_key_size((sortd_key_type)t),
                       .vs = sortd_payload_size((sortd_payload)p)};
        if (j.n > SIZE_MAX / 32) {
                fprintf(stderr, "sortctl: N = %zu is too large\n", j.n);
                return 1;
        }
        /* The values after the keys, aligned to 8 bytes, in one region. */
        vals_at = (j.n * j.ks + 7) & ~(size_t)7;
        j.input = malloc(j.n * j.ks + 8);
        if (shm) {
                size_t bytes = vals_at + j.n * j.vs;

                if (sortd_region_create(c, bytes ? bytes : 1, &reg) != SORTD_OK)
                        goto out;
                j.keys = sortd_region_data(reg);
                j.vals = j.keys + vals_at;
        } else {
                j.keys = malloc(j.n * j.ks + 8);
                j.vals = malloc(j.n * j.vs + 8);
        }
        if (!j.input || !j.keys || !j.vals) {
                fprintf(stderr, "sortctl: out of memory\n");
                r = 1;
                goto out;
        }
        generate(&j);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if ((shm ? sort_shm(c, &j, reg, &tm) : sort_inline(c, &j, &tm)) != SORTD_OK)
                goto out;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        bad = check_sorted(&j, &at);
        if (bad) {
                fprintf(stderr, "sortctl: wrong result at index %zu: %s\n", at, bad);
                r = 1;
                goto out;
        }
        printf("sorted %zu %s keys (%s) via %s in %.3f ms: transfer %.3f ms, queued %.3f ms, "
               "sort %.3f ms\n",
               j.n, pos[0], sortd_payload_name(j.p), via,
               (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
               tm.transfer_ns / 1e6, tm.queued_ns / 1e6, tm.sort_ns / 1e6);
        r = 0;
out:
        if (r < 0)
                fprintf(stderr, "sortctl: %s\n", sortd_error_message(c));
        if (reg && sortd_region_destroy(c, reg) != SORTD_OK && r == 0) {
                fprintf(stderr, "sortctl: %s\n", sortd_error_message(c));
                r = 1;
        }
        if (!shm) {
                free(j.keys);
                free(j.vals);
        }
        free(j.input);
        return r < 0 ? 1 : r;
}

int main(int argc, char **argv)
{
        sortd_connect_options opts = {.client_name = "sortctl"};
        const char *path = NULL;
        sortd_conn *c;
        char err[256];
        int i = 1, r;

        if (argc == 2 && strcmp(argv[1], "--version") == 0) {
                printf("sortctl %s\n", SORTD_VERSION_STRING);
                return 0;
        }
        for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
                if (i + 1 >= argc)
                        return usage();
                if (strcmp(argv[i], "--socket") == 0)
                        path = argv[i + 1];
                else if (strcmp(argv[i], "--timeout") == 0)
                        opts.timeout_ms = atoi(argv[i + 1]);
                else
                        return usage();
        }
        if (i >= argc)
                return usage();
        if (sortd_connect(path, &opts, &c, err, sizeof(err)) != SORTD_OK) {
                fprintf(stderr, "sortctl: %s\n", err);
                return 1;
        }
        if (strcmp(argv[i], "hello") == 0)
                r = print_hello(c);
        else if (strcmp(argv[i], "ping") == 0)
                r = sortd_ping(c) == SORTD_OK ? (puts("pong"), 0) : -1;
        else if (strcmp(argv[i], "status") == 0)
                r = print_status(c);
        else if (strcmp(argv[i], "sort") == 0)
                r = sort_random(c, argc - i - 1, argv + i + 1);
        else
                r = usage();
        if (r < 0)
                fprintf(stderr, "sortctl: %s\n", sortd_error_message(c));
        sortd_close(c);
        return r < 0 ? 1 : r;
}
