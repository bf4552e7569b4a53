/*
 * What a start makes before the loop (see startup.h): the engine, the CPU path beside it, the
 * host pool, and what the machine says of shared memory's pages. Nothing here reports a
 * failure as the daemon's: each returns why, and server.c decides the exit.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "log.h"
#include "numa.h"
#include "region.h"
#include "route.h"
#include "startup.h"

/*
 * SORTD_TEST_FAULT=KIND:EVERY, for tests only: the engine's every EVERY-th sort fails, as a
 * device out of memory (nomem), a device error (device) or one that loses the device (lost).
 */
int sortd__startup_test_faults(sortd_engine_faults *f)
{
        const char *spec = getenv("SORTD_TEST_FAULT");
        char kind[16], *end;
        unsigned long every;
        int n = 0;

        if (!spec || !*spec)
                return 0;
        /* strtoul alone would take "-1" (as ULONG_MAX) and leading blanks: digits only. */
        if (sscanf(spec, "%15[a-z]:%n", kind, &n) != 1 || n == 0 ||
            !isdigit((unsigned char)spec[n]))
                goto bad;
        errno = 0;
        every = strtoul(spec + n, &end, 10);
        if (errno || *end || every == 0 || every > UINT_MAX)
                goto bad;
        *f = (sortd_engine_faults){.every = (unsigned)every, .status = SORTD_E_DEVICE};
        if (strcmp(kind, "nomem") == 0)
                f->status = SORTD_E_NOMEM;
        else if (strcmp(kind, "lost") == 0)
                f->lose_device = 1;
        else if (strcmp(kind, "device") != 0)
                goto bad;
        sortd__log(SORTD__LOG_WARNING,
                   "SORTD_TEST_FAULT=%s: one engine call in %lu fails (a test hook)", spec, every);
        return 0;
bad:
        sortd__log(SORTD__LOG_ERR,
                   "SORTD_TEST_FAULT='%s': want KIND:EVERY, KIND nomem, device or lost, EVERY >= 1",
                   spec);
        return -EINVAL;
}

/* ---- engines ---- */

/* An engine of kind for lane srv->n_lanes, self-checked if check: the lane is srv's then. */
static sortd_status open_lane(sortd__server *srv, const char *kind, const sortd_engine_config *ec,
                              bool check, char *report, size_t len)
{
        sortd_engine *e;
        sortd_status s = check ? sortd__recovery_engine_open(kind, ec, &e, report, len)
                               : sortd_engine_create(kind, ec, &e, report, len);

        if (s == SORTD_OK)
                srv->lane_engines[srv->n_lanes++] = e;
        return s;
}

/* Lets the lanes from first on go: their engines never served. */
static void close_lanes(sortd__server *srv, unsigned first)
{
        while (srv->n_lanes > first)
                sortd_engine_destroy(srv->lane_engines[--srv->n_lanes]);
}

/*
 * Where the machine has several NUMA nodes and d's is known: d's engines are made on its
 * node's CPUs (their pinned staging is first touched there; their copy threads start there)
 * and its engine threads will run there. *saved: the affinity to go back to.
 */
static bool place_on_node(sortd__server_device *d, cpu_set_t *saved)
{
        const char *root = sortd__numa_root();
        char list[64] = "";
        int nodes = sortd__numa_nodes(root);

        d->numa_node = sortd__numa_node_of(root, d->info.pci_bus_id);
        if (nodes < 2 || d->numa_node < 0 || !sortd__numa_cpus(root, d->numa_node, &d->cpus) ||
            sched_getaffinity(0, sizeof(*saved), saved) != 0 ||
            sched_setaffinity(0, sizeof(d->cpus), &d->cpus) != 0)
                return false;
        for (int c = 0, n = 0; c < CPU_SETSIZE && n < 8; c++)
                if (CPU_ISSET(c, &d->cpus))
                        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d",
                                 n++ ? "," : "", c);
        sortd__log(SORTD__LOG_INFO, "device %d is on NUMA node %d of %d: its engines on CPUs %s%s",
                   d->info.ordinal, d->numa_node, nodes, list,
                   CPU_COUNT(&d->cpus) > 8 ? ",..." : "");
        d->pinned = true;
        return true;
}

