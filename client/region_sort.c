/*
 * Sorts in place in regions (region.c makes them): a sort, a segmented sort or a top-k whose
 * keys, values and results lie in regions of the connection, checked here as the daemon would
 * check them, so that nothing is sent for a request it would refuse. Segment offsets travel
 * with the request or lie in a memfd region. On call.c and segmented.c.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "call.h"
#include "columns.h"
#include "region.h"
#include "segmented.h"
#include "sortd.h"
#include "transport.h"
#include "wire.h"

/* Bytes at off in a region: a span of a sort. */
typedef struct span {
        const sortd_region *r;
        size_t off;
        uint64_t bytes;
} span;

/* One span of a region sort: the region is c's, aligned, and [off, off + bytes) inside it. */
static sortd_status check_span(sortd_conn *c, const char *what, const sortd_region *r, size_t off,
                               uint64_t bytes, size_t elem)
{
        if (!r)
                return sortd__transport_fail(c, SORTD_E_INVAL, "the %s region must not be NULL",
                                             what);
        if (r->conn != c)
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "the %s region is not registered on this connection",
                                             what);
        if (off % elem)
                return sortd__transport_fail(
                        c, SORTD_E_INVAL, "%s_offset %zu is not a multiple of the %zu-byte element",
                        what, off, elem);
        /* The device sorts at base + offset + off: a misaligned element would fault there. */
        if (r->offset % elem)
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "the %s region starts at offset %llu of its CUDA "
                                             "allocation, not a multiple of the %zu-byte element",
                                             what, (unsigned long long)r->offset, elem);
        if (off > r->size || bytes > r->size - off)
                return sortd__transport_fail(
                        c, SORTD_E_INVAL,
                        "%s: %llu bytes at offset %zu run past the end of the %zu-byte region",
                        what, (unsigned long long)bytes, off, r->size);
        return SORTD_OK;
}

/* Both spans checked, so inside their regions: the sums cannot overflow. */
static bool overlap(const span *a, const span *b)
{
        return a->r == b->r && a->bytes && b->bytes && a->off < b->off + b->bytes &&
               b->off < a->off + a->bytes;
}

static const char *kind_name(const sortd_region *r)
{
        return r->device ? "device memory (CUDA IPC)" : "host memory (memfd)";
}

/* The engine sorts on the device or in host memory, never across the two. */
static sortd_status check_kind(sortd_conn *c, const char *what, const sortd_region *r,
                               const sortd_region *keys)
{
        if (r->device == keys->device)
                return SORTD_OK;
        return sortd__transport_fail(c, SORTD_E_INVAL,
                                     "the keys region is %s and the %s region %s: both must be of "
                                     "one kind",
                                     kind_name(keys), what, kind_name(r));
}

/* What a region sort reads and writes, as checked. */
typedef struct plan {
        sortd__segmented seg;
        span keys, vals, out_keys, out_vals; /* bytes 0 where there is none */
        bool vals_in;                        /* vals is read or moved (not an argsort's top-k) */
} plan;

/*
 * Offsets in a memfd region (rs->offsets_region): their span, then the offsets themselves,
 * read through this process's mapping (the daemon reads them again, from its copy).
 */
static sortd_status check_region_offsets(sortd_conn *c, const sortd_region_sort *rs, plan *p)
{
        const sortd_segments *seg = rs->segments;
        const sortd_region *r = rs->offsets_region;
        sortd_segments view;
        uint64_t bytes;
        sortd_status s;

        if (!seg->offset_bytes)
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "offsets_region given for uniform rows (offset_bytes "
                                             "0): give 4 or 8 for CSR offsets");
        s = sortd__segmented_offsets_size(c, seg->count, seg->offset_bytes, &bytes);
        if (s == SORTD_OK)
                s = check_span(c, "offsets", r, rs->offsets_offset, bytes, seg->offset_bytes);
        if (s != SORTD_OK)
                return s;
        if (r->device)
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "the offsets region is %s: offsets lie in host "
                                             "memory (memfd)",
                                             kind_name(r));
        view = *seg;
        view.offsets = (const char *)r->data + rs->offsets_offset;
        s = sortd__segmented_check(c, &view, rs->n, rs->k, &p->seg);
        p->seg.offsets_bytes = 0; /* they stay in the region */
        return s;
}

