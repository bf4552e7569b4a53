/*
 * Sorts by key columns (see columns.h): checked here as the daemon checks them, so that nothing
 * is sent for a request it would refuse, and moved as the one buffer the wire carries without
 * a copy of it: each column goes from and back to the caller's own array, its padding apart.
 */
#include <stdint.h>

#include "buffers.h"
#include "columns.h"
#include "device.h"
#include "segmented.h"
#include "transport.h"

sortd_status sortd__columns_check(sortd_conn *c, const sortd_column *cols, unsigned count,
                                  sortd_payload p, size_t n, const char *extra,
                                  const uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES],
                                  sortd__wire_sizes *sizes)
{
        char why[200];

        if (sortd_columns_check(cols, count, p, n, why, sizeof(why)) != SORTD_OK)
                return sortd__transport_fail(c, SORTD_E_INVAL, "%s", why);
        if (extra)
                return sortd__transport_fail(c, SORTD_E_INVAL, "a sort by key columns takes no %s",
                                             extra);
        if (sortd__wire_columns_sizes(cols, count, p, n, sizes) != SORTD_OK)
                return sortd__transport_fail(
                        c, SORTD_E_INVAL, "n = %zu rows of %u key columns is too large", n, count);
        if (n > c->info.capacity)
                return sortd__transport_fail(c, SORTD_E_CAPACITY,
                                             "n = %zu above the daemon's capacity %llu", n,
                                             (unsigned long long)c->info.capacity);
        return sortd__device_check_hint(c, device_uuid);
}

/* What a one-array sort has that a sort by columns must not. */
static const char *extra_fields(const sortd_request *r)
{
        if (r->segments)
                return "segments";
        if (r->k || r->out_keys || r->out_vals)
                return "top-k (k, out_keys, out_vals)";
        return NULL;
}

/* Column j's array: non-NULL, aligned to its key, apart from the columns before it. */
static sortd_status check_column(sortd_conn *c, const sortd_request *r, unsigned j)
{
        size_t ks = sortd_key_size(r->columns[j].key_type);

        if (!r->column_keys[j] || sortd__misaligned(r->column_keys[j], ks))
                return sortd__transport_fail(
                        c, SORTD_E_INVAL,
                        "column_keys[%u] must be non-NULL and aligned to its %zu-byte keys", j, ks);
        for (unsigned i = 0; i < j; i++)
                if (sortd__overlap(r->column_keys[i], r->n * sortd_key_size(r->columns[i].key_type),
                                   r->column_keys[j], r->n * ks))
                        return sortd__transport_fail(c, SORTD_E_INVAL,
                                                     "column_keys[%u] and [%u] overlap", i, j);
        return SORTD_OK;
}

/* The arrays: every column's, and the values (or the permutation's) where there are any. */
static sortd_status check_arrays(sortd_conn *c, const sortd_request *r)
{
        size_t vs = sortd_payload_size(r->payload);
        sortd_status s = SORTD_OK;

        if (!r->n)
                return SORTD_OK;
        if (!r->column_keys)
                return sortd__transport_fail(c, SORTD_E_INVAL, "column_keys must not be NULL");
        for (unsigned j = 0; j < r->column_count && s == SORTD_OK; j++)
                s = check_column(c, r, j);
        if (s != SORTD_OK || !vs)
                return s;
        if (!r->vals || sortd__misaligned(r->vals, vs))
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "vals must be non-NULL and aligned to %zu bytes (%s)",
                                             vs, sortd_payload_name(r->payload));
        for (unsigned j = 0; j < r->column_count; j++)
                if (sortd__overlap(r->column_keys[j], r->n * sortd_key_size(r->columns[j].key_type),
                                   r->vals, r->n * vs))
                        return sortd__transport_fail(c, SORTD_E_INVAL,
                                                     "column_keys[%u] and vals overlap", j);
        return SORTD_OK;
}

sortd_status sortd__columns_check_inline(sortd_conn *c, const sortd_request *r,
                                         sortd__wire_sizes *sizes)
{
        sortd_status s = sortd__columns_check(c, r->columns, r->column_count, r->payload, r->n,
                                              extra_fields(r), r->device_uuid, sizes);

        if (s == SORTD_OK)
                s = check_arrays(c, r);
        if (s != SORTD_OK)
                return s;
        /* the daemon's buffer: the columns, then the values or the indices it writes */
        return sortd__segmented_check_held(c,
                                           sortd__segmented_part(sizes->keys_bytes) +
                                                   sortd__segmented_part(sizes->vals_bytes),
                                           "request");
}

void sortd__columns_sort_msg(Sortd__Wire__Sort *sort, sortd__columns_msg *m,
                             const sortd_column *cols, unsigned count, sortd_payload p,
                             const uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES], size_t n)
{
        for (unsigned j = 0; j < count; j++) {
                m->col[j] = (Sortd__Wire__Column)SORTD__WIRE__COLUMN__INIT;
                m->col[j].key_type = sortd__wire_key_type(cols[j].key_type);
                m->col[j].order = (Sortd__Wire__Order)cols[j].order;
                m->col[j].begin_bit = cols[j].begin_bit;
                m->col[j].end_bit = cols[j].end_bit;
                m->ptr[j] = &m->col[j];
        }
        sort->n_columns = count;
        sort->columns = m->ptr;
        sort->payload = sortd__wire_payload(p);
        sort->n = n;
        if (sortd__device_hinted(device_uuid))
                sort->device_uuid = (ProtobufCBinaryData){.len = SORTD_DEVICE_UUID_BYTES,
                                                          .data = (uint8_t *)device_uuid};
}

/* Column j's bytes, and the padding that follows them in the buffer. */
static void column_span(const sortd_request *r, unsigned j, uint64_t *bytes, uint64_t *pad)
{
        uint64_t at = sortd_columns_offset(r->columns, r->column_count, r->n, j);
        uint64_t next = sortd_columns_offset(r->columns, r->column_count, r->n, j + 1);

        *bytes = r->n * sortd_key_size(r->columns[j].key_type);
        *pad = next - at - *bytes;
}

int sortd__columns_pieces(const sortd_request *r, sortd__transport_piece *out)
{
        static const uint8_t zeros[SORTD__COLUMNS_ALIGN];
        int count = 0;
        uint64_t bytes, pad;

        for (unsigned j = 0; j < r->column_count && r->n; j++) {
                column_span(r, j, &bytes, &pad);
                out[count++] = (sortd__transport_piece){r->column_keys[j], (size_t)bytes};
                out[count++] = (sortd__transport_piece){zeros, (size_t)pad};
        }
        if (!sortd_payload_is_argsort(r->payload))
                out[count++] = (sortd__transport_piece){
                        r->vals, (size_t)(r->n * sortd_payload_size(r->payload))};
        return count;
}

sortd_status sortd__columns_read(sortd_conn *c, const sortd_request *r)
{
        uint8_t pad[SORTD__COLUMNS_ALIGN];
        uint64_t bytes, skip;
        sortd_status s = SORTD_OK;

        for (unsigned j = 0; j < r->column_count && r->n && !sortd_payload_is_argsort(r->payload);
             j++) {
                column_span(r, j, &bytes, &skip);
                s = sortd__transport_read_all(c, r->column_keys[j], (size_t)bytes);
                if (s == SORTD_OK && skip)
                        s = sortd__transport_read_all(c, pad, (size_t)skip);
                if (s != SORTD_OK)
                        return s;
        }
        if (r->n && sortd_payload_size(r->payload))
                s = sortd__transport_read_all(c, r->vals,
                                              (size_t)(r->n * sortd_payload_size(r->payload)));
        return s;
}
