/*
 * sortctl bench: generated keys sorted through the daemon, every result verified, and a table
 * (or JSON) of the end-to-end time beside the daemon's own sort time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "bench_data.h"
#include "connect.h"
#include "fail.h"
#include "job.h"
#include "sortctl.h"

static const char HELP[] =
        "usage: sortctl bench [--type LIST] [--dist LIST] [--n LIST] [--payload LIST] [--desc]\n"
        "                     [--via auto|inline|shm] [--repeat R] [--seed S] [--json]\n"
        "                     [--socket PATH] [--timeout MS]\n"
        "\n"
        "Sorts generated keys through sortd for every combination of the lists (comma-separated),\n"
        "checks every result (in order, stable, and a permutation of the input), and prints\n"
        "one row per combination: the median over R runs of the end-to-end time (the request,\n"
        "the sort and the reply, as the client waits for them) and of the daemon's sort time\n"
        "(the engine alone, from the reply), and their throughput in millions of keys a second.\n"
        "\n"
        "  --type LIST      key types: u8 i8 u16 i16 u32 i32 f32 u64 i64 f64 f16 bf16\n"
        "                   (default u32)\n"
        "  --dist LIST      uniform (random bits), sorted, reversed, few (16 distinct keys)\n"
        "                   (default uniform)\n"
        "  --n LIST         key counts: 1000000, 1e6, 2^20 or 1M (K, M, G are powers of 2)\n"
        "                   (default 1M)\n"
        "  --payload LIST   none, v32, v64 (values that move with the keys), argsort32,\n"
        "                   argsort64 (default none)\n"
        "  --desc           descending order\n"
        "  --via V          auto (default: shared memory from 1 MiB), inline or shm\n"
        "  --repeat R       runs of each combination (default 3)\n"
        "  --seed S         the generator's seed (default 1)\n"
        "  --json           one JSON object a row instead of the table\n"
        "\n"
        "Exit status: 0 every result verified; 1 a wrong result, a refusal or usage; 2 sortd\n"
        "unreachable.\n";

#define MAX_LIST 16
#define MAX_REPEAT 1000 /* runs of one combination, timed into arrays of this size */

typedef struct bench_args {
        int types[MAX_LIST], dists[MAX_LIST], payloads[MAX_LIST];
        uint64_t ns[MAX_LIST];
        int ntypes, ndists, npayloads, nns;
        sortd_order order;
        sc_via via;
        uint64_t repeat, seed;
        bool json;
} bench_args;

/* Takes item, the i-th of a list, into the bench's arguments: < 0 refuses it. */
typedef int take_item(const char *item, int i, void *ctx);

/*
 * The items of the comma-separated list v through take, in order: their count, or -1 with bad
 * holding the item refused. Every item must be whole: an empty one (",," or a trailing comma),
 * one too long to be any choice or count, and one past MAX_LIST are refused, not skipped or cut.
 */
static int each_item(const char *v, take_item *take, void *ctx, char *bad, size_t bad_len)
{
        char item[64];
        int n = 0;

        for (const char *p = v;; p++) {
                size_t len = strcspn(p, ",");

                snprintf(item, sizeof(item), "%.*s", (int)len, p);
                if (n == MAX_LIST || len == 0 || len >= sizeof(item) || take(item, n, ctx) < 0) {
                        snprintf(bad, bad_len, "%s%s", item, len >= sizeof(item) ? "..." : "");
                        return -1;
                }
                n++;
                p += len;
                if (!*p)
                        return n;
        }
}

struct choices {
        int (*parse)(const char *);
        int *out;
};

static int take_choice(const char *item, int i, void *ctx)
{
        const struct choices *c = ctx;

        return c->out[i] = c->parse(item);
}

static int take_count(const char *item, int i, void *ctx)
{
        return sc_args_parse_count(item, &((uint64_t *)ctx)[i]);
}

/* --type, --dist, --payload: each item one of parse's choices. */
static int list(const char *name, const char *v, int (*parse)(const char *), int *out, int *count)
{
        struct choices c = {parse, out};
        char bad[80];

        if (!*v)
                return sc_fail(SC_FAIL, "--%s needs at least one item", name), -1;
        *count = each_item(v, take_choice, &c, bad, sizeof(bad));
        if (*count < 0)
                return sc_fail(SC_FAIL,
                               "--%s %s: '%s' is not one of the choices (at most %d): see "
                               "sortctl bench --help",
                               name, v, bad, MAX_LIST),
                       -1;
        return 1;
}

