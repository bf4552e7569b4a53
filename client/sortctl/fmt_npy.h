/*
 * NumPy's .npy format, as much of it as a sort needs: a 1-d array of one of sortd's key types,
 * little- or big-endian (fortran_order True or False: one dimension is laid out the same either
 * way), or a 2-d one in C order, whose rows (its last axis) are sorted each on its own; or a
 * 1-d structured array (records of named fields, npy_fields.h), sorted by some of its fields.
 * sortd sorts little-endian keys: a big-endian array's bytes are swapped after reading and
 * before writing (npy_byteswap). Debian packages no maintained C parser, so this is a small
 * strict one: every length and offset in a header is checked against the bytes there are, and
 * anything else (other dtypes, more dimensions) is refused with a message that names it.
 * tests/fuzz/fuzz_npy.c fuzzes npy_parse and npy_retype.
 *
 * numpy has no dtype of its own for some key types; they are stored as it can store them, and
 * the command line's type says so (npy_retype): bf16 as '<u2', a 128-bit key as 16 raw bytes
 * ('|V16') or as a last axis of two '<u8' words, the low word first (shape (n, 2)). f16 is
 * numpy's '<f2'.
 *
 * The format (numpy/lib/format.py): "\x93NUMPY", major and minor version bytes, the header's
 * length (2 bytes little-endian in version 1.0, 4 bytes in 2.0 and 3.0), then the header: a
 * Python dict literal {'descr': '<u4', 'fortran_order': False, 'shape': (N,), } padded with
 * spaces and a newline; the data follows it.
 */
#ifndef SORTCTL_FMT_NPY_H
#define SORTCTL_FMT_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npy_fields.h"
#include "sortd_types.h"

/* A header longer than this is refused (numpy itself reads at most 10,000 bytes by default). */
#define NPY_MAX_HEADER 65536
/* The most bytes npy_parse may need to see: the preamble of version 2.0 and the longest header. */
#define NPY_MAX_PREAMBLE (12 + NPY_MAX_HEADER)
/* What npy_format writes at most. */
#define NPY_HEADER_OUT 128

/* How a file stores its keys, so that they are written back the same way. */
typedef struct npy_layout {
        sortd_key_type dtype; /* the file's: u16 for bf16 keys, u64 for pairs, u128 for |V16 */
        bool big_endian;      /* '>' and more than one byte: the data needs swapping */
        bool pairs;           /* 128-bit keys as a last axis of two 8-byte words */
} npy_layout;

typedef struct npy_header {
        sortd_key_type type; /* the keys': the dtype's own, until npy_retype says otherwise */
        npy_layout layout;
        unsigned ndim;        /* 1 or 2 (pairs: without their last axis) */
        uint64_t shape[2];    /* shape[0] x shape[1] = n for 2-d; shape[0] = n for 1-d */
        uint64_t n;           /* keys, or records */
        uint64_t data_offset; /* from the file's start */
        npy_fields fields;    /* count > 0: n records of fields.itemsize bytes; type unused */
} npy_header;

/*
 * Parses the header in buf (the file's first len bytes: the whole file, or at least its first
 * NPY_MAX_PREAMBLE bytes) of a file of file_size bytes, and checks that the data that follows
 * is exactly n elements. Returns 0 and fills *h, or -1 with the reason in why (*h untouched).
 */
int npy_parse(const uint8_t *buf, size_t len, uint64_t file_size, npy_header *h, char *why,
              size_t why_len);

/*
 * The keys' type as the command line gives it (want; -1 for none, named option in messages):
 * the dtype's own, or one it stores (bf16 in '<u2'; u128 or i128 in '|V16', or in a '<u8' array
 * whose last axis is 2, which becomes one key). Returns 0 and updates *h, or -1 with the reason
 * in why (a mismatch, or a '|V16' without a type).
 */
int npy_retype(npy_header *h, int want, const char *option, char *why, size_t why_len);

/* The layout a key type is written in when its input had none (raw or text): its own dtype,
   bf16 as '<u2', 128-bit keys as pairs of '<u8'; little-endian. */
npy_layout npy_layout_of(sortd_key_type t);

/* Writes a version 1.0 header for keys stored as l says, of shape (shape[0],) for ndim 1 or
   (shape[0], shape[1]) for ndim 2, and a last axis of 2 for pairs (its length is a multiple of
   64, as numpy aligns it) into buf; returns its length. */
size_t npy_format(const npy_layout *l, unsigned ndim, const uint64_t shape[2],
                  uint8_t buf[NPY_HEADER_OUT]);

/* Swaps the byte order of n elements of size bytes at data, in place (no-op for one byte, and
   for 16: raw bytes have no order). */
void npy_byteswap(void *data, uint64_t n, size_t size);

/* Swaps bytes keys' bytes as the layout l says, if it is big-endian (to native and back). */
void npy_to_native(const npy_layout *l, void *data, uint64_t bytes);

#endif