/*
 * device-streams engines of kind on d, the first self-checked: the others run the same kernels
 * on the same device, and a self-check each would only add seconds to the start. On a failure
 * none stays, and d->reason says why.
 */
static bool open_device(sortd__server *srv, const char *kind, const sortd_engine_config *base,
                        sortd__server_device *d)
{
        sortd_engine_config ec = *base;
        unsigned first = srv->n_lanes;
        char report[256];
        sortd_status s = SORTD_OK;
        cpu_set_t saved;
        bool placed = place_on_node(d, &saved);

        ec.device = d->info.ordinal;
        if (srv->cfg.capacity == SORTD__CONFIG_AUTO)
                ec.capacity = (size_t)sortd__devices_auto_capacity(
                        d->info.free_bytes, (unsigned)srv->cfg.device_streams,
                        srv->cfg.max_request_bytes);
        d->first_lane = first;
        for (unsigned k = 0; k < srv->cfg.device_streams && s == SORTD_OK; k++)
                s = open_lane(srv, kind, &ec, k == 0, k == 0 ? d->reason : report,
                              k == 0 ? sizeof(d->reason) : sizeof(report));
        if (placed)
                (void)sched_setaffinity(0, sizeof(saved), &saved);
        if (s == SORTD_OK) {
                d->lanes = srv->n_lanes - first;
                return true;
        }
        if (srv->n_lanes > first) /* the self-check passed: a later engine failed */
                snprintf(d->reason, sizeof(d->reason), "engine %u of %llu: %s",
                         srv->n_lanes - first + 1, (unsigned long long)srv->cfg.device_streams,
                         report);
        close_lanes(srv, first);
        sortd__log(SORTD__LOG_WARNING, "device %d (%s, %s) left out: %s", d->info.ordinal,
                   d->info.name, d->info.pci_bus_id, d->reason);
        return false;
}

/* One line of what happened to each device, for the log and Status. */
static void devices_summary(const sortd__server *srv, const char *kind, char *out, size_t len)
{
        size_t used = (size_t)snprintf(out, len, "%s on %u of %u device(s)", kind, srv->n_serving,
                                       srv->n_devices);

        for (unsigned i = 0; i < srv->n_devices && used < len; i++) {
                const sortd__server_device *d = &srv->devices[i];

                used += (size_t)snprintf(out + used, len - used, "; %d %s: %s", d->info.ordinal,
                                         d->index >= 0 ? "serves" : "left out", d->reason);
        }
}

/*
 * The GPU engines of kind on the devices the devices setting names: SORTD_OK when at least one
 * serves; else why none can serve, with *bad set when the setting names no device.
 */
static sortd_status open_gpus(sortd__server *srv, const char *kind, const sortd_engine_config *ec,
                              bool *bad, char *why, size_t len)
{
        sortd_device_info list[SORTD__DEVICES_MAX];
        unsigned idx[SORTD__DEVICES_MAX];
        size_t count = 0;
        sortd_status s = sortd_devices_list(list, SORTD__DEVICES_MAX, &count, why, len);
        int n;

        if (s != SORTD_OK)
                return s;
        if (count == 0 && sortd__devices_auto(srv->cfg.devices)) {
                /* The engine says why there is none, as it always has. */
                s = open_lane(srv, kind, ec, true, why, len);
                close_lanes(srv, 0);
                return s == SORTD_OK ? SORTD_E_NODEV : s;
        }
        n = sortd__devices_resolve(srv->cfg.devices, list,
                                   count < SORTD__DEVICES_MAX ? count : SORTD__DEVICES_MAX, idx,
                                   why, len);
        *bad = n < 0;
        if (n < 0)
                return SORTD_E_INVAL;
        for (int i = 0; i < n; i++) {
                sortd__server_device *d = &srv->devices[srv->n_devices++];

                *d = (sortd__server_device){.info = list[idx[i]], .index = -1};
                atomic_init(&d->recovery.epoch, 0);
                if (open_device(srv, kind, ec, d))
                        d->index = (int)srv->n_serving++;
        }
        devices_summary(srv, kind, why, len);
        return srv->n_serving ? SORTD_OK : SORTD_E_NODEV;
}

