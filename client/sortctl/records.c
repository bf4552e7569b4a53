/* See records.h. It reports through fail.c, and calls formats.c and args.c of sortctl's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "fmt_npy.h"
#include "records.h"
#include "sortctl.h"

static const char KEY_FORM[] = "give FIELD, FIELD:asc or FIELD:desc (and :bf16, :u128 or :i128 "
                               "to read a field as that type)";

/* One :suffix of a --key: an order, or the type to read the field as. */
static int suffix(const char *v, const char *s, size_t len, sc_keys *k, unsigned j)
{
        char word[16];
        int t;

        if (len > 0 && len < sizeof(word)) {
                memcpy(word, s, len);
                word[len] = '\0';
                if (!strcmp(word, "asc") || !strcmp(word, "desc")) {
                        k->order[j] = word[0] == 'd' ? SORTD_DESCENDING : SORTD_ASCENDING;
                        return SC_OK;
                }
                if ((t = sortd_key_type_parse(word)) >= 0) {
                        k->type[j] = t;
                        return SC_OK;
                }
        }
        return sc_fail(SC_FAIL, "--key %s: ':%.*s' is no order or key type: %s", v,
                       len < 32 ? (int)len : 32, s, KEY_FORM);
}

int sc_keys_value(sc_args *a, sc_keys *k)
{
        const char *v = sc_args_value(a, "key"), *s, *end;
        unsigned j = k->count;
        size_t len;

        if (!v)
                return -1;
        if (j == SORTD_MAX_COLUMNS)
                return sc_fail(SC_FAIL, "--key %s: at most %d keys", v, SORTD_MAX_COLUMNS), -1;
        len = strcspn(v, ":");
        if (len == 0 || len >= NPY_MAX_NAME)
                return sc_fail(SC_FAIL, "--key %s: no field name: %s", v, KEY_FORM), -1;
        memcpy(k->name[j], v, len);
        k->name[j][len] = '\0';
        for (unsigned i = 0; i < j; i++)
                if (!strcmp(k->name[i], k->name[j]))
                        return sc_fail(SC_FAIL,
                                       "--key %s: the field '%s' is a key already: give each "
                                       "field once",
                                       v, k->name[j]),
                               -1;
        k->order[j] = SORTD_ASCENDING;
        k->type[j] = -1;
        for (s = v + len; *s; s = end) {
                end = s + 1 + strcspn(s + 1, ":");
                if (suffix(v, s + 1, (size_t)(end - s - 1), k, j) != SC_OK)
                        return -1;
        }
        k->count++;
        return 1;
}

/* A key field: where it lies in a record, and how it is stored and sorted. */
typedef struct key_col {
        sortd_column col;
        npy_layout store; /* its scalar dtype and byte order, for swapping */
        uint64_t offset;
        size_t size; /* the key's bytes */
} key_col;

/* The names of in's fields, for a message: as many as fit. */
static void field_names(const npy_fields *fs, char *out, size_t cap)
{
        size_t at = 0;

        out[0] = '\0';
        for (unsigned i = 0; i < fs->count && at + 1 < cap; i++)
                if (fs->f[i].name[0])
                        at += (size_t)snprintf(out + at, cap - at, "%s%s", at ? ", " : "",
                                               fs->f[i].name);
}

/* The key type a field holds, as want (-1: its own) reads it; -1 when it holds none. */
static int key_type_of(const npy_field *f, int want)
{
        int have = f->type.key;
        bool wide = want == SORTD_KEY_U128 || want == SORTD_KEY_I128;

        if (f->count == 2 && have == SORTD_KEY_U64 && wide)
                return want;
        if (f->count != 1 || have < 0 || (want < 0 && have == SORTD_KEY_U128))
                return -1;
        if (want < 0 || want == have || (want == SORTD_KEY_BF16 && have == SORTD_KEY_U16) ||
            (wide && have == SORTD_KEY_U128))
                return want < 0 ? have : want;
        return -1;
}

static int resolve(const sc_input *in, const sc_keys *k, unsigned j, key_col *kc)
{
        const npy_field *f = npy_fields_find(in->fields, k->name[j]);
        char names[160];
        int t;

        if (!f) {
                field_names(in->fields, names, sizeof(names));
                return sc_fail(SC_FAIL, "--key %s: %s has no such field (its fields: %s)",
                               k->name[j], in->path, names);
        }
        if ((t = key_type_of(f, k->type[j])) < 0)
                return sc_fail(SC_FAIL,
                               "--key %s: the field holds no %s key: sortd sorts by fields of "
                               "its key types (numpy's u1 ... f8 and f2; bf16 from u2, and u128 "
                               "or i128 from V16 or (2,) u8, by :TYPE)",
                               k->name[j],
                               k->type[j] < 0 ? "sortd"
                                              : sortd_key_type_name((sortd_key_type)k->type[j]));
        kc->col = (sortd_column){.key_type = (sortd_key_type)t, .order = k->order[j]};
        kc->store = (npy_layout){.dtype = (sortd_key_type)f->type.key,
                                 .big_endian = f->type.big_endian};
        kc->offset = f->offset;
        kc->size = sortd_key_size((sortd_key_type)t);
        return SC_OK;
}

