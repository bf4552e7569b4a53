/*
 * NumPy's .npy format, as much of it as a sort needs: a 1-d array of one of sortd's key types,
 * little- or big-endian (fortran_order True or False: one dimension is laid out the same either
 * way), or a 2-d one in C order, whose rows (its last axis) are sorted each on its own. sortd sorts
 * little-endian keys: a big-endian array's bytes are swapped after reading and before writing
 * (npy_byteswap). Debian packages no maintained C parser, so this is a small strict one: every
 * length and offset in a header is checked against the bytes there are, and anything else (other
 * dtypes, more dimensions) is refused with a message that names it. tests/fuzz/fuzz_npy.c fuzzes
 * npy_parse.
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

#include "sortd_types.h"

/* A header longer than this is refused (numpy itself reads at most 10,000 bytes by default). */
#define NPY_MAX_HEADER 65536
/* The most bytes npy_parse may need to see: the preamble of version 2.0 and the longest header. */
#define NPY_MAX_PREAMBLE (12 + NPY_MAX_HEADER)
/* What npy_format writes at most. */
#define NPY_HEADER_OUT 128

typedef struct npy_header {
        sortd_key_type type;
        bool big_endian;   /* '>' and more than one byte: the data needs swapping */
        unsigned ndim;     /* 1 or 2 */
        uint64_t shape[2]; /* shape[0] x shape[1] = n for 2-d; shape[0] = n for 1-d */
        uint64_t n;
        uint64_t data_offset; /* from the file's start */
} npy_header;

/*
 * Parses the header in buf (the file's first len bytes: the whole file, or at least its first
 * NPY_MAX_PREAMBLE bytes) of a file of file_size bytes, and checks that the data that follows
 * is exactly n elements. Returns 0 and fills *h, or -1 with the reason in why (*h untouched).
 */
int npy_parse(const uint8_t *buf, size_t len, uint64_t file_size, npy_header *h, char *why,
              size_t why_len);

/* Writes a version 1.0 header for an array of type t, big-endian or little-endian, of shape
   (shape[0],) for ndim 1 or (shape[0], shape[1]) for ndim 2 (its length is a multiple of 64, as
   numpy aligns it) into buf; returns its length. */
size_t npy_format(sortd_key_type t, bool big_endian, unsigned ndim, const uint64_t shape[2],
                  uint8_t buf[NPY_HEADER_OUT]);

/* Swaps the byte order of n elements of size bytes at data, in place (no-op for one byte). */
void npy_byteswap(void *data, uint64_t n, size_t size);

#endif
