/* Opening the engine, and replacing it when its device is lost (see recovery.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "recovery.h"

sortd_status sortd__recovery_engine_open(const char *kind, const sortd_engine_config *ec,
                                         sortd_engine **out, char *report, size_t len)
{
        sortd_engine *e;
        sortd_status s = sortd_engine_create(kind, ec, &e, report, len);

        if (s != SORTD_OK)
                return s;
        s = sortd_engine_selfcheck(e, report, len);
        if (s != SORTD_OK) {
                sortd_engine_destroy(e);
                return s;
        }
        *out = e;
        return SORTD_OK;
}

const char *const sortd__recovery_policy_names[] = {
        [SORTD__ON_LOSS_RECREATE] = "recreate",
        [SORTD__ON_LOSS_CPU] = "cpu",
        NULL,
};

void sortd__recovery_init(sortd__recovery *r, enum sortd__recovery_policy policy,
                          const sortd_engine_config *ec, sortd_engine *e, const char *reason)
{
        *r = (sortd__recovery){.policy = policy, .ec = *ec, .first = {.engine = e}};
        r->ec.faults = (sortd_engine_faults){0};
        r->device = &r->own;
        r->cpu_fallback = true;
        atomic_init(&r->own.epoch, 0);
        atomic_init(&r->gave_up, false);
        snprintf(r->first.reason, sizeof(r->first.reason), "%s", reason);
        atomic_init(&r->serving, &r->first);
        atomic_init(&r->losses, 0);
}

void sortd__recovery_share(sortd__recovery *r, sortd__recovery_device *dev, bool cpu_fallback)
{
        r->device = dev;
        r->epoch = atomic_load(&dev->epoch);
        r->cpu_fallback = cpu_fallback;
}

bool sortd__recovery_stale(const sortd_engine *e, void *arg)
{
        const sortd__recovery *r = arg;

        return r->epoch != atomic_load(&r->device->epoch);
}

/*
 * A fresh engine as the policy says: the lost one's kind again, or the CPU engine, which is
 * also where a failed re-creation ends up, where there is a fallback.
 */
static sortd_status open_replacement(sortd__recovery *r, const char *kind, sortd_engine **out,
                                     char *report, size_t len)
{
        char first[256];
        sortd_status s;

        if (r->cpu_fallback && (r->policy == SORTD__ON_LOSS_CPU || strcmp(kind, "cpu") == 0))
                return sortd__recovery_engine_open("cpu", &r->ec, out, report, len);
        s = sortd__recovery_engine_open(kind, &r->ec, out, first, sizeof(first));
        if (s == SORTD_OK) {
                snprintf(report, len, "a new %s engine: %s", kind, first);
                return s;
        }
        if (!r->cpu_fallback) {
                snprintf(report, len, "a new %s engine cannot serve (%s)", kind, first);
                return s;
        }
        s = sortd__recovery_engine_open("cpu", &r->ec, out, report, len);
        if (s == SORTD_OK)
                snprintf(report, len, "the cpu engine: a new %s engine cannot serve (%s)", kind,
                         first);
        return s;
}

/*
 * Whether the loss is new, to count: the first of the device's lanes to see it moves the
 * device's epoch on, which makes the others' engines stale; theirs was the same loss.
 */
static bool count_loss(sortd__recovery *r, const sortd_engine *lost)
{
        unsigned seen = r->epoch;
        bool first = atomic_compare_exchange_strong(&r->device->epoch, &seen, seen + 1);

        r->epoch = first ? seen + 1 : seen;
        if (first) /* whether or not another engine can be made: engines_lost says what failed */
                atomic_fetch_add(&r->losses, 1);
        return first;
}

static sortd_engine *give_up(sortd__recovery *r, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* No engine serves from now on: why is logged, and kept for Status. */
static sortd_engine *give_up(sortd__recovery *r, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(r->gave_up_reason, sizeof(r->gave_up_reason), fmt, ap);
        va_end(ap);
        sortd__log(SORTD__LOG_ERR, "%s; %s", r->gave_up_reason,
                   r->cpu_fallback ? "sorts fail" : "its sorts go to the other devices");
        atomic_store(&r->gave_up, true);
        return NULL;
}

sortd_engine *sortd__recovery_replace(sortd_engine *lost, void *arg)
{
        sortd__recovery *r = arg;
        unsigned n = r->made_count;
        char report[512];
        sortd__recovery_serving *next;
        sortd_status s;

        if (count_loss(r, lost)) {
                sortd__log(SORTD__LOG_ERR, "the %s engine lost its device: %s",
                           sortd_engine_kind(lost), sortd_engine_error(lost));
        } else {
                sortd__log(SORTD__LOG_NOTICE, "the %s engine's device was lost: replacing it",
                           sortd_engine_kind(lost));
        }
        if (n == SORTD__MAX_ENGINE_LOSSES)
                return give_up(r, "%u engines lost: no more are made", n);
        next = calloc(1, sizeof(*next));
        if (!next)
                return give_up(r, "no memory for a new engine");
        s = open_replacement(r, sortd_engine_kind(lost), &next->engine, report, sizeof(report));
        if (s != SORTD_OK) {
                free(next);
                return give_up(r,
                               "the engine lost its device (%s), and no engine can replace "
                               "it (%s: %s)",
                               sortd_engine_error(lost), sortd_strerror(s), report);
        }
        snprintf(next->reason, sizeof(next->reason),
                 "the %s engine lost its device (%s); on-device-loss=%s made %s",
                 sortd_engine_kind(lost), sortd_engine_error(lost),
                 sortd__recovery_policy_names[r->policy], report);
        sortd__log(SORTD__LOG_WARNING, "now sorting on %s (%s): %s",
                   sortd_engine_kind(next->engine), sortd_engine_device(next->engine),
                   next->reason);
        r->made[n] = next;
        r->made_count = n + 1;
        atomic_store(&r->serving, next);
        return next->engine;
}

const sortd__recovery_serving *sortd__recovery_current(sortd__recovery *r)
{
        return atomic_load(&r->serving);
}

void sortd__recovery_close(sortd__recovery *r)
{
        for (unsigned i = 0; i < r->made_count; i++) {
                sortd_engine_destroy(r->made[i]->engine);
                free(r->made[i]);
                r->made[i] = NULL;
        }
        r->made_count = 0;
        atomic_store(&r->losses, 0);
        atomic_store(&r->serving, &r->first);
        atomic_store(&r->gave_up, false);
}