/* The field's keys of n records, side by side and in native byte order. */
static void take_column(const uint8_t *rec, uint64_t n, uint64_t itemsize, const key_col *kc,
                        uint8_t *col)
{
        for (uint64_t i = 0; i < n; i++)
                memcpy(col + i * kc->size, rec + i * itemsize + kc->offset, kc->size);
        npy_to_native(&kc->store, col, n * kc->size);
}

/* Records in their sorted order, and the permutation, written all or none. */
static int write_records(const sc_input *in, const sc_records_out *o, sc_format fmt,
                         const uint8_t *rec, const uint64_t *perm, sc_progress *p)
{
        uint64_t size = in->fields->itemsize, n = in->n;
        uint8_t *sorted = malloc(n && size ? n * size : 1);
        int r;

        if (!sorted)
                return sc_fail(SC_FAIL, "out of memory for %llu records", (unsigned long long)n);
        for (uint64_t i = 0; i < n; i++)
                memcpy(sorted + i * size, rec + perm[i] * size, size);
        sc_output out[2] = {
                {.path = o->out,
                 .fmt = fmt,
                 .type = SORTD_KEY_U8,
                 .data = sorted,
                 .n = n,
                 .record_size = size,
                 .head = in->head,
                 .head_len = in->head_len},
                {.path = o->argsort,
                 .fmt = o->fmt ? o->fmt : sc_format_of(o->argsort ? o->argsort : "", fmt),
                 .type = SORTD_KEY_I64,
                 .data = perm,
                 .n = n},
        };
        r = sc_outputs_write(out, o->argsort ? 2 : 1, p);
        free(sorted);
        return r;
}

/* The key columns taken out of the records, sorted by sortd into perm. */
static int sort_keys(sortd_conn *c, const sc_input *in, const key_col *kc, unsigned count,
                     const uint8_t *rec, uint64_t *perm, sc_progress *p)
{
        sortd_column cols[SORTD_MAX_COLUMNS];
        void *keys[SORTD_MAX_COLUMNS] = {NULL};
        sortd_status s = SORTD_OK;
        int r = SC_OK;

        for (unsigned j = 0; j < count && r == SC_OK; j++) {
                cols[j] = kc[j].col;
                /* malloc aligns to 16 bytes, as 128-bit keys need. */
                if (!(keys[j] = malloc(in->n ? in->n * kc[j].size : 1)))
                        r = sc_fail(SC_FAIL, "out of memory for the key columns");
                else
                        take_column(rec, in->n, in->fields->itemsize, &kc[j], keys[j]);
        }
        if (r == SC_OK && in->n) {
                sc_progress_phase(p, "sorting", 0);
                s = sortd_sort_columns(c, cols, count, keys, perm, (size_t)in->n,
                                       SORTD_PAYLOAD_ARGSORT64);
                if (s != SORTD_OK)
                        r = sc_fail_conn(c, s, "sorting by key fields");
        }
        for (unsigned j = 0; j < count; j++)
                free(keys[j]);
        return r;
}

/* What the command line asks of the records, checked before they are read. */
static int check(const sc_input *in, const sc_keys *k, const sc_records_out *o, key_col *kc,
                 sc_format *fmt)
{
        char names[160];
        int r = SC_OK;

        if (!k->count) {
                field_names(in->fields, names, sizeof(names));
                return sc_fail(SC_FAIL,
                               "%s is a structured array (fields %s): give --key FIELD to sort "
                               "its records by",
                               in->path, names);
        }
        *fmt = o->fmt ? o->fmt : sc_format_of(o->out, SC_FMT_NPY);
        if (*fmt == SC_FMT_TEXT)
                return sc_fail(SC_FAIL, "%s: records are written as .npy or raw, not text", o->out);
        if (in->n > SIZE_MAX / 16 / (in->fields->itemsize ? in->fields->itemsize : 1))
                return sc_fail(SC_FAIL, "%s: too many records for this machine", in->path);
        for (unsigned j = 0; j < k->count && r == SC_OK; j++)
                r = resolve(in, k, j, &kc[j]);
        return r;
}

int sc_records_sort(sortd_conn *c, sc_input *in, const sc_keys *k, const sc_records_out *o,
                    sc_progress *p)
{
        key_col kc[SORTD_MAX_COLUMNS];
        sc_format fmt = SC_FMT_NPY;
        uint8_t *rec = NULL;
        uint64_t *perm = NULL;
        int r = check(in, k, o, kc, &fmt);

        if (r != SC_OK)
                return r;
        rec = malloc(in->n ? in->n * in->fields->itemsize : 1);
        perm = malloc(in->n ? in->n * sizeof(*perm) : 1);
        if (!rec || !perm)
                r = sc_fail(SC_FAIL, "out of memory for %llu records", (unsigned long long)in->n);
        if (r == SC_OK) {
                sc_progress_phase(p, "reading", in->n * in->fields->itemsize);
                r = sc_input_read(in, rec, p);
        }
        if (r == SC_OK)
                r = sort_keys(c, in, kc, k->count, rec, perm, p);
        if (r == SC_OK)
                r = write_records(in, o, fmt, rec, perm, p);
        free(rec);
        free(perm);
        return r;
}
