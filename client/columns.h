/*
 * What key columns make of a sort (columns.c), inline (client.c) or in a region (region_sort.c):
 * their checks, the fields of their Sort message, and the one buffer they travel as
 * (sortd_columns_offset): the columns one after the other, each padded to 16 bytes. It sits on
 * segmented.c, device.c and transport.c; nothing here is exported (libsortd.sym).
 */
#ifndef SORTD_CLIENT_COLUMNS_H
#define SORTD_CLIENT_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sortd.h"
#include "transport.h"
#include "wire.h"

/* The bytes each column's buffer starts on, and the most padding after a column. */
#define SORTD__COLUMNS_ALIGN 16

/*
 * The checks of every sort by columns, wherever its data lies: the columns (sortd_columns_check),
 * nothing of a one-array sort's beside them (extra names what is: segments, top-k), n's sizes
 * (*sizes, sortd__wire_columns_sizes), n within the daemon's capacity, the device asked for.
 */
sortd_status sortd__columns_check(sortd_conn *c, const sortd_column *cols, unsigned count,
                                  sortd_payload p, size_t n, const char *extra,
                                  const uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES],
                                  sortd__wire_sizes *sizes);

/* An inline sort by columns r: sortd__columns_check, then its arrays (non-NULL, aligned to
   their elements, apart) and the bytes the daemon would hold against its max-request-bytes. */
sortd_status sortd__columns_check_inline(sortd_conn *c, const sortd_request *r,
                                         sortd__wire_sizes *sizes);

/* The Column messages of a Sort, which must outlive it. */
typedef struct sortd__columns_msg {
        Sortd__Wire__Column col[SORTD_MAX_COLUMNS];
        Sortd__Wire__Column *ptr[SORTD_MAX_COLUMNS];
} sortd__columns_msg;

/* sort's fields for count columns (checked) of n rows with payload p; its device_uuid points
   into device_uuid and its columns into m, which must outlive sort. */
void sortd__columns_sort_msg(Sortd__Wire__Sort *sort, sortd__columns_msg *m,
                             const sortd_column *cols, unsigned count, sortd_payload p,
                             const uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES], size_t n);

/* The payload of inline sort r (checked): each column and its padding, then the values unless
   an argsort makes them, into out (SORTD__TRANSPORT_MAX_PIECES). Returns their count. */
int sortd__columns_pieces(const sortd_request *r, sortd__transport_piece *out);

/* The reply's payload of inline sort r, read into its arrays: the permutation for an argsort,
   else each column (its padding dropped) and then the values. */
sortd_status sortd__columns_read(sortd_conn *c, const sortd_request *r);

#endif
