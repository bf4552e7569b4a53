/*
 * Seeded test and benchmark data: the key distributions of the test matrix
 * and of bench/sortbench. Shared by tests/ and bench/.
 */
#ifndef SORTD_DATAGEN_H
#define SORTD_DATAGEN_H

#include <stddef.h>
#include <stdint.h>

#include "sortd_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum datagen_dist {
        DATAGEN_UNIFORM,  /* uniformly random bit patterns */
        DATAGEN_ENTROPY,  /* Thearling-Smith: AND of `param` uniform samples (2, 4, 8, 16) */
        DATAGEN_EQUAL,    /* every key the same */
        DATAGEN_SORTED,   /* ascending in the key type's own order */
        DATAGEN_REVERSE,  /* descending in the key type's own order */
        DATAGEN_FEW,      /* `param` distinct values (default 16), random order */
        DATAGEN_NEGATIVE, /* negative values of a signed/float type (uniform for unsigned) */
        DATAGEN_SPECIAL,  /* floats: +-0, +-inf, NaNs of both signs, denormals, normals
                             (integers: min, max, 0, -1, 1 and neighbours; 128-bit ones also
                             2^64 - 1, 2^64, and keys sharing their high 64 bits) */
        DATAGEN_DIST_COUNT
} datagen_dist;

/*
 * Fills n keys of type t; the same (t, dist, param, seed) gives the same data. f16 and bf16 keys
 * are 16-bit float patterns; u128 and i128 keys 16-byte little-endian integers (low 8 bytes
 * first) whose high word follows the distribution and whose low word is random (few: values
 * 2i and 2i + 1 share their high word).
 */
void datagen_fill(void *keys, size_t n, sortd_key_type t, datagen_dist dist, unsigned param,
                  uint64_t seed);
/* Fills n values of `bytes` (4 or 8) bytes with uniformly random bits. */
void datagen_fill_values(void *vals, size_t n, unsigned bytes, uint64_t seed);

/*
 * Keys (values) [begin, end) of the n that datagen_fill (datagen_fill_values) writes to the
 * same array, byte for byte, and nothing outside them: callers fill one array in parts on
 * several threads, and the data stays the same for a seed whatever the parts.
 */
void datagen_fill_range(void *keys, size_t n, size_t begin, size_t end, sortd_key_type t,
                        datagen_dist dist, unsigned param, uint64_t seed);
void datagen_fill_values_range(void *vals, size_t begin, size_t end, unsigned bytes, uint64_t seed);

/* "uniform", "q2".."q16" (entropy), "equal", "sorted", "reverse", "few",
   "negative", "special". Returns 0, or -1 if the name is unknown. */
int datagen_parse(const char *name, datagen_dist *dist, unsigned *param);
/* Writes the name datagen_parse reads back into buf. */
const char *datagen_name(datagen_dist dist, unsigned param, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
