/* The engines as the connections see them (see engines.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engines.h"
#include "region.h"

/* Sorts of fewer bytes are timed by their fixed costs (a launch, a round trip), not by their
   bytes: they would make a lane's rate look slow. */
#define MEASURE_MIN_BYTES (1u << 20)

/* e->route is left as it is: it may be open already. */
int sortd__engines_init(sortd__engines *e, uint64_t loop_sort_keys)
{
        e->n_lanes = e->n_devices = e->n_wake = e->next = 0;
        e->stopping = false;
        e->loop_sort_keys = loop_sort_keys;
        memset(&e->cpu_worker, 0, sizeof(e->cpu_worker));
        return sortd__queue_init(&e->cpu_queue);
}

void sortd__engines_destroy(sortd__engines *e)
{
        for (unsigned i = 0; i < e->n_lanes; i++)
                sortd__queue_destroy(&e->lanes[i].queue);
        e->n_lanes = 0;
        sortd__queue_destroy(&e->cpu_queue);
}

int sortd__engines_add_device(sortd__engines *e, const uint8_t uuid[SORTD_DEVICE_UUID_BYTES])
{
        sortd__engines_device *d;

        if (e->n_devices == SORTD__ENGINES_MAX_DEVICES)
                return -ENOSPC;
        d = &e->devices[e->n_devices];
        *d = (sortd__engines_device){.numa_node = -1};
        memcpy(d->uuid, uuid, SORTD_DEVICE_UUID_BYTES);
        d->first_lane = e->n_lanes;
        return (int)e->n_devices++;
}

int sortd__engines_add_lane(sortd__engines *e, int device, sortd_engine *engine,
                            const sortd__worker_loss *loss)
{
        sortd__engines_device *d = device >= 0 ? &e->devices[device] : NULL;
        sortd__lane *l = &e->lanes[e->n_lanes];
        int r;

        if (e->n_lanes == SORTD__ENGINES_MAX_LANES)
                return -ENOSPC;
        if (device >= (int)e->n_devices ||
            (d && d->lanes && d->first_lane + d->lanes != e->n_lanes))
                return -EINVAL;
        *l = (sortd__lane){0};
        r = sortd__queue_init(&l->queue);
        if (r < 0)
                return r;
        l->engine = engine;
        l->device = device;
        l->capacity = engine ? sortd_engine_capacity(engine) : UINT64_MAX;
        if (loss)
                sortd__worker_on_loss(&l->worker, loss);
        if (d) {
                if (!d->lanes)
                        d->first_lane = e->n_lanes;
                d->lanes++;
        }
        e->n_lanes++;
        return 0;
}

void sortd__engines_pin_device(sortd__engines *e, unsigned device, int node, const cpu_set_t *cpus)
{
        sortd__engines_device *d = &e->devices[device];

        d->numa_node = node;
        for (unsigned i = d->first_lane; i < d->first_lane + d->lanes; i++)
                sortd__worker_on_cpus(&e->lanes[i].worker, cpus);
}

/* The bytes a job moves: what routing weighs and the device counts. */
static uint64_t job_bytes(const sortd__job *j)
{
        return sortd__job_is_sort(j) ? j->work.sizes.reply_len : 0;
}

static bool lane_serving(sortd__engines *e, int lane)
{
        return lane >= 0 && !atomic_load(&e->lanes[lane].worker.dropped);
}

/* A lane's time per byte: its own, else the mean of those measured, else 1 (all alike). */
static double rate_of(const sortd__engines *e, const sortd__lane *l)
{
        double sum = 0;
        unsigned n = 0;

        if (l->ns_per_byte > 0)
                return l->ns_per_byte;
        for (unsigned i = 0; i < e->n_lanes; i++) {
                if (e->lanes[i].ns_per_byte > 0) {
                        sum += e->lanes[i].ns_per_byte;
                        n++;
                }
        }
        return n ? sum / n : 1;
}

/* Whether lane i's device is on the NUMA node j's memory lies on. */
static bool near(const sortd__engines *e, unsigned i, const sortd__job *j)
{
        int d = e->lanes[i].device;

        return j->numa_node >= 0 && d >= 0 && e->devices[d].numa_node == j->numa_node;
}

/* The serving lane, of device (or any: -1), expected to finish j first; a tie goes to a lane
   near j's memory, else round the lanes. -1. */
static int least_busy(sortd__engines *e, const sortd__job *j, int device)
{
        uint64_t bytes = job_bytes(j);
        double best_cost = 0;
        int best = -1;

        for (unsigned k = 0; k < e->n_lanes; k++) {
                unsigned i = (e->next + k) % e->n_lanes;
                const sortd__lane *l = &e->lanes[i];
                double cost;

                if ((device >= 0 && l->device != device) || l->capacity < j->work.n ||
                    !lane_serving(e, (int)i))
                        continue;
                cost = (double)(l->queued_bytes + bytes) * rate_of(e, l);
                if (best < 0 || cost < best_cost ||
                    (cost == best_cost && near(e, i, j) && !near(e, (unsigned)best, j))) {
                        best = (int)i;
                        best_cost = cost;
                }
        }
        if (best >= 0)
                e->next = (unsigned)best + 1;
        return best;
}

