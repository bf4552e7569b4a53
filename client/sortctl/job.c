/* See job.h. */
#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "job.h"
#include "sortctl.h"

static const char *const VIA[] = {"auto", "inline", "shm"};

int sc_via_parse(const char *name)
{
        for (int v = SC_VIA_AUTO; v <= SC_VIA_SHM; v++)
                if (strcmp(name, VIA[v]) == 0)
                        return v;
        return -1;
}

const char *sc_via_name(sc_via v)
{
        return VIA[v];
}

static size_t align8(size_t x)
{
        return (x + 7) & ~(size_t)7;
}

/* The bytes of the input values: a sort's values or indices, a top-k's values (its indices
   are results). */
static size_t in_vals_bytes(const sc_job *j)
{
        if (j->k && sortd_payload_is_argsort(j->payload))
                return 0;
        return j->n * sortd_payload_size(j->payload);
}

/* A region holds the keys, the input values, then a top-k's result keys and values, each at
   a multiple of 8 bytes, as the region's offsets must be multiples of the element size. */
static size_t vals_offset(const sc_job *j)
{
        return align8(j->n * sortd_key_size(j->type));
}

static size_t out_keys_offset(const sc_job *j)
{
        return vals_offset(j) + align8(in_vals_bytes(j));
}

static size_t out_vals_offset(const sc_job *j)
{
        return out_keys_offset(j) + align8(j->results * sortd_key_size(j->type));
}

static size_t region_bytes(const sc_job *j)
{
        return out_vals_offset(j) + j->results * sortd_payload_size(j->payload);
}

uint64_t sc_job_bytes(const sc_job *j)
{
        return (uint64_t)j->n * (sortd_key_size(j->type) + sortd_payload_size(j->payload));
}

/* What the daemon would refuse, refused before the input is read into memory for it. */
static int check_limits(sortd_conn *c, const sc_job *j)
{
        sortd_info info;
        sortd_status s = sortd_hello(c, &info);

        if (s != SORTD_OK)
                return sc_fail_conn(c, s, "asking sortd for its limits");
        if (j->n > info.capacity)
                return sc_fail(SC_FAIL,
                               "n = %zu above the daemon's capacity %llu: sort it in parts", j->n,
                               (unsigned long long)info.capacity);
        if (j->via == SC_VIA_INLINE && info.max_request_bytes &&
            sc_job_bytes(j) > info.max_request_bytes)
                return sc_fail(
                        SC_FAIL,
                        "%llu bytes above the daemon's max-request-bytes %llu: use --via shm",
                        (unsigned long long)sc_job_bytes(j),
                        (unsigned long long)info.max_request_bytes);
        return SC_OK;
}

/* A top-k's result buffers on the heap. */
static int alloc_results(sc_job *j)
{
        size_t rk = j->results * sortd_key_size(j->type),
               rv = j->results * sortd_payload_size(j->payload);

        j->out_keys = malloc(rk ? rk : 1);
        j->out_vals = rv ? malloc(rv) : NULL;
        return j->out_keys && (!rv || j->out_vals) ? SC_OK : SC_FAIL;
}

int sc_job_alloc(sortd_conn *c, sc_job *j, sc_via via)
{
        size_t kb, vb;
        sortd_status s;
        int r;

        if (j->n > SIZE_MAX / 16)
                return sc_fail(SC_FAIL, "%zu elements are too many for this machine", j->n);
        kb = j->n * sortd_key_size(j->type);
        vb = in_vals_bytes(j);
        j->results = j->k ? sortd_topk_results(j->seg, j->n, j->k) : 0;
        /* No keys, nothing to share: a region cannot be empty. */
        j->via = j->n == 0                             ? SC_VIA_INLINE
                 : via != SC_VIA_AUTO                  ? via
                 : sc_job_bytes(j) >= SC_SHM_THRESHOLD ? SC_VIA_SHM
                                                       : SC_VIA_INLINE;
        if ((r = check_limits(c, j)) != SC_OK)
                return r;
        if (j->via == SC_VIA_SHM) {
                s = sortd_region_create(c, region_bytes(j), &j->region);
                if (s != SORTD_OK)
                        return sc_fail_conn(c, s, "creating a shared-memory region");
                j->keys = sortd_region_data(j->region);
                j->vals = vb ? j->keys + vals_offset(j) : NULL;
                j->out_keys = j->k ? j->keys + out_keys_offset(j) : NULL;
                j->out_vals = j->k && sortd_payload_size(j->payload) ? j->keys + out_vals_offset(j)
                                                                     : NULL;
                return SC_OK;
        }
        j->keys = malloc(kb ? kb : 1);
        j->vals = vb ? malloc(vb) : NULL;
        if (!j->keys || (vb && !j->vals) || (j->k && alloc_results(j) != SC_OK)) {
                sc_job_free(c, j);
                return sc_fail(SC_FAIL, "out of memory for %zu elements", j->n);
        }
        return SC_OK;
}

