/*
 * sortd-bench --clients K (sortd_bench.h): K clients at once, each on a connection of its own,
 * sorting n u32 keys in a shared-memory region of its own over and over, for a time or a count:
 * the aggregate rate, and each device's share of the sorts, from the daemon's Status rows before
 * and after. A phase runs on a daemon of its own, started with one --device-streams setting;
 * with two settings the phases alternate, and the gain of the first over the second is the
 * median of each round's ratio: issue 38's overlap on one device.
 *
 * A client sorts its region descending and ascending in turn: each sort's input is the reverse
 * of the last one's output, so every key moves and nothing is copied between sorts. Refilling or
 * checking 2^26 keys takes a client longer than a GPU takes to sort them, and would leave the
 * device waiting between a client's sorts, which is what a phase measures. So each client's
 * first sort, before the clock starts, and its last, after it stops, are checked against the
 * CPU engine in-process; a sort between them that lost or changed a key shows in the last.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagen.h"
#include "engine.h"
#include "sortd.h"
#include "sortd_bench.h"

/* The size: the overlap target is for sorts this large, where copies dominate. */
#define TARGET_N ((size_t)1 << 26)
#define TARGET_GAIN 1.6

typedef struct client {
        pthread_t th;
        sortd_conn *c;
        sortd_region *r;
        uint32_t *input, *want; /* its keys, and the in-process engine's ascending sort of them */
        size_t n;
        sortd_order order; /* of its last sort */
        long limit, done;  /* the sorts a phase asks of it (or LONG_MAX), and those it made */
        double deadline;   /* when its phase ends (or INFINITY) */
        char err[256];     /* why its phase stopped early */
} client;

/* A phase's outcome: its timed sorts and seconds, and the daemon's Status around them. */
typedef struct phase {
        long sorts;
        double seconds;
        sortd_server_status before, after;
} phase;

/* Each client's keys, from a seed of its own, and their sort by a cpu engine in-process. */
static int clients_prepare(client *cl, const bench_clients_config *cfg)
{
        sortd_engine_config ec = {.capacity = cfg->n, .threads = (unsigned)atoi(cfg->threads)};
        const sortd_sort_desc d = {.key_type = SORTD_KEY_U32};
        char err[256] = "out of memory";
        sortd_engine *e = NULL;
        int r = 0;

        if (sortd_engine_create("cpu", &ec, &e, err, sizeof(err)) != SORTD_OK)
                r = -1;
        for (int i = 0; i < cfg->clients && r == 0; i++) {
                cl[i].n = cfg->n;
                cl[i].input = malloc(cfg->n * 4);
                cl[i].want = malloc(cfg->n * 4);
                if (!cl[i].input || !cl[i].want) {
                        r = -1;
                        break;
                }
                datagen_fill(cl[i].input, cfg->n, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, 100 + i);
                memcpy(cl[i].want, cl[i].input, cfg->n * 4);
                if (sortd_engine_sort(e, &d, cl[i].want, NULL, cfg->n) != SORTD_OK) {
                        snprintf(err, sizeof(err), "%s", sortd_engine_error(e));
                        r = -1;
                }
        }
        if (r < 0)
                fprintf(stderr, "sortd-bench: setup failed: %s\n", err);
        sortd_engine_destroy(e);
        return r;
}

/* Whether cl's region holds its keys in the order of its last sort; says where it does not. */
static bool holds(const client *cl, int i, const char *which)
{
        const uint32_t *got = sortd_region_data(cl->r);
        bool desc = cl->order == SORTD_DESCENDING;

        for (size_t k = 0; k < cl->n; k++) {
                uint32_t want = cl->want[desc ? cl->n - 1 - k : k];

                if (got[k] != want) {
                        fprintf(stderr,
                                "sortd-bench: WRONG RESULT: client %d's %s sort (%s): key %zu "
                                "is %u, the engine in-process gave %u\n",
                                i, which, desc ? "descending" : "ascending", k, got[k], want);
                        return false;
                }
        }
        return true;
}

/* Client i on the daemon at sock: its connection, its region holding its keys, and its first
   sort, checked (the region's pages are mapped and registered then, outside the clock). */
static int client_open(client *cl, int i, const char *sock)
{
        sortd_region_sort rs = {.n = cl->n, .key_type = SORTD_KEY_U32};
        char err[256];

        if (sortd_connect(sock, NULL, &cl->c, err, sizeof(err)) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: client %d: %s\n", i, err);
                return -1;
        }
        if (sortd_region_create(cl->c, cl->n * 4, &cl->r) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: client %d: %s\n", i, sortd_error_message(cl->c));
                return -1;
        }
        memcpy(sortd_region_data(cl->r), cl->input, cl->n * 4);
        rs.keys = cl->r;
        cl->order = SORTD_ASCENDING;
        if (sortd_sort_in_region(cl->c, &rs) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: client %d: %s\n", i, sortd_error_message(cl->c));
                return -1;
        }
        return holds(cl, i, "first") ? 0 : -1;
}