/* The lane that may run j and should, or -1 when none that may still sorts. */
static int pick(sortd__engines *e, const sortd__job *j)
{
        switch (j->work.op) {
        case SORTD__JOB_OP_REGION_CLOSE: /* the engine that opened it; a lost one can */
                return j->work.region->lane >= 0 ? j->work.region->lane : 0;
        case SORTD__JOB_OP_SORT_DEVICE: /* opened there, by that lane's engine */
                return lane_serving(e, j->keys_rg->lane) ? j->keys_rg->lane : -1;
        default:
                return least_busy(e, j, j->device);
        }
}

/* Where j goes when no lane that may run it sorts: one of those, which hands it back, for
   on_done to fail it with the reason. */
static int fallback(const sortd__engines *e, const sortd__job *j)
{
        if (j->work.op == SORTD__JOB_OP_SORT_DEVICE && j->keys_rg->lane >= 0)
                return j->keys_rg->lane;
        if (j->device >= 0 && e->devices[j->device].lanes)
                return (int)e->devices[j->device].first_lane;
        return 0;
}

static void queue_on(sortd__engines *e, sortd__job *j, int lane)
{
        sortd__lane *l = &e->lanes[lane];

        j->lane = lane;
        if (j->work.op == SORTD__JOB_OP_REGION_OPEN)
                j->work.region->lane = lane;
        l->queued_bytes += job_bytes(j);
        sortd__queue_push(&l->queue, &j->flows->flow[lane], j);
}

/* A finished job's lane: its bytes are no longer queued there, and what it took is counted. */
static void settle(sortd__engines *e, const sortd__job *j)
{
        sortd__lane *l = &e->lanes[j->lane];
        uint64_t bytes = job_bytes(j), ns = j->work.t_done - j->work.t_sort;
        sortd__engines_device *d;

        l->queued_bytes -= bytes < l->queued_bytes ? bytes : l->queued_bytes;
        if (j->work.bounced || j->work.unsupported || !sortd__job_is_sort(j))
                return;
        if (!j->work.batch_size && j->work.status == SORTD_OK && bytes >= MEASURE_MIN_BYTES)
                l->ns_per_byte = l->ns_per_byte > 0 ? 0.75 * l->ns_per_byte + 0.25 * ns / bytes
                                                    : (double)ns / bytes;
        if (l->device < 0)
                return;
        d = &e->devices[l->device];
        d->sorts++;
        d->bytes += bytes;
        if (!j->work.batch_size || j->work.batch_first)
                d->busy_ns += ns;
}

/*
 * A job its lane handed back unrun goes to another lane: only a sort in host memory can (a
 * region's open or a device sort belong to their device, and a new open of the region is the
 * client's to ask for). Else it fails, saying why, and ends its turn, which it never took.
 */
static bool move(sortd__engines *e, sortd__job *j)
{
        char uuid[SORTD_DEVICE_UUID_TEXT];
        int from = j->lane, to;

        j->work.bounced = false;
        if (!e->stopping && !j->cancelled && j->work.op == SORTD__JOB_OP_SORT) {
                to = pick(e, j);
                if (to >= 0) {
                        queue_on(e, j, to);
                        return true;
                }
        }
        j->work.status = SORTD_E_DEVICE;
        if (e->lanes[from].device >= 0) {
                sortd_device_uuid_format(e->devices[e->lanes[from].device].uuid, uuid);
                snprintf(j->work.why, sizeof(j->work.why), "device %s was lost%s", uuid,
                         j->work.op == SORTD__JOB_OP_SORT
                                 ? ", and no other device this sort may run on serves"
                                 : ": this needs that device");
        } else {
                snprintf(j->work.why, sizeof(j->work.why), "the engine was lost");
        }
        if (sortd__job_is_sort(j))
                sortd__turns_end(j);
        return false;
}

/* Whether j, segments or a top-k in host memory, may go to the CPU path should its lane's
   engine lack that sort (a GPU engine without the kernels). */
static bool may_fall_back(const sortd__engines *e, const sortd__job *j)
{
        return !sortd__job_plain(j) && e->route.cpu && !j->cpu_path &&
               j->work.op == SORTD__JOB_OP_SORT && j->work.n <= sortd_engine_capacity(e->route.cpu);
}

/* A lane's engine had no such sort: the CPU path runs it, in the turn it still holds. */
static bool fall_back(sortd__engines *e, sortd__job *j)
{
        if (e->stopping || j->cancelled)
                return false;
        j->work.unsupported = false;
        j->work.cpu_fallback = false;
        j->work.status = SORTD_OK;
        j->work.why[0] = '\0';
        j->cpu_path = true;
        j->lane = -1;
        sortd__queue_push(&e->cpu_queue, &j->flows->cpu_flow, j);
        return true;
}

/* Every lane's completion, on the loop thread, before the connection's. */
static void on_done(sortd__job *j, void *arg)
{
        sortd__engines *e = arg;

        if (j->lane >= 0) {
                settle(e, j);
                if (j->work.bounced && move(e, j))
                        return;
                if (j->work.unsupported && fall_back(e, j))
                        return;
        }
        if (j->work.unsupported) { /* not run after all: its turn ends here */
                j->work.unsupported = false;
                sortd__turns_end(j);
        }
        e->complete(j, e->complete_arg);
}

