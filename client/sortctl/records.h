/*
 * A structured .npy file (a record array) sorted by some of its fields (records.c): --key
 * FIELD[:asc|:desc][:TYPE], repeated, the first most significant, as ORDER BY a, b DESC. The
 * key fields are taken out as columns, sortd sorts them by sortd_sort_columns and answers the
 * permutation, and every record moves whole: the output has the input's header and layout,
 * its rows reordered. Used by the sort subcommand.
 */
#ifndef SORTCTL_RECORDS_H
#define SORTCTL_RECORDS_H

#include <stdbool.h>

#include "args.h"
#include "formats.h"
#include "npy_fields.h"
#include "progress.h"
#include "sortd.h"

typedef struct sc_keys {
        unsigned count;
        char name[SORTD_MAX_COLUMNS][NPY_MAX_NAME];
        sortd_order order[SORTD_MAX_COLUMNS];
        int type[SORTD_MAX_COLUMNS]; /* the key type a :TYPE suffix names; -1: the field's */
} sc_keys;

/* One --key's value: 1 when taken, -1 (failure recorded) when bad, too many or repeated. */
int sc_keys_value(sc_args *a, sc_keys *k);

/* Where the sorted records go: out (in fmt: npy or raw), and the permutation to argsort. */
typedef struct sc_records_out {
        const char *out, *argsort;
        sc_format fmt; /* AUTO: by out's extension, else IN's */
} sc_records_out;

/*
 * Sorts the records of in (opened, with fields) by the keys k through c and writes them as
 * o says, all or none (sc_outputs_write).
 */
int sc_records_sort(sortd_conn *c, sc_input *in, const sc_keys *k, const sc_records_out *o,
                    sc_progress *p);

#endif
