/*
 * The reference sort of keys of several columns, the simplest way: a stable merge sort of row
 * indices under a comparator that asks each column in turn (reference_order.c), then the
 * permutation written out or applied to every column and the values. Slower than ref_sort()'s
 * records (a call per comparison and column), which is why that one keeps its own path for
 * keys of up to 64 bits and comes here only for 128-bit keys.
 */
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "reference_order.h"

struct rows {
        unsigned count;
        struct ref_order order[SORTD_MAX_COLUMNS];
        const void *keys[SORTD_MAX_COLUMNS];
};

/* Strict "row i sorts before row j": the first column where they differ decides. */
static bool row_less(const struct rows *r, uint64_t i, uint64_t j)
{
        for (unsigned c = 0; c < r->count; c++) {
                int d = ref__compare(&r->order[c], r->keys[c], (size_t)i, (size_t)j);

                if (d)
                        return d < 0;
        }
        return false;
}

#define RUN 16 /* runs sorted by insertion before merging */

/* Insertion sort of each run of RUN rows: moves a row only past strictly greater ones. */
static void sort_runs(const struct rows *r, uint64_t *a, size_t n)
{
        for (size_t lo = 0; lo < n; lo += RUN) {
                size_t hi = n - lo < RUN ? n : lo + RUN;

                for (size_t i = lo + 1; i < hi; i++) {
                        uint64_t x = a[i];
                        size_t j = i;

                        for (; j > lo && row_less(r, x, a[j - 1]); j--)
                                a[j] = a[j - 1];
                        a[j] = x;
                }
        }
}

/*
 * Stable bottom-up merge sort of the row indices in a: a merge takes from the right run only
 * when its head is strictly less. Returns the buffer (a or tmp) that holds the result.
 */
static uint64_t *index_sort(const struct rows *r, uint64_t *a, uint64_t *tmp, size_t n)
{
        sort_runs(r, a, n);
        for (size_t width = RUN; width < n; width *= 2) {
                for (size_t lo = 0; lo < n; lo += 2 * width) {
                        size_t mid = n - lo < width ? n : lo + width;
                        size_t hi = n - mid < width ? n : mid + width;
                        size_t i = lo, j = mid, k = lo;

                        while (i < mid && j < hi)
                                tmp[k++] = row_less(r, a[j], a[i]) ? a[j++] : a[i++];
                        while (i < mid)
                                tmp[k++] = a[i++];
                        while (j < hi)
                                tmp[k++] = a[j++];
                }
                uint64_t *t = a;
                a = tmp;
                tmp = t;
        }
        return a;
}

/* The columns' orders, or SORTD_E_INVAL for what the engine refuses. */
static sortd_status make_rows(const sortd_column *cols, unsigned count, sortd_payload payload,
                              void *const *keys, const void *vals, size_t n, struct rows *r)
{
        int vb = ref__payload_bytes(payload);

        if (!cols || count == 0 || count > SORTD_MAX_COLUMNS || vb < 0)
                return SORTD_E_INVAL;
        if (payload == SORTD_PAYLOAD_ARGSORT32 && n > (size_t)UINT32_MAX + 1)
                return SORTD_E_INVAL;
        if (n && (!keys || (vb && !vals)))
                return SORTD_E_INVAL;
        r->count = count;
        for (unsigned c = 0; c < count; c++) {
                if (ref__order_make(cols[c].key_type, cols[c].order, cols[c].begin_bit,
                                    cols[c].end_bit, &r->order[c]) != 0)
                        return SORTD_E_INVAL;
                if (n && !keys[c])
                        return SORTD_E_INVAL;
                r->keys[c] = n ? keys[c] : NULL;
        }
        return SORTD_OK;
}

/* base[i] = base[perm[i]] for n elements of `bytes` bytes, through copy (as large). */
static void gather(void *base, const uint64_t *perm, size_t n, size_t bytes, unsigned char *copy)
{
        memcpy(copy, base, n * bytes);
        for (size_t i = 0; i < n; i++)
                memcpy((unsigned char *)base + i * bytes, copy + perm[i] * bytes, bytes);
}

/* Writes the permutation, or applies it to every column and the values (copy: n x 16 bytes). */
static void apply(const struct rows *r, sortd_payload payload, void *const *keys, void *vals,
                  const uint64_t *perm, size_t n, unsigned char *copy)
{
        unsigned vb = (unsigned)ref__payload_bytes(payload);

        if (payload == SORTD_PAYLOAD_ARGSORT32 || payload == SORTD_PAYLOAD_ARGSORT64) {
                for (size_t i = 0; i < n; i++)
                        ref__store(vals, i, vb, perm[i]);
                return;
        }
        for (unsigned c = 0; c < r->count; c++)
                gather(keys[c], perm, n, r->order[c].bits / 8, copy);
        if (vb)
                gather(vals, perm, n, vb, copy);
}

sortd_status reference_sort_columns(const sortd_column *cols, unsigned count, sortd_payload payload,
                                    void *const *keys, void *vals, size_t n)
{
        struct rows r;
        sortd_status s = make_rows(cols, count, payload, keys, vals, n, &r);
        uint64_t *perm, *tmp;
        unsigned char *copy;

        if (s != SORTD_OK || n == 0)
                return s;
        perm = malloc(n * sizeof(*perm));
        tmp = malloc(n * sizeof(*tmp));
        copy = malloc(n * 16); /* the widest key or value */
        if (perm && tmp && copy) {
                for (size_t i = 0; i < n; i++)
                        perm[i] = i;
                apply(&r, payload, keys, vals, index_sort(&r, perm, tmp, n), n, copy);
        }
        s = perm && tmp && copy ? SORTD_OK : SORTD_E_NOMEM;
        free(perm);
        free(tmp);
        free(copy);
        return s;
}
