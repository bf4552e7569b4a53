/*
 * One scalar dtype of a .npy header, as numpy spells it ('<u4', '|V16', '<U10', '<M8[ns]'):
 * its size and the sortd key type it holds, if any (npy_dtype.c). The header's descr
 * (fmt_npy.c) and each field of a structured one (npy_fields.c) are read with it.
 */
#ifndef SORTCTL_NPY_DTYPE_H
#define SORTCTL_NPY_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sortd_types.h"

typedef struct npy_dtype {
        int key;         /* the key type it holds (u128 for 16 raw bytes, |V16), or -1: none */
        bool big_endian; /* '>' and a key of more than one byte: its bytes need swapping */
        uint64_t size;   /* bytes */
} npy_dtype;

/* Parses s[0, len): 0, or -1 with the reason in why (an unknown kind, a Python object). */
int npy_dtype_parse(const char *s, size_t len, npy_dtype *d, char *why, size_t why_len);

/* The dtype string numpy writes for key type t in that byte order: '|V16' for u128; NULL for
   bf16 and i128, which numpy has no dtype for. */
const char *npy_dtype_name(sortd_key_type t, bool big_endian);

#endif
