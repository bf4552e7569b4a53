/*
 * The engines as the connections see them (engines.c): where a job goes to be sorted.
 *
 * A lane is one engine and the thread that runs it, with its own fair queue. A GPU has one lane
 * per sort it runs at once (device-streams), each lane with an engine of its own (its own
 * stream and temporary storage), so that one sort's copies overlap another's kernels. The CPU
 * path (route.c) is a lane of its own beside them, and the loop thread itself sorts a small
 * sort that waits for nobody.
 *
 * Routing: a sort in device memory goes to the lane that opened its region; a region's close to
 * the lane that opened it; anything else in host memory to the lane expected to finish it first
 * (the bytes queued there times the rate measured there), of the device the client asked for
 * if it did. A lane whose engine is lost for good, with nothing to replace it, hands its jobs
 * back (worker.h), and they go to another lane that may run them, or fail saying why.
 *
 * A connection hands a job in and gets it back through the completion callback its owner gave
 * sortd__engines_start; it never sees which lane ran it. Loop thread, but what queue.c and
 * worker.c say otherwise.
 */
#ifndef SORTD_DAEMON_ENGINES_H
#define SORTD_DAEMON_ENGINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "job.h"
#include "queue.h"
#include "route.h"
#include "turns.h"
#include "worker.h"

#define SORTD__ENGINES_MAX_DEVICES 16
#define SORTD__ENGINES_MAX_STREAMS 4
#define SORTD__ENGINES_MAX_LANES (SORTD__ENGINES_MAX_DEVICES * SORTD__ENGINES_MAX_STREAMS)

/* A device as the engines route to it, and what it did (loop thread). */
typedef struct sortd__engines_device {
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES];
        unsigned first_lane, lanes;
        int numa_node; /* -1: unknown; what breaks a tie for a sort whose memory lies there */
        uint64_t sorts, bytes, busy_ns;
} sortd__engines_device;

/* One engine thread and its queue. */
typedef struct sortd__lane {
        sortd__queue queue;
        sortd__worker worker;
        sortd_engine *engine; /* the one it started with */
        int device;           /* its device's index; -1: an engine without one (cpu) */
        uint64_t capacity;    /* the largest n its engine sorts */
        /* loop thread */
        uint64_t queued_bytes; /* of the jobs handed to it and not yet back */
        double ns_per_byte;    /* its sorts' measured time per byte; 0 until it has one */
} sortd__lane;

typedef struct sortd__engines {
        sortd__lane lanes[SORTD__ENGINES_MAX_LANES];
        unsigned n_lanes;
        sortd__engines_device devices[SORTD__ENGINES_MAX_DEVICES];
        unsigned n_devices;
        sortd__queue cpu_queue; /* the CPU path's */
        sortd__worker cpu_worker;
        sortd__route route;      /* which sorts take the CPU path */
        uint64_t loop_sort_keys; /* sorts up to this n may run on the loop thread; 0: none */
        /* Every queue a connection's region sort may wait in (turns.h). */
        sortd__queue *wake[SORTD__ENGINES_MAX_LANES + 1];
        unsigned n_wake;
        unsigned next; /* where the next tie between lanes starts */
        bool stopping;
        sortd__worker_complete_fn complete;
        void *complete_arg;
} sortd__engines;

/* A connection's place at the engines: its flow in each queue, and its region sorts' turns. */
typedef struct sortd__engines_flows {
        sortd__queue_flow flow[SORTD__ENGINES_MAX_LANES], cpu_flow;
        sortd__turns turns;
} sortd__engines_flows;

/* No lanes yet, the CPU path's queue empty; 0 or a negative errno. e->route is opened apart
   (sortd__route_open), before or after, and closed apart. */
int sortd__engines_init(sortd__engines *e, uint64_t loop_sort_keys);
/* Destroys the queues: after sortd__engines_stop, or when it never started. */
void sortd__engines_destroy(sortd__engines *e);
/* Before start: a device, known by its UUID; its index, or -ENOSPC. */
int sortd__engines_add_device(sortd__engines *e, const uint8_t uuid[SORTD_DEVICE_UUID_BYTES]);
/*
 * Before start: a lane that sorts on engine, of device (an index from add_device, whose lanes
 * must be added one after another) or -1, and what happens when its engine is lost (worker.h;
 * NULL: nothing). 0, -ENOSPC or -EINVAL (a device's lanes apart), or a queue's errno.
 */
int sortd__engines_add_lane(sortd__engines *e, int device, sortd_engine *engine,
                            const sortd__worker_loss *loss);
/* Before start: the device is on NUMA node, and its engine threads run on cpus only (that
   node's). */
void sortd__engines_pin_device(sortd__engines *e, unsigned device, int node, const cpu_set_t *cpus);
/*
 * Starts every lane's engine thread, and the CPU path's on e->route.cpu if there is one: each
 * finished job comes back to complete(j, arg) on loop. lim: how small sorts are batched. 0 or
 * a negative errno, with nothing started.
 */
int sortd__engines_start(sortd__engines *e, uv_loop_t *loop, const sortd__queue_batch_limits *lim,
                         sortd__worker_complete_fn complete, void *arg);
/* Joins the threads; the last completions are delivered first. */
void sortd__engines_stop(sortd__engines *e);
/*
 * Hands j (its work filled in, a region sort's shared set, j->device as dispatch chose) to an
 * engine from f. Returns true when it was sorted now, on the loop thread (here: the caller
 * allows one, and a CPU engine was idle and j small), j then done; false when it was queued,
 * to come back through the completion callback.
 */
bool sortd__engines_submit(sortd__engines *e, sortd__engines_flows *f, sortd__job *j, bool here);
/* Takes f's queued jobs back, never to be sorted: a qnext list. */
sortd__job *sortd__engines_cancel(sortd__engines *e, sortd__engines_flows *f);
/* Jobs waiting in the queues: all of them, or those of one device. */
size_t sortd__engines_queued(sortd__engines *e);
size_t sortd__engines_device_queued(sortd__engines *e, unsigned device);
/* The index of the device of uuid, or -1. */
int sortd__engines_find_device(const sortd__engines *e,
                               const uint8_t uuid[SORTD_DEVICE_UUID_BYTES]);
/* Whether any of the device's lanes still sorts (none has stopped, worker.h, on its own). */
bool sortd__engines_device_serving(sortd__engines *e, unsigned device);

#endif