static int count_list(const char *v, uint64_t *out, int *count)
{
        char bad[80];

        if (!*v)
                return sc_fail(SC_FAIL, "--n needs at least one count"), -1;
        *count = each_item(v, take_count, out, bad, sizeof(bad));
        if (*count < 0)
                return sc_fail(SC_FAIL,
                               "--n %s: '%s' is not a count (1000000, 1e6, 2^20, 1M; at most %d)",
                               v, bad, MAX_LIST),
                       -1;
        return 1;
}

static int option(sc_args *a, const char *name, const char *pos, void *ctx)
{
        bench_args *b = ctx;
        const char *v;
        int via;

        if (pos)
                return 0;
        if (!strcmp(name, "desc") || !strcmp(name, "json")) {
                if (name[0] == 'd')
                        b->order = SORTD_DESCENDING;
                else
                        b->json = true;
                return 1;
        }
        if (strcmp(name, "type") && strcmp(name, "dist") && strcmp(name, "payload") &&
            strcmp(name, "n") && strcmp(name, "via") && strcmp(name, "repeat") &&
            strcmp(name, "seed"))
                return 0;
        if (!(v = sc_args_value(a, name)))
                return -1;
        if (!strcmp(name, "type"))
                return list(name, v, bench_type_parse, b->types, &b->ntypes);
        if (!strcmp(name, "dist"))
                return list(name, v, bench_dist_parse, b->dists, &b->ndists);
        if (!strcmp(name, "payload"))
                return list(name, v, sortd_payload_parse, b->payloads, &b->npayloads);
        if (!strcmp(name, "n"))
                return count_list(v, b->ns, &b->nns);
        if (!strcmp(name, "via")) {
                if ((via = sc_via_parse(v)) < 0)
                        return sc_fail(SC_FAIL, "--via %s: give auto, inline or shm", v), -1;
                b->via = (sc_via)via;
                return 1;
        }
        if (sc_args_parse_count(v, name[0] == 'r' ? &b->repeat : &b->seed) < 0)
                return sc_fail(SC_FAIL, "--%s %s: give a number", name, v), -1;
        if (name[0] == 'r' && (b->repeat == 0 || b->repeat > MAX_REPEAT))
                return sc_fail(SC_FAIL, "--repeat %s: give a number from 1 to %d", v, MAX_REPEAT),
                       -1;
        return 1;
}