static sortd_status check_segments(sortd_conn *c, const sortd_region_sort *rs, plan *p)
{
        if (rs->offsets_region && !rs->segments)
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "offsets_region given without segments");
        if (rs->offsets_region)
                return check_region_offsets(c, rs, p);
        return sortd__segmented_check(c, rs->segments, rs->n, rs->k, &p->seg);
}

/* The values a sort moves, an argsort writes or a top-k reads, apart from the keys (checked). */
static sortd_status check_vals(sortd_conn *c, const sortd_region_sort *rs, plan *p)
{
        size_t vs = sortd_payload_size(rs->payload);
        sortd_status s;

        p->vals = (span){rs->vals, rs->vals_offset, (uint64_t)rs->n * vs};
        s = check_span(c, "vals", rs->vals, rs->vals_offset, p->vals.bytes, vs);
        if (s == SORTD_OK)
                s = check_kind(c, "vals", rs->vals, rs->keys);
        if (s == SORTD_OK && overlap(&p->keys, &p->vals))
                s = sortd__transport_fail(c, SORTD_E_INVAL,
                                          "the keys and vals spans overlap in the region");
        return s;
}

/* The inputs: the keys, and the values a sort moves, an argsort writes or a top-k reads. */
static sortd_status check_inputs(sortd_conn *c, const sortd_region_sort *rs, plan *p)
{
        size_t ks = sortd_key_size(rs->key_type), vs = sortd_payload_size(rs->payload);
        sortd_status s;

        p->keys = (span){rs->keys, rs->keys_offset, (uint64_t)rs->n * ks};
        s = check_span(c, "keys", rs->keys, rs->keys_offset, p->keys.bytes, ks);
        p->vals_in = vs && !(rs->k && sortd_payload_is_argsort(rs->payload));
        if (s != SORTD_OK || !p->vals_in)
                return s;
        return check_vals(c, rs, p);
}

/* What a one-array sort has that a sort by columns must not. */
static const char *extra_fields(const sortd_region_sort *rs)
{
        if (rs->segments || rs->offsets_region)
                return "segments";
        if (rs->k || rs->out_keys || rs->out_vals)
                return "top-k (k, out_keys, out_vals)";
        return NULL;
}

/* A sort by key columns: their buffer at keys_offset in a region of either kind, and the
   values' span in one of the same kind. The daemon holds none of it. */
static sortd_status validate_columns(sortd_conn *c, const sortd_region_sort *rs, plan *p)
{
        sortd__wire_sizes sz;
        sortd_status s = sortd__columns_check(c, rs->columns, rs->column_count, rs->payload, rs->n,
                                              extra_fields(rs), rs->device_uuid, &sz);

        *p = (plan){0};
        if (s != SORTD_OK)
                return s;
        p->keys = (span){rs->keys, rs->keys_offset, sz.keys_bytes};
        s = check_span(c, "keys", rs->keys, rs->keys_offset, sz.keys_bytes, SORTD__COLUMNS_ALIGN);
        p->vals_in = sz.vals_bytes != 0;
        if (s != SORTD_OK || !p->vals_in)
                return s;
        return check_vals(c, rs, p);
}

/* A top-k's results: spans of its inputs' kind that overlap no input and each other. */
static sortd_status check_outputs(sortd_conn *c, const sortd_region_sort *rs, plan *p)
{
        size_t ks = sortd_key_size(rs->key_type), vs = sortd_payload_size(rs->payload);
        sortd_status s;

        p->out_keys = (span){rs->out_keys, rs->out_keys_offset, p->seg.results * ks};
        s = check_span(c, "out_keys", rs->out_keys, rs->out_keys_offset, p->out_keys.bytes, ks);
        if (s == SORTD_OK)
                s = check_kind(c, "out_keys", rs->out_keys, rs->keys);
        if (s == SORTD_OK && vs) {
                p->out_vals = (span){rs->out_vals, rs->out_vals_offset, p->seg.results * vs};
                s = check_span(c, "out_vals", rs->out_vals, rs->out_vals_offset, p->out_vals.bytes,
                               vs);
                if (s == SORTD_OK)
                        s = check_kind(c, "out_vals", rs->out_vals, rs->keys);
        }
        if (s != SORTD_OK)
                return s;
        if (overlap(&p->out_keys, &p->keys) || overlap(&p->out_keys, &p->vals) ||
            overlap(&p->out_vals, &p->keys) || overlap(&p->out_vals, &p->vals))
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "a top-k's results overlap its keys or vals");
        if (overlap(&p->out_keys, &p->out_vals))
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "the out_keys and out_vals spans overlap");
        return SORTD_OK;
}