int sortd__engines_start(sortd__engines *e, uv_loop_t *loop, const sortd__queue_batch_limits *lim,
                         sortd__worker_complete_fn complete, void *arg)
{
        int r = 0;

        e->complete = complete;
        e->complete_arg = arg;
        e->n_wake = 0;
        for (unsigned i = 0; i < e->n_lanes && r == 0; i++) {
                sortd__lane *l = &e->lanes[i];

                r = sortd__worker_start(&l->worker, loop, l->engine, &l->queue, lim, on_done, e);
                e->wake[e->n_wake++] = &l->queue;
        }
        if (r == 0 && e->route.cpu) {
                r = sortd__worker_start(&e->cpu_worker, loop, e->route.cpu, &e->cpu_queue, lim,
                                        on_done, e);
                e->wake[e->n_wake++] = &e->cpu_queue;
        }
        if (r < 0)
                sortd__engines_stop(e);
        return r;
}

void sortd__engines_stop(sortd__engines *e)
{
        e->stopping = true;
        for (unsigned i = 0; i < e->n_lanes; i++)
                sortd__worker_stop(&e->lanes[i].worker);
        sortd__worker_stop(&e->cpu_worker);
}

/* A small sort that waits for nobody, sorted here on the loop thread (loop-sort-keys). */
static bool sort_here(sortd__engines *e, sortd__job *j, int lane)
{
        return j->work.op == SORTD__JOB_OP_SORT && sortd__job_plain(j) &&
               j->work.n <= e->loop_sort_keys &&
               sortd__worker_run_here(j->cpu_path ? &e->cpu_worker : &e->lanes[lane].worker, j);
}

bool sortd__engines_submit(sortd__engines *e, sortd__engines_flows *f, sortd__job *j, bool here)
{
        int lane = -1;

        /* A region's close waits for the connection's sorts before it, which may run in it. */
        if (j->work.shared || j->work.op == SORTD__JOB_OP_REGION_CLOSE)
                sortd__turns_take(&f->turns, j, e->wake, e->n_wake);
        j->t_read = uv_hrtime();
        j->flows = f;
        j->cpu_path = j->device < 0 && sortd__route_cpu_path(&e->route, j);
        j->work.cpu_fallback = may_fall_back(e, j);
        if (!j->cpu_path) {
                lane = pick(e, j);
                if (lane < 0)
                        lane = fallback(e, j);
        }
        if (here && sort_here(e, j, lane)) {
                j->state = SORTD__JOB_DONE;
                return true;
        }
        j->state = SORTD__JOB_QUEUED;
        if (j->cpu_path)
                sortd__queue_push(&e->cpu_queue, &f->cpu_flow, j);
        else
                queue_on(e, j, lane);
        return false;
}

static sortd__job *append(sortd__job *list, sortd__job *more)
{
        sortd__job *last = list;

        if (!list)
                return more;
        while (last->qnext)
                last = last->qnext;
        last->qnext = more;
        return list;
}

/* Cancelled jobs give back their lanes' bytes and their turns, which the next ones wait for. */
sortd__job *sortd__engines_cancel(sortd__engines *e, sortd__engines_flows *f)
{
        sortd__job *list = sortd__queue_cancel(&e->cpu_queue, &f->cpu_flow);

        for (unsigned i = 0; i < e->n_lanes; i++)
                list = append(list, sortd__queue_cancel(&e->lanes[i].queue, &f->flow[i]));
        for (sortd__job *j = list; j; j = j->qnext) {
                if (j->lane >= 0)
                        e->lanes[j->lane].queued_bytes -= job_bytes(j);
                sortd__turns_end(j);
        }
        return list;
}

size_t sortd__engines_queued(sortd__engines *e)
{
        size_t n = sortd__queue_length(&e->cpu_queue);

        for (unsigned i = 0; i < e->n_lanes; i++)
                n += sortd__queue_length(&e->lanes[i].queue);
        return n;
}

size_t sortd__engines_device_queued(sortd__engines *e, unsigned device)
{
        const sortd__engines_device *d = &e->devices[device];
        size_t n = 0;

        for (unsigned i = d->first_lane; i < d->first_lane + d->lanes; i++)
                n += sortd__queue_length(&e->lanes[i].queue);
        return n;
}

int sortd__engines_find_device(const sortd__engines *e, const uint8_t uuid[SORTD_DEVICE_UUID_BYTES])
{
        for (unsigned i = 0; i < e->n_devices; i++)
                if (memcmp(e->devices[i].uuid, uuid, SORTD_DEVICE_UUID_BYTES) == 0)
                        return (int)i;
        return -1;
}

bool sortd__engines_device_serving(sortd__engines *e, unsigned device)
{
        const sortd__engines_device *d = &e->devices[device];

        for (unsigned i = d->first_lane; i < d->first_lane + d->lanes; i++)
                if (lane_serving(e, (int)i))
                        return true;
        return false;
}