static double now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static double median(double *v, uint64_t n)
{
        qsort(v, n, sizeof(*v), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct bench_row {
        sortd_key_type type;
        bench_dist dist;
        sortd_payload payload;
        size_t n;
        sc_via via;
        double e2e_ns, sort_ns; /* medians */
} bench_row;

static void print_row(const bench_row *r, bool json, bool first)
{
        double e2e_mk = r->e2e_ns > 0 ? r->n / r->e2e_ns * 1e3 : 0;
        double sort_mk = r->sort_ns > 0 ? r->n / r->sort_ns * 1e3 : 0;

        if (json) {
                printf("{\"type\": \"%s\", \"dist\": \"%s\", \"payload\": \"%s\", \"n\": %zu, "
                       "\"via\": \"%s\", \"e2e_ms\": %.3f, \"sort_ms\": %.3f, "
                       "\"e2e_mkeys_s\": %.1f, \"sort_mkeys_s\": %.1f, \"verified\": true}\n",
                       sortd_key_type_name(r->type), bench_dist_name(r->dist),
                       sortd_payload_name(r->payload), r->n, sc_via_name(r->via), r->e2e_ns / 1e6,
                       r->sort_ns / 1e6, e2e_mk, sort_mk);
                return;
        }
        if (first)
                printf("%-4s %-8s %-9s %11s %-6s %10s %10s %10s %10s %s\n", "type", "dist",
                       "payload", "n", "via", "e2e ms", "sort ms", "e2e Mk/s", "sort Mk/s",
                       "verified");
        printf("%-4s %-8s %-9s %11zu %-6s %10.3f %10.3f %10.1f %10.1f %s\n",
               sortd_key_type_name(r->type), bench_dist_name(r->dist),
               sortd_payload_name(r->payload), r->n, sc_via_name(r->via), r->e2e_ns / 1e6,
               r->sort_ns / 1e6, e2e_mk, sort_mk, "ok");
        fflush(stdout);
}

/* Fills the job's buffers from input (and 0..n-1 as values), as every run starts. */
static void load(sc_job *j, const uint8_t *input)
{
        size_t vs = sortd_payload_size(j->payload);

        memcpy(j->keys, input, j->n * sortd_key_size(j->type));
        if (vs && !sortd_payload_is_argsort(j->payload))
                for (uint64_t i = 0; i < j->n; i++)
                        memcpy(j->vals + i * vs, &i, vs);
}

/* R runs of one combination, each verified; fills r's medians. */
static int run_row(sortd_conn *c, const bench_args *b, bench_row *r, double *e2e, double *srt)
{
        sc_job j = {.type = r->type, .payload = r->payload, .opts = {.order = b->order}, .n = r->n};
        uint8_t *input = malloc(r->n * sortd_key_size(r->type) + 1);
        const char *bad;
        size_t at;
        int rc = input ? sc_job_alloc(c, &j, b->via) : sc_fail(SC_FAIL, "out of memory");

        if (input)
                bench_generate(input, r->n, r->type, r->dist, b->seed);
        for (uint64_t i = 0; i < b->repeat && rc == SC_OK; i++) {
                double t0;

                load(&j, input);
                t0 = now_ns();
                rc = sc_job_sort(c, &j, NULL);
                e2e[i] = now_ns() - t0;
                srt[i] = (double)j.timings.sort_ns;
                bad = rc == SC_OK
                              ? bench_verify(input, j.keys, j.vals, sortd_payload_size(r->payload),
                                             r->n, r->type, b->order, &at)
                              : NULL;
                if (bad)
                        rc = sc_fail(SC_FAIL,
                                     "WRONG RESULT from sortd for %zu %s keys (%s, %s) at "
                                     "index %zu: %s: report it with sortctl status",
                                     r->n, sortd_key_type_name(r->type), bench_dist_name(r->dist),
                                     sortd_payload_name(r->payload), at, bad);
        }
        r->via = j.via;
        if (rc == SC_OK) {
                r->e2e_ns = median(e2e, b->repeat);
                r->sort_ns = median(srt, b->repeat);
        }
        sc_job_free(c, &j);
        free(input);
        return rc;
}

/* Every combination of the lists, in the order they were given, types outermost. */
static int run_all(sortd_conn *c, const bench_args *b)
{
        double e2e[MAX_REPEAT], srt[MAX_REPEAT];
        int total = b->ntypes * b->ndists * b->npayloads * b->nns, rc = SC_OK;

        for (int k = 0; k < total && rc == SC_OK; k++) {
                int ni = k % b->nns, pi = k / b->nns % b->npayloads;
                int di = k / b->nns / b->npayloads % b->ndists;
                int ti = k / b->nns / b->npayloads / b->ndists;
                bench_row r = {.type = (sortd_key_type)b->types[ti],
                               .dist = (bench_dist)b->dists[di],
                               .payload = (sortd_payload)b->payloads[pi],
                               .n = (size_t)b->ns[ni]};

                rc = run_row(c, b, &r, e2e, srt);
                if (rc == SC_OK)
                        print_row(&r, b->json, k == 0);
        }
        return rc;
}

int sc_cmd_bench(sc_common *c, int argc, char **argv)
{
        bench_args b = {.types = {SORTD_KEY_U32},
                        .dists = {BENCH_UNIFORM},
                        .payloads = {SORTD_PAYLOAD_NONE},
                        .ns = {1u << 20},
                        .ntypes = 1,
                        .ndists = 1,
                        .npayloads = 1,
                        .nns = 1,
                        .repeat = 3,
                        .seed = 1};
        sortd_conn *conn;
        bool helped;
        int r = sc_args_parse(c, argc, argv, "bench", HELP, option, &b, &helped);

        if (r != SC_OK || helped)
                return r;
        for (int i = 0; i < b.nns; i++)
                if (b.ns[i] > SIZE_MAX / 16)
                        return sc_fail(SC_FAIL, "--n %llu is too large for this machine",
                                       (unsigned long long)b.ns[i]);
        if ((r = sc_connect(c, &conn)) != SC_OK)
                return r;
        r = run_all(conn, &b);
        sortd_close(conn);
        return r;
}
