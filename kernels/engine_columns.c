/*
 * sortd_engine_sort_columns (engine.h): the checks of a sort of several key columns, which path
 * it takes, then the engine-neutral layer that sorts them (columns/), or for one column of up
 * to 8 bytes argsorted, the engine's own sort.
 */
#include <stdlib.h>
#include <string.h>

#include "columns/columns.h"

static unsigned total_width(const sortd_column *cols, unsigned count)
{
        unsigned w = 0;

        for (unsigned j = 0; j < count; j++)
                w += sortd__column_width(&cols[j]);
        return w;
}

static sortd_status check_request(sortd_engine *e, const sortd_column *cols, unsigned count,
                                  sortd_payload payload, sortd_columns_path path,
                                  sortd_memory where, size_t n)
{
        if (sortd_columns_check(cols, count, payload, n, e->why, sizeof(e->why)) != SORTD_OK)
                return SORTD_E_INVAL;
        if ((unsigned)path >= SORTD_COLUMNS_PATH_COUNT)
                return sortd__engine_fail(e, SORTD_E_INVAL, "unknown columns path %d", (int)path);
        if ((unsigned)where >= SORTD_MEMORY_COUNT)
                return sortd__engine_fail(e, SORTD_E_INVAL, "unknown memory %d", (int)where);
        if (where == SORTD_MEMORY_DEVICE && !e->ops->columns_device)
                return sortd__engine_fail(e, SORTD_E_UNSUPPORTED,
                                          "the %s engine sorts key columns in host or shared "
                                          "memory, not in device memory",
                                          e->ops->kind);
        if (path == SORTD_COLUMNS_PACKED && total_width(cols, count) > 128)
                return sortd__engine_fail(e, SORTD_E_INVAL,
                                          "the packed path needs columns of at most 128 bits in "
                                          "all; these have %u",
                                          total_width(cols, count));
        if (n > e->capacity)
                return sortd__engine_fail(e, SORTD_E_CAPACITY, "n = %zu above capacity %zu", n,
                                          e->capacity);
        return SORTD_OK;
}

/* Buffer j: column j's keys, or vals for j = count. */
static const void *buffer(void *const *keys, const void *vals, unsigned count, unsigned j)
{
        return j < count ? keys[j] : vals;
}

static sortd_status check_buffers(sortd_engine *e, const sortd_column *cols, unsigned count,
                                  sortd_payload payload, void *const *keys, const void *vals,
                                  size_t n)
{
        const unsigned vb = (unsigned)sortd_payload_size(payload);
        unsigned size[SORTD_MAX_COLUMNS + 1];

        if (!keys)
                return sortd__engine_fail(e, SORTD_E_INVAL, "keys is NULL");
        if (vb && !vals)
                return sortd__engine_fail(e, SORTD_E_INVAL,
                                          "vals is NULL but the payload needs it");
        for (unsigned j = 0; j <= count; j++) {
                const void *p = buffer(keys, vals, count, j);

                size[j] = j < count ? (unsigned)sortd_key_size(cols[j].key_type) : vb;
                if (j < count && !p)
                        return sortd__engine_fail(e, SORTD_E_INVAL, "column %u's keys are NULL", j);
                if (size[j] && sortd__misaligned(p, size[j]))
                        return j < count ? sortd__engine_fail(e, SORTD_E_INVAL,
                                                              "column %u's keys not aligned to %u "
                                                              "bytes",
                                                              j, size[j])
                                         : sortd__engine_fail(e, SORTD_E_INVAL,
                                                              "vals not aligned to %u bytes",
                                                              size[j]);
                for (unsigned i = 0; i < j; i++)
                        if (size[j] && sortd__overlap(buffer(keys, vals, count, i), n * size[i], p,
                                                      n * size[j]))
                                return sortd__engine_fail(e, SORTD_E_INVAL,
                                                          "buffers %u and %u overlap (columns "
                                                          "first, then vals)",
                                                          i, j);
        }
        return SORTD_OK;
}

/*
 * One column of up to 8 bytes, argsorted: the engine's own sort of a copy of its keys, as the
 * key type they are, needs no image of every row and none of the layer's workspace. The copy
 * leaves the caller's column as an argsort of columns must, and reads shared memory once.
 */
static sortd_status argsort_one(sortd_engine *e, const sortd__columns_mem *mem,
                                const sortd_column *c, sortd_payload payload, const void *keys,
                                void *vals, size_t n)
{
        const sortd_sort_desc d = {c->key_type, payload, c->order, c->begin_bit, c->end_bit};
        const sortd__plan p = sortd__plan_of(&d);
        const size_t bytes = n * sortd_key_size(c->key_type);
        void *copy = mem->alloc(e, bytes);
        sortd_status s;

        if (!copy)
                return sortd__engine_fail(e, SORTD_E_NOMEM,
                                          "cannot allocate the %zu bytes of %s memory for a copy "
                                          "of %zu keys",
                                          bytes, mem->where, n);
        s = mem->copy(e, copy, keys, bytes);
        if (s == SORTD_OK)
                s = mem->sort(e, &p, copy, vals, n);
        mem->release(e, copy);
        return s;
}

static bool one_narrow_argsort(const sortd_column *cols, unsigned count, sortd_payload payload)
{
        return count == 1 && sortd_key_size(cols[0].key_type) <= 8 &&
               sortd_payload_is_argsort(payload);
}

sortd_status sortd_engine_sort_columns(sortd_engine *e, const sortd_column *cols, unsigned count,
                                       sortd_payload payload, sortd_columns_path path,
                                       sortd_memory where, void *const *keys, void *vals, size_t n)
{
        const sortd__columns_mem *mem;
        sortd_status s;

        if (!e)
                return SORTD_E_INVAL;
        e->why[0] = '\0';
        e->last_device_seconds = 0;
        s = check_request(e, cols, count, payload, path, where, n);
        if (s != SORTD_OK || n == 0)
                return s;
        s = check_buffers(e, cols, count, payload, keys, vals, n);
        if (s != SORTD_OK)
                return s;
        mem = where == SORTD_MEMORY_DEVICE ? e->ops->columns_device : &sortd__columns_host;
        if (n == 1) /* an argsort's index 0, in its width */
                return sortd_payload_is_argsort(payload)
                               ? mem->identity(e, vals, (unsigned)sortd_payload_size(payload), 1)
                               : SORTD_OK;
        s = sortd__engine_sorting_call(e);
        if (s != SORTD_OK)
                return s;
        if (one_narrow_argsort(cols, count, payload))
                return argsort_one(e, mem, cols, payload, keys[0], vals, n);
        return sortd__columns_sort(
                e, mem,
                &(sortd__columns_job){
                        .cols = cols,
                        .count = count,
                        .keys = keys,
                        .vals = vals,
                        .n = n,
                        .payload = payload,
                        .packed = path == SORTD_COLUMNS_PACKED ||
                                  (path == SORTD_COLUMNS_AUTO && total_width(cols, count) <= 128),
                        .sort_keys = false,
                });
}
