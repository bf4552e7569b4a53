/*
 * A structured dtype (a record array's): the list of fields numpy writes as descr,
 * [('a', '<u4'), ('b', '<f8', (3,)), ('', '|V4')], read into names, types, sizes and offsets
 * (npy_fields.c). A field is a scalar dtype, or a sub-array of one; '' names numpy's padding.
 * Nested structures and titles are refused with a message that names the field.
 */
#ifndef SORTCTL_NPY_FIELDS_H
#define SORTCTL_NPY_FIELDS_H

#include <stdint.h>

#include "npy_dtype.h"
#include "npy_lex.h"

#define NPY_MAX_FIELDS 128
#define NPY_MAX_NAME 64 /* a name's bytes, its NUL included */

typedef struct npy_field {
        char name[NPY_MAX_NAME];
        npy_dtype type;
        uint64_t count;  /* its elements: 1, or the product of a sub-array's shape */
        uint64_t offset; /* in the record, in bytes */
} npy_field;

typedef struct npy_fields {
        unsigned count; /* 0: no structured dtype */
        uint64_t itemsize;
        npy_field f[NPY_MAX_FIELDS];
} npy_fields;

/* Parses the list at c (its '[' next), leaving c after its ']'. 0, or -1 with c's why. */
int npy_fields_parse(npy_cursor *c, npy_fields *out);

/* The field called name, or NULL. */
const npy_field *npy_fields_find(const npy_fields *fs, const char *name);

#endif