/* The daemon copies the offsets, wherever they lie: a copy its max-request-bytes bounds. */
static sortd_status check_held(sortd_conn *c, const sortd_region_sort *rs)
{
        if (!rs->segments)
                return SORTD_OK;
        return sortd__segmented_check_held(c,
                                           sortd__segmented_held_bytes(rs->segments, rs->n, rs->k,
                                                                       rs->key_type, rs->payload,
                                                                       0),
                                           "offsets");
}

/* Everything the daemon would refuse, refused here before a byte is sent. */
static sortd_status validate(sortd_conn *c, const sortd_region_sort *rs, plan *p)
{
        sortd__wire_sizes sz;
        sortd_status s;

        if (rs->column_count)
                return validate_columns(c, rs, p);
        s = sortd__call_check_sort(c, rs->key_type, rs->payload, &rs->opts, rs->device_uuid, rs->n,
                                   &sz);
        *p = (plan){0};
        if (s == SORTD_OK)
                s = check_segments(c, rs, p);
        if (s == SORTD_OK)
                s = check_inputs(c, rs, p);
        if (s == SORTD_OK && rs->k)
                s = check_outputs(c, rs, p);
        if (s == SORTD_OK)
                s = check_held(c, rs);
        return s;
}

/* Where the sort's data lies, and where a top-k's results go. */
static void region_msgs(const sortd_region_sort *rs, const plan *p, Sortd__Wire__RegionData *where,
                        Sortd__Wire__TopkOut *out)
{
        where->region_id = rs->keys->id;
        where->keys_offset = rs->keys_offset;
        where->vals_offset = p->vals_in ? rs->vals_offset : 0;
        where->vals_region_id = p->vals_in && rs->vals != rs->keys ? rs->vals->id : 0;
        if (!rs->k)
                return;
        out->keys_region_id = rs->out_keys->id;
        out->keys_offset = rs->out_keys_offset;
        if (p->out_vals.r) {
                out->vals_region_id = rs->out_vals->id;
                out->vals_offset = rs->out_vals_offset;
        }
}

sortd_status sortd_sort_in_region(sortd_conn *c, sortd_region_sort *rs)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Sort sort = SORTD__WIRE__SORT__INIT;
        Sortd__Wire__RegionData where = SORTD__WIRE__REGION_DATA__INIT;
        Sortd__Wire__Segments seg = SORTD__WIRE__SEGMENTS__INIT;
        Sortd__Wire__TopkOut out = SORTD__WIRE__TOPK_OUT__INIT;
        sortd__columns_msg cols;
        Sortd__Wire__Reply *rep;
        plan p;
        sortd_status s;

        s = sortd__call_begin(c, rs, "rs");
        if (s == SORTD_OK)
                s = validate(c, rs, &p);
        if (s != SORTD_OK)
                return s;
        region_msgs(rs, &p, &where, &out);
        if (rs->column_count)
                sortd__columns_sort_msg(&sort, &cols, rs->columns, rs->column_count, rs->payload,
                                        rs->device_uuid, rs->n);
        else
                sortd__call_sort_msg(&sort, rs->key_type, rs->payload, &rs->opts, rs->device_uuid,
                                     rs->n);
        sortd__segmented_msg(&sort, &seg, rs->segments, rs->k);
        if (rs->offsets_region) {
                seg.offsets_region_id = rs->offsets_region->id;
                seg.offsets_offset = rs->offsets_offset;
        }
        if (rs->k)
                sort.topk_out = &out;
        sort.data_case = SORTD__WIRE__SORT__DATA_REGION;
        sort.region = &where;
        req.body_case = SORTD__WIRE__REQUEST__BODY_SORT;
        req.sort = &sort;
        /* Offsets not in a region follow the frame, whatever the regions' kind. */
        sortd__transport_piece offsets = {rs->segments ? rs->segments->offsets : NULL,
                                          (size_t)p.seg.offsets_bytes};
        s = sortd__call_request_payload(c, &req, -1, &offsets, 1, SORTD__WIRE__REPLY__BODY_SORT,
                                        &rep);
        if (s != SORTD_OK)
                return s;
        if (rep->sort->n != rs->n)
                s = sortd__transport_breaks(
                        c, sortd__transport_fail(c, SORTD_E_PROTOCOL,
                                                 "sort reply does not match the request"));
        else
                sortd__call_timings(rep->sort, &rs->timings);
        sortd__wire__reply__free_unpacked(rep, NULL);
        return s;
}