/* The lanes' recoveries, once it is known how many devices serve: with several, a lost one
   that cannot be made again is dropped rather than replaced by the cpu engine. */
static void init_recovery(sortd__server *srv, const sortd_engine_config *ec,
                          enum sortd__recovery_policy policy)
{
        for (unsigned i = 0; i < srv->n_devices; i++) {
                sortd__server_device *d = &srv->devices[i];
                sortd_engine_config dec = *ec;

                dec.device = d->info.ordinal;
                for (unsigned k = d->first_lane; d->index >= 0 && k < d->first_lane + d->lanes;
                     k++) {
                        sortd__recovery_init(&srv->recovery[k], policy, &dec, srv->lane_engines[k],
                                             d->reason);
                        sortd__recovery_share(&srv->recovery[k], &d->recovery, srv->n_serving == 1);
                }
        }
        if (srv->n_serving == 0) /* the cpu engine, one lane */
                sortd__recovery_init(&srv->recovery[0], policy, ec, srv->lane_engines[0],
                                     srv->engine_reason);
}

/* A GPU engine kind on the devices, or for auto the cpu engine when none serves. */
static sortd_status open_engines(sortd__server *srv, const sortd_engine_config *ec)
{
        bool is_auto = strcmp(srv->cfg.engine, "auto") == 0;
        const char *kind = is_auto ? "cuda" : srv->cfg.engine;
        char report[768], cpu_report[256];
        bool bad = false;
        sortd_status s;

        if (strcmp(kind, "cpu") == 0) {
                s = open_lane(srv, "cpu", ec, true, report, sizeof(report));
                snprintf(srv->engine_reason, sizeof(srv->engine_reason), "%s cpu: %s",
                         s == SORTD_OK ? "configured" : "cannot create engine", report);
                return s;
        }
        s = open_gpus(srv, kind, ec, &bad, report, sizeof(report));
        if (s == SORTD_OK || !is_auto || bad) {
                if (s == SORTD_OK)
                        snprintf(srv->engine_reason, sizeof(srv->engine_reason), "%s %s",
                                 is_auto ? "auto chose" : "configured", report);
                else if (bad)
                        snprintf(srv->engine_reason, sizeof(srv->engine_reason), "%s", report);
                else
                        snprintf(srv->engine_reason, sizeof(srv->engine_reason),
                                 "cannot create engine %s: %s", kind, report);
                return s;
        }
        s = open_lane(srv, "cpu", ec, true, cpu_report, sizeof(cpu_report));
        if (s == SORTD_OK)
                snprintf(srv->engine_reason, sizeof(srv->engine_reason),
                         "auto chose cpu: cuda cannot serve (%s)", report);
        else
                snprintf(srv->engine_reason, sizeof(srv->engine_reason),
                         "cuda cannot serve (%.600s), nor cpu (%s: %.200s)", report,
                         sortd_strerror(s), cpu_report);
        return s;
}

sortd_status sortd__startup_engine(sortd__server *srv, const sortd_engine_config *ec,
                                   enum sortd__recovery_policy policy)
{
        sortd_status s;

        if (getenv("SORTD_TEST_SELFCHECK_CASES"))
                sortd__log(SORTD__LOG_WARNING,
                           "SORTD_TEST_SELFCHECK_CASES=%s: the self-checks run part of their "
                           "sample (a test hook)",
                           getenv("SORTD_TEST_SELFCHECK_CASES"));
        s = open_engines(srv, ec);

        if (s != SORTD_OK)
                return s;
        srv->engine = srv->lane_engines[0];
        init_recovery(srv, ec, policy);
        sortd__log(SORTD__LOG_NOTICE, "engine %s (%s): %s", sortd_engine_kind(srv->engine),
                   sortd_engine_device(srv->engine), srv->engine_reason);
        return s;
}

