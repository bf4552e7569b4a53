/*
 * The rows a sort or top-k works on each on its own (rows.c): a 2-d .npy file's (its last axis),
 * or those --rows LEN cuts a 1-d input into, as one segmented request; and the shape of an output
 * that keeps them. Shared by the sort and topk subcommands.
 */
#ifndef SORTCTL_ROWS_H
#define SORTCTL_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "args.h"
#include "formats.h"
#include "sortd.h"

typedef struct sc_rows {
        uint64_t len; /* --rows LEN; 0: not given */
        bool on;      /* the input has rows: seg says them */
        sortd_segments seg;
} sc_rows;

/* --rows LEN's value, at least 1: 1 when taken, -1 (failure recorded) when bad. */
int sc_rows_value(sc_args *a, sc_rows *r);

/* The rows of in, from its shape or --rows: r->on and r->seg; a failure says what to fix. */
int sc_rows_of(const sc_input *in, sc_rows *r);

/* An output of width keys in each row (the rows' length for a sort, min(k, it) for a top-k)
   takes the rows' shape when there are rows. */
void sc_rows_shape(const sc_rows *r, uint64_t width, sc_output *o);

#endif