/* libsortd's count of the arrays on the socket drives the sending and receiving phases. */
static void on_transfer(void *user, sortd_progress_phase phase, uint64_t done, uint64_t total)
{
        sc_progress *p = user;

        if (done == 0)
                sc_progress_phase(p, phase == SORTD_PROGRESS_SENDING ? "sending" : "receiving",
                                  total);
        else
                sc_progress_set(p, done);
        /* The daemon sorts between the last byte sent and the reply's first. */
        if (phase == SORTD_PROGRESS_SENDING && done == total)
                sc_progress_phase(p, "sorting", 0);
}

static sortd_status sort_inline(sortd_conn *c, sc_job *j, sc_progress *p)
{
        sortd_request r = {.keys = j->keys,
                           .vals = j->vals,
                           .n = j->n,
                           .key_type = j->type,
                           .payload = j->payload,
                           .opts = j->opts,
                           .segments = j->seg,
                           .k = j->k,
                           .out_keys = j->out_keys,
                           .out_vals = j->out_vals};
        sortd_status s;

        memcpy(r.device_uuid, j->device_uuid, sizeof(r.device_uuid));
        if (p)
                sortd_set_progress(c, on_transfer, p);
        sc_progress_phase(p, "sending", 0);
        /* One call, so that --timeout bounds the whole sort; and it reports the timings. */
        s = sortd_sort_request(c, &r);
        sortd_set_progress(c, NULL, NULL);
        j->timings = r.timings;
        return s;
}

static sortd_status sort_shm(sortd_conn *c, sc_job *j, sc_progress *p)
{
        sortd_region_sort rs = {.keys = j->region,
                                .vals = j->vals ? j->region : NULL,
                                .vals_offset = j->vals ? vals_offset(j) : 0,
                                .n = j->n,
                                .key_type = j->type,
                                .payload = j->payload,
                                .opts = j->opts,
                                .segments = j->seg,
                                .k = j->k,
                                .out_keys = j->k ? j->region : NULL,
                                .out_keys_offset = out_keys_offset(j),
                                .out_vals = j->out_vals ? j->region : NULL,
                                .out_vals_offset = out_vals_offset(j)};
        sortd_status s;

        memcpy(rs.device_uuid, j->device_uuid, sizeof(rs.device_uuid));
        sc_progress_phase(p, "sorting", 0);
        s = sortd_sort_in_region(c, &rs);
        j->timings = rs.timings;
        return s;
}

int sc_job_sort(sortd_conn *c, sc_job *j, sc_progress *p)
{
        sortd_status s = j->via == SC_VIA_SHM ? sort_shm(c, j, p) : sort_inline(c, j, p);

        return s == SORTD_OK ? SC_OK : sc_fail_conn(c, s, "sorting");
}

void sc_job_free(sortd_conn *c, sc_job *j)
{
        if (j->region) {
                /* The data is already copied out or abandoned: a refused unregister only
                   leaves the daemon's mapping until the connection closes. */
                (void)sortd_region_destroy(c, j->region);
        } else {
                free(j->keys);
                free(j->vals);
                free(j->out_keys);
                free(j->out_vals);
        }
        j->region = NULL;
        j->keys = j->vals = j->out_keys = j->out_vals = NULL;
}
