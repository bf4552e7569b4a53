/*
 * The checks of a Sort by key columns, shared by the daemon and libsortd (see wire.h): what the
 * message alone can tell, before a byte of its payload or its regions is read.
 */
#include <stdbool.h>
#include <stdio.h>

#include "invalid.h"
#include "wire.h"

/* Each part a request holds stays below 2^58 bytes: the daemon adds a few of them up. */
#define PART_MAX (UINT64_C(1) << 58)

sortd_status sortd__wire_columns_sizes(const sortd_column *c, unsigned count, sortd_payload p,
                                       uint64_t n, sortd__wire_sizes *sizes)
{
        uint64_t keys, vs = sortd_payload_size(p);
        bool argsort = sortd_payload_is_argsort(p);

        /* sortd_columns_check bounds n so that the offset below cannot wrap. */
        if (count == 0 || count > SORTD_MAX_COLUMNS || n >= PART_MAX / 16)
                return SORTD_E_INVAL;
        keys = sortd_columns_offset(c, count, n, count);
        if (keys >= PART_MAX)
                return SORTD_E_INVAL;
        *sizes = (sortd__wire_sizes){
                .keys_bytes = keys,
                .vals_bytes = n * vs,
                .request_len = keys + (argsort ? 0 : n * vs),
                .reply_len = (argsort ? 0 : keys) + n * vs,
        };
        return SORTD_OK;
}

/* The fields of a one-array sort must be unset: each column has its own. */
static sortd_status check_unset(const Sortd__Wire__Sort *s, char *why, size_t len)
{
        if (s->key_type)
                return sortd__invalid(
                        why, len,
                        "key_type %d is set beside %zu key columns: a sort by columns takes "
                        "each column's key type",
                        (int)s->key_type, s->n_columns);
        if (s->order || s->begin_bit || s->end_bit)
                return sortd__invalid(
                        why, len,
                        "order %d and bits [%u, %u) are set beside key columns: a sort by "
                        "columns takes each column's order and bit range",
                        (int)s->order, s->begin_bit, s->end_bit);
        if (s->segments)
                return sortd__invalid(why, len, "a sort by key columns takes no segments");
        if (s->k || s->topk_out)
                return sortd__invalid(why, len, "a sort by key columns takes no top-k (k = %llu)",
                                      (unsigned long long)s->k);
        return SORTD_OK;
}

/* Column i's enums, in range (the wire's key types are the engine's plus one). */
static sortd_status convert(const Sortd__Wire__Column *w, unsigned i, sortd_column *c, char *why,
                            size_t len)
{
        if ((int)w->key_type <= 0 || (int)w->key_type > (int)SORTD_KEY_TYPE_COUNT)
                return sortd__invalid(why, len, "column %u: unknown key type %d", i,
                                      (int)w->key_type);
        if ((int)w->order < 0 || (int)w->order >= (int)SORTD_ORDER_COUNT)
                return sortd__invalid(why, len, "column %u: unknown order %d", i, (int)w->order);
        *c = (sortd_column){
                .key_type = (sortd_key_type)(w->key_type - 1),
                .order = (sortd_order)w->order,
                .begin_bit = w->begin_bit,
                .end_bit = w->end_bit,
        };
        return SORTD_OK;
}

static sortd_status check_columns(const Sortd__Wire__Sort *s, sortd__wire_columns *cols,
                                  sortd_payload p, char *why, size_t len)
{
        if (s->n_columns == 0 || s->n_columns > SORTD_MAX_COLUMNS)
                return sortd__invalid(why, len, "%zu key columns; 1 to %d are allowed",
                                      s->n_columns, SORTD_MAX_COLUMNS);
        cols->count = (unsigned)s->n_columns;
        for (unsigned i = 0; i < cols->count; i++)
                if (convert(s->columns[i], i, &cols->col[i], why, len) != SORTD_OK)
                        return SORTD_E_INVAL;
        return sortd_columns_check(cols->col, cols->count, p, s->n, why, len);
}

sortd_status sortd__wire_columns_check(const Sortd__Wire__Sort *s, sortd__wire_columns *cols,
                                       sortd_payload *payload, sortd__wire_sizes *sizes, char *why,
                                       size_t why_len)
{
        sortd__wire_columns c = {0};
        sortd_payload p;

        if (check_unset(s, why, why_len) != SORTD_OK)
                return SORTD_E_INVAL;
        if ((int)s->payload <= 0 || (int)s->payload > (int)SORTD_PAYLOAD_COUNT)
                return sortd__invalid(why, why_len, "unknown payload kind %d", (int)s->payload);
        p = (sortd_payload)(s->payload - 1);
        if (check_columns(s, &c, p, why, why_len) != SORTD_OK)
                return SORTD_E_INVAL;
        if (s->data_case != SORTD__WIRE__SORT__DATA_INLINE_DATA &&
            s->data_case != SORTD__WIRE__SORT__DATA_REGION)
                return sortd__invalid(why, why_len, "sort request names no data location");
        if (sortd__wire_columns_sizes(c.col, c.count, p, s->n, sizes) != SORTD_OK)
                return sortd__invalid(why, why_len, "n = %llu rows of %u key columns is too large",
                                      (unsigned long long)s->n, c.count);
        *cols = c;
        *payload = p;
        return SORTD_OK;
}
