/* Opening the engine, and replacing it when its device is lost (see recovery.h). */
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
        snprintf(r->first.reason, sizeof(r->first.reason), "%s", reason);
        atomic_init(&r->serving, &r->first);
        atomic_init(&r->losses, 0);
}

/*
 * A fresh engine as the policy says: the lost one's kind again, or the CPU engine, which is
 * also where a failed re-creation ends up.
 */
static sortd_status open_replacement(sortd__recovery *r, const char *kind, sortd_engine **out,
                                     char *report, size_t len)
{
        char first[256];
        sortd_status s;

        if (r->policy == SORTD__ON_LOSS_CPU || strcmp(kind, "cpu") == 0)
                return sortd__recovery_engine_open("cpu", &r->ec, out, report, len);
        s = sortd__recovery_engine_open(kind, &r->ec, out, first, sizeof(first));
        if (s == SORTD_OK) {
                snprintf(report, len, "a new %s engine: %s", kind, first);
                return s;
        }
        s = sortd__recovery_engine_open("cpu", &r->ec, out, report, len);
        if (s == SORTD_OK)
                snprintf(report, len, "the cpu engine: a new %s engine cannot serve (%s)", kind,
                         first);
        return s;
}

sortd_engine *sortd__recovery_replace(sortd_engine *lost, void *arg)
{
        sortd__recovery *r = arg;
        unsigned n = r->made_count;
        char report[512];
        sortd__recovery_serving *next;
        sortd_status s;

        /* Counted whether or not another engine can be made: engines_lost says what failed. */
        atomic_fetch_add(&r->losses, 1);
        sortd__log(SORTD__LOG_ERR, "the %s engine lost its device: %s", sortd_engine_kind(lost),
                   sortd_engine_error(lost));
        if (n == SORTD__MAX_ENGINE_LOSSES) {
                sortd__log(SORTD__LOG_ERR, "%u engines lost: no more are made; sorts fail", n);
                return NULL;
        }
        next = calloc(1, sizeof(*next));
        if (!next) {
                sortd__log(SORTD__LOG_ERR, "no memory for a new engine; sorts fail");
                return NULL;
        }
        s = open_replacement(r, sortd_engine_kind(lost), &next->engine, report, sizeof(report));
        if (s != SORTD_OK) {
                sortd__log(SORTD__LOG_ERR, "no engine can replace it (%s: %s); sorts fail",
                           sortd_strerror(s), report);
                free(next);
                return NULL;
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
}
