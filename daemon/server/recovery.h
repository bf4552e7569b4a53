/*
 * When the engine loses its device (recovery.c): the engine thread replaces it, as
 * on-device-loss says, with a fresh engine of the same kind or with the CPU engine, and the
 * loop thread reads which engine serves now. A lost engine is kept, not destroyed, until the
 * daemon stops: regions and the host pool still hold memory it gave them.
 */
#ifndef SORTD_DAEMON_RECOVERY_H
#define SORTD_DAEMON_RECOVERY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

/* Engines the daemon replaces before it gives up and fails every sort: a device that keeps
   failing is not worth a fresh context every few sorts. */
#define SORTD__MAX_ENGINE_LOSSES 16

enum sortd__recovery_policy { SORTD__ON_LOSS_RECREATE, SORTD__ON_LOSS_CPU };

/* on-device-loss's names, indexed by policy; NULL ends them. */
extern const char *const sortd__recovery_policy_names[];

/*
 * What the lanes of one device share: its losses. Each loss makes every engine made on the
 * device before it stale (a CUDA context dies with its device's sticky error), so each lane
 * replaces its engine before it fails a sort, and the device counts one loss, not one per
 * lane.
 */
typedef struct sortd__recovery_device {
        atomic_uint epoch; /* losses so far */
} sortd__recovery_device;

/* Which engine serves and why; immutable once published. */
typedef struct sortd__recovery_serving {
        sortd_engine *engine;
        char reason[1024];
} sortd__recovery_serving;

typedef struct sortd__recovery {
        enum sortd__recovery_policy policy;
        sortd_engine_config ec;        /* for a new engine; its faults cleared */
        sortd__recovery_serving first; /* the engine the daemon started with */
        _Atomic(sortd__recovery_serving *)
                serving;    /* written by the engine thread, read by the loop */
        atomic_uint losses; /* engines lost, replaced or not (engines_lost) */
        /* The replacements, made by whichever thread runs the engine (worker.c). */
        sortd__recovery_serving *made[SORTD__MAX_ENGINE_LOSSES];
        unsigned made_count;
        sortd__recovery_device own, *device; /* own, or the one its device's lanes share */
        unsigned epoch;                      /* the device's epoch its engine was made in */
        bool cpu_fallback; /* a failed re-creation ends on the cpu engine; else on nothing */
        /* No engine could be made: set once, by the engine thread, after gave_up_reason. */
        atomic_bool gave_up;
        char gave_up_reason[512];
} sortd__recovery;

/*
 * Creates the engine `kind` and runs its self-check (engine.h: GPU engines against the CPU
 * engine); an engine that sorts wrong is not served. *out is set on success only; report gets
 * the self-check's account, or why the engine cannot serve.
 */
sortd_status sortd__recovery_engine_open(const char *kind, const sortd_engine_config *ec,
                                         sortd_engine **out, char *report, size_t len);

/* r as policy says, with e the engine serving first, ec how it was made and reason why. */
void sortd__recovery_init(sortd__recovery *r, enum sortd__recovery_policy policy,
                          const sortd_engine_config *ec, sortd_engine *e, const char *reason);
/*
 * After init: r's engine is one of several on dev, which the others share. cpu_fallback: a
 * lost engine that cannot be made again is replaced by the cpu engine as the policy says
 * (one device); without it, by none (several: the other devices serve, and the lane stops).
 */
void sortd__recovery_share(sortd__recovery *r, sortd__recovery_device *dev, bool cpu_fallback);
/* worker.h's stale: whether another engine of r's device was lost since r's was made. */
bool sortd__recovery_stale(const sortd_engine *e, void *arg);

/*
 * The engine thread's call once lost reports sortd_engine_lost: counts the loss, and returns
 * the engine to sort with from now on, or NULL when none could be made (lost stays; every
 * sort fails with its message).
 */
sortd_engine *sortd__recovery_replace(sortd_engine *lost, void *arg);

/* The engine serving now and why: from the loop thread. */
const sortd__recovery_serving *sortd__recovery_current(sortd__recovery *r);

/* Destroys the replacements (the first engine is its creator's): after the engine thread. */
void sortd__recovery_close(sortd__recovery *r);

#endif