static void client_close(client *cl)
{
        if (cl->r)
                sortd_region_destroy(cl->c, cl->r);
        sortd_close(cl->c);
        cl->r = NULL;
        cl->c = NULL;
}

static void *client_main(void *arg)
{
        client *cl = arg;

        while (cl->done < cl->limit && bench_now() < cl->deadline) {
                sortd_order next =
                        cl->order == SORTD_ASCENDING ? SORTD_DESCENDING : SORTD_ASCENDING;
                sortd_region_sort rs = {
                        .keys = cl->r, .n = cl->n, .key_type = SORTD_KEY_U32, .opts.order = next};

                if (sortd_sort_in_region(cl->c, &rs) != SORTD_OK) {
                        snprintf(cl->err, sizeof(cl->err), "%s", sortd_error_message(cl->c));
                        break;
                }
                cl->order = next;
                cl->done++;
        }
        return NULL;
}

/* The clients' timed sorts, all at once, between two Status queries on q. */
static int phase_sorts(const bench_clients_config *cfg, client *cl, sortd_conn *q, phase *ph)
{
        double t0;
        int r = 0;

        if (sortd_query_status(q, &ph->before) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: status: %s\n", sortd_error_message(q));
                return -1;
        }
        t0 = bench_now();
        for (int i = 0; i < cfg->clients; i++) {
                cl[i].limit = cfg->sorts ? cfg->sorts : LONG_MAX;
                cl[i].deadline = cfg->sorts ? INFINITY : t0 + cfg->seconds;
                cl[i].done = 0;
                cl[i].err[0] = '\0';
                pthread_create(&cl[i].th, NULL, client_main, &cl[i]);
        }
        ph->sorts = 0;
        for (int i = 0; i < cfg->clients; i++) {
                pthread_join(cl[i].th, NULL);
                ph->sorts += cl[i].done;
                if (cl[i].err[0]) {
                        fprintf(stderr, "sortd-bench: client %d: %s\n", i, cl[i].err);
                        r = -1;
                }
        }
        ph->seconds = bench_now() - t0;
        if (sortd_query_status(q, &ph->after) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: status: %s\n", sortd_error_message(q));
                return -1;
        }
        for (int i = 0; i < cfg->clients && r == 0; i++)
                r = holds(&cl[i], i, "last") ? 0 : -1;
        return r;
}

/* A phase on a daemon of its own, with device-streams streams (NULL: its default). */
static int phase_run(const bench_clients_config *cfg, client *cl, const char *streams, phase *ph)
{
        const char *sock = bench_start_daemon(cfg->bin, cfg->threads, cfg->engine, cfg->n, streams);
        sortd_conn *q = NULL;
        char err[256];
        int r = sock ? 0 : -1;

        for (int i = 0; i < cfg->clients && r == 0; i++)
                r = client_open(&cl[i], i, sock);
        if (r == 0 && sortd_connect(sock, NULL, &q, err, sizeof(err)) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: status connection: %s\n", err);
                r = -1;
        }
        if (r == 0)
                r = phase_sorts(cfg, cl, q, ph);
        sortd_close(q);
        for (int i = 0; i < cfg->clients; i++)
                client_close(&cl[i]);
        if (sock)
                bench_stop_daemon();
        return r;
}

static const char *bytes_name(double b, char *buf, size_t len)
{
        static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
        int u = 0;

        for (; b >= 1024 && u < 4; u++)
                b /= 1024;
        snprintf(buf, len, "%.1f %s", b, unit[u]);
        return buf;
}

/* Status row d of the phase's end, against the same device's row at its start. */
static void device_row(const phase *ph, const sortd_device *d)
{
        sortd_device was = {0};
        char uuid[SORTD_DEVICE_UUID_TEXT], bytes[32];

        for (unsigned i = 0; i < ph->before.device_count && i < SORTD_MAX_DEVICES; i++)
                if (memcmp(ph->before.devices[i].uuid, d->uuid, sizeof(d->uuid)) == 0)
                        was = ph->before.devices[i];
        sortd_device_uuid_format(d->uuid, uuid);
        printf("    device %u  %s  %-8s %u streams  %6llu sorts %5.1f%%  %10s  %.2f in flight  "
               "%s\n",
               d->ordinal, uuid, sortd_device_state_name(d->state), d->streams,
               (unsigned long long)(d->sorts - was.sorts),
               ph->sorts ? 100.0 * (double)(d->sorts - was.sorts) / (double)ph->sorts : 0.0,
               bytes_name((double)(d->bytes - was.bytes), bytes, sizeof(bytes)),
               (double)(d->busy_ns - was.busy_ns) * 1e-9 / ph->seconds, d->name);
}

