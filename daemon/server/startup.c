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

#include "log.h"
#include "region.h"
#include "route.h"
#include "startup.h"

/* auto: cuda where it is present and passes its self-check, else cpu, saying why. */
static sortd_status create_auto(sortd__server *srv, const sortd_engine_config *ec)
{
        char report[256], cpu_report[256];
        sortd_status s =
                sortd__recovery_engine_open("cuda", ec, &srv->engine, report, sizeof(report));

        if (s == SORTD_OK) {
                snprintf(srv->engine_reason, sizeof(srv->engine_reason), "auto chose cuda: %s",
                         report);
                return s;
        }
        s = sortd__recovery_engine_open("cpu", ec, &srv->engine, cpu_report, sizeof(cpu_report));
        if (s == SORTD_OK)
                snprintf(srv->engine_reason, sizeof(srv->engine_reason),
                         "auto chose cpu: cuda cannot serve (%s)", report);
        else
                snprintf(srv->engine_reason, sizeof(srv->engine_reason),
                         "cuda cannot serve (%s), nor cpu (%s: %s)", report, sortd_strerror(s),
                         cpu_report);
        return s;
}

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

sortd_status sortd__startup_engine(sortd__server *srv, const sortd_engine_config *ec,
                                   enum sortd__recovery_policy policy)
{
        char report[256];
        sortd_status s;

        if (strcmp(srv->cfg.engine, "auto") == 0) {
                s = create_auto(srv, ec);
        } else {
                s = sortd__recovery_engine_open(srv->cfg.engine, ec, &srv->engine, report,
                                                sizeof(report));
                snprintf(srv->engine_reason, sizeof(srv->engine_reason), "%s %s: %s",
                         s == SORTD_OK ? "configured" : "cannot create engine", srv->cfg.engine,
                         report);
        }
        if (s != SORTD_OK)
                return s;
        sortd__recovery_init(&srv->recovery, policy, ec, srv->engine, srv->engine_reason);
        /* Asked now, while no other thread calls the engine; CUDA regions need it. */
        srv->env.has_device =
                sortd_engine_device_uuid(srv->engine, srv->env.device_uuid) == SORTD_OK;
        sortd__log(SORTD__LOG_NOTICE, "engine %s (%s): %s", sortd_engine_kind(srv->engine),
                   sortd_engine_device(srv->engine), srv->engine_reason);
        return s;
}

sortd_status sortd__startup_cpu_path(sortd__server *srv, char *why, size_t why_len)
{
        sortd__route_settings rs = {.cpu_path_keys = srv->cfg.cpu_path_keys,
                                    .capacity = srv->cfg.capacity,
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
                if (!srv->env.has_device) /* host memory is all it sorts in: nothing to pin */
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
