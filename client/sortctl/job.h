/*
 * One sort through the daemon, wherever its data lies: the `sort`, `topk` and `bench`
 * subcommands allocate a job's buffers here (the heap for inline requests, one shared-memory region
 * for keys and payload otherwise), fill them, and sort them here.
 */
#ifndef SORTCTL_JOB_H
#define SORTCTL_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "progress.h"
#include "sortd.h"

/* --via auto sends a request of fewer bytes than this inline: below it, creating, sealing,
   mapping and registering a region costs more than copying the data through the socket. */
#define SC_SHM_THRESHOLD (1u << 20)

typedef enum sc_via { SC_VIA_AUTO, SC_VIA_INLINE, SC_VIA_SHM } sc_via;

/* "auto", "inline", "shm"; -1 if unknown. */
int sc_via_parse(const char *name);
const char *sc_via_name(sc_via v);

typedef struct sc_job {
        sortd_key_type type;
        sortd_payload payload;
        sortd_sort_options opts;
        uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES]; /* all zero: the daemon chooses */
        size_t n;
        const sortd_segments *seg; /* rows sorted each on its own; NULL: one array */
        uint64_t k;                /* top-k of each row; 0: a sort */
        /* filled in by sc_job_alloc */
        sc_via via;           /* inline or shm */
        uint8_t *keys, *vals; /* vals: none for a top-k's indices, which are results */
        uint64_t results;     /* a top-k's, in out_keys and (with a payload) out_vals */
        uint8_t *out_keys, *out_vals;
        sortd_region *region;
        /* filled in by sc_job_sort */
        sortd_timings timings;
} sc_job;

/* The bytes of keys and payload a job moves. */
uint64_t sc_job_bytes(const sc_job *j);

/* Resolves via for j (auto by SC_SHM_THRESHOLD) and allocates j->keys and j->vals. */
int sc_job_alloc(sortd_conn *c, sc_job *j, sc_via via);
/* Sorts j's buffers in place, the progress line saying what waits. */
int sc_job_sort(sortd_conn *c, sc_job *j, sc_progress *p);
/* Frees the buffers (destroys the region). */
void sc_job_free(sortd_conn *c, sc_job *j);

#endif