/* The phase's line, then each device's share of its sorts (and the CPU path's, if any). */
static void phase_print(const bench_clients_config *cfg, int round, const char *streams,
                        const phase *ph)
{
        double rate = (double)ph->sorts * (double)cfg->n / ph->seconds;
        uint64_t cpu = ph->after.cpu_path_sorts - ph->before.cpu_path_sorts;

        printf("  round %d, device-streams %-8s %6ld sorts in %6.3f s  %8.1f Mkeys/s  %6.2f GB/s\n",
               round, streams ? streams : "default", ph->sorts, ph->seconds, rate * 1e-6,
               rate * 4e-9);
        for (unsigned i = 0; i < ph->after.device_count && i < SORTD_MAX_DEVICES; i++)
                device_row(ph, &ph->after.devices[i]);
        if (!ph->after.device_count)
                printf("    no device rows in Status: the daemon serves no GPU (engine %s)\n",
                       ph->after.engine);
        if (cpu)
                printf("    cpu path  %6llu sorts %5.1f%%\n", (unsigned long long)cpu,
                       100.0 * (double)cpu / (double)ph->sorts);
}

/* The device-streams settings the phases compare: one, the daemon's default included, or two. */
static int settings(const bench_clients_config *cfg)
{
        return cfg->nstreams == 2 ? 2 : 1;
}

/* The median of v[0..n), left in its order. */
static double median_of(const double *v, int n)
{
        double copy[BENCH_MAX_ROUNDS];

        memcpy(copy, v, (size_t)n * sizeof(double));
        return bench_median(copy, (size_t)n);
}

/* Each setting's median rate over the rounds, then the first's gain over the second, with the
   issue's target where the phases ran on devices at its size. */
static void summary(const bench_clients_config *cfg, double (*rate)[BENCH_MAX_ROUNDS],
                    bool on_devices)
{
        double ratio[BENCH_MAX_ROUNDS], gain, med;

        for (int k = 0; k < settings(cfg) && cfg->rounds > 1; k++) {
                med = median_of(rate[k], cfg->rounds);
                printf("  median of %d rounds, device-streams %-8s %8.1f Mkeys/s  %6.2f GB/s\n",
                       cfg->rounds, cfg->nstreams ? cfg->streams[k] : "default", med * 1e-6,
                       med * 4e-9);
        }
        if (cfg->nstreams < 2)
                return;
        for (int r = 0; r < cfg->rounds; r++)
                ratio[r] = rate[0][r] / rate[1][r];
        gain = median_of(ratio, cfg->rounds);
        printf("  device-streams %s against %s: %.2fx  (median of the rounds' ratios:",
               cfg->streams[0], cfg->streams[1], gain);
        for (int r = 0; r < cfg->rounds; r++)
                printf(" %.2fx", ratio[r]);
        if (on_devices && cfg->n >= TARGET_N)
                printf("; target >= %.1fx, PCIe's full duplex caps it near 2x): %s\n", TARGET_GAIN,
                       gain >= TARGET_GAIN ? "met" : "MISSED");
        else
                printf(")\n");
}

int bench_clients(const bench_clients_config *cfg)
{
        client *cl = calloc((size_t)cfg->clients, sizeof(*cl));
        phase *ph = malloc(sizeof(*ph));
        double rate[2][BENCH_MAX_ROUNDS];
        bool on_devices = true;
        char name[32];
        int r = cl && ph ? clients_prepare(cl, cfg) : -1;

        printf("clients: %d at once, each sorting %s u32 keys in a shared-memory region of its "
               "own, ",
               cfg->clients, bench_count_name(cfg->n, name, sizeof(name)));
        if (cfg->sorts)
                printf("%ld sorts each", cfg->sorts);
        else
                printf("%.1f s", cfg->seconds);
        printf(" a phase, %d round(s) (each client's first and last sort verified):\n",
               cfg->rounds);
        for (int round = 0; round < cfg->rounds && r == 0; round++) {
                /* ABBA: each setting runs first in every other round, so a drift of the
                   machine's speed over the run weighs on both alike. */
                for (int j = 0; j < settings(cfg); j++) {
                        int k = cfg->nstreams == 2 && round % 2 ? 1 - j : j;
                        const char *streams = cfg->nstreams ? cfg->streams[k] : NULL;

                        if ((r = phase_run(cfg, cl, streams, ph)) < 0)
                                break;
                        phase_print(cfg, round + 1, streams, ph);
                        rate[k][round] = (double)ph->sorts * (double)cfg->n / ph->seconds;
                        on_devices &= ph->after.device_count > 0;
                }
        }
        if (r == 0)
                summary(cfg, rate, on_devices);
        for (int i = 0; cl && i < cfg->clients; i++) {
                free(cl[i].input);
                free(cl[i].want);
        }
        free(cl);
        free(ph);
        return r;
}