sortd_status sortd__startup_cpu_path(sortd__server *srv, char *why, size_t why_len)
{
        sortd__route_settings rs = {.cpu_path_keys = srv->cfg.cpu_path_keys,
                                    .capacity = sortd_engine_capacity(srv->engine),
                                    .threads = (unsigned)srv->cfg.threads};

        return sortd__route_open(&srv->engines.route, srv->engine, &rs, why, why_len);
}

/* ---- host pool ---- */

/*
 * auto: on a GPU engine, as much pinned memory as the in-flight limit lets requests hold, up
 * to 4 GiB. Pinned pages are RAM taken from the machine for as long as the daemon runs (never
 * swapped nor reclaimed), and pinning them at start-up takes time in proportion; 4 GiB holds
 * sixteen of the largest default requests (256 MiB) at once, more than one engine sorting one
 * at a time can keep busy. Off on the CPU engine: it sorts pageable memory at full speed, and
 * a pre-faulted arena would cost its user RAM for nothing.
 */
#define HOST_POOL_AUTO_MAX (4ull << 30)

static uint64_t host_pool_bytes(const sortd__server *srv)
{
        uint64_t limit = srv->cfg.max_inflight_bytes;
        uint64_t want = srv->cfg.host_pool;

        if (want == SORTD__CONFIG_AUTO) {
                if (!srv->n_serving) /* host memory is all it sorts in: nothing to pin */
                        return 0;
                return limit < HOST_POOL_AUTO_MAX ? limit : HOST_POOL_AUTO_MAX;
        }
        /* Requests in flight never hold more than max-inflight-bytes, so the rest would be
           pinned memory nothing uses. */
        if (want > limit) {
                sortd__log(SORTD__LOG_WARNING,
                           "host-pool %llu is more than max-inflight-bytes %llu lets requests "
                           "use: taking %llu",
                           (unsigned long long)want, (unsigned long long)limit,
                           (unsigned long long)limit);
                return limit;
        }
        return want;
}

/*
 * Takes the pool's arena from the engine before the engine thread starts, so that the call
 * cannot overlap a sort. Without it the daemon still serves, from the heap, so a failure is a
 * warning.
 */
void sortd__startup_host_pool(sortd__server *srv)
{
        uint64_t bytes = host_pool_bytes(srv);
        char why[256];
        sortd_status s =
                sortd__hostpool_open(&srv->pool, srv->engine, (size_t)bytes, why, sizeof(why));

        if (s != SORTD_OK)
                sortd__log(SORTD__LOG_WARNING,
                           "no host pool: cannot take %llu bytes of %s host memory (%s: %s); "
                           "requests are received into the heap",
                           (unsigned long long)bytes, sortd_engine_kind(srv->engine),
                           sortd_strerror(s), why);
        else if (sortd__hostpool_on(&srv->pool))
                sortd__log(SORTD__LOG_INFO, "host pool: %llu bytes of %s host memory",
                           (unsigned long long)bytes, sortd_engine_kind(srv->engine));
}

/*
 * Regions are sorted in place, in the client's shared memory. With 4 KiB pages there (the
 * kernel's default for shared memory) a 2^24-key sort took up to 2x its time in huge-page
 * memory on our test VM, so a daemon that will see regions says so once.
 */
void sortd__startup_note_shmem_pages(void)
{
        char mode[32];

        if (sortd__region_shmem_thp_mode(SORTD__REGION_SHMEM_THP_PATH, mode, sizeof(mode)) != 0)
                return;
        if (strcmp(mode, "never") == 0 || strcmp(mode, "deny") == 0)
                sortd__log(SORTD__LOG_NOTICE,
                           "shared-memory regions get 4 KiB pages (%s is %s): large sorts in "
                           "them can take up to 2x as long; set it to advise",
                           SORTD__REGION_SHMEM_THP_PATH, mode);
}
