/*
 * Keys and values as the CPU engine's loops see them: elements of 1, 2, 4 or
 * 8 bytes, in tiles of SORTD__CPU_TILE_KEYS split into SORTD__STREAMS parts.
 * Every phase's hot loop calls these, so they are inlined into each.
 */
#ifndef SORTD_CPU_TILE_H
#define SORTD_CPU_TILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "policy.h"

/* The loops are compiled once per element width and payload, and only
   inlining carries those constants into the helpers they call. */
#define SORTD__ALWAYS_INLINE static inline __attribute__((always_inline))

SORTD__ALWAYS_INLINE uint64_t sortd__load_elem(const unsigned char *p, size_t i, unsigned eb)
{
        switch (eb) {
        case 1:
                return p[i];
        case 2: {
                uint16_t v;
                memcpy(&v, p + 2 * i, 2);
                return v;
        }
        case 4: {
                uint32_t v;
                memcpy(&v, p + 4 * i, 4);
                return v;
        }
        default: {
                uint64_t v;
                memcpy(&v, p + 8 * i, 8);
                return v;
        }
        }
}

SORTD__ALWAYS_INLINE void sortd__store_elem(unsigned char *p, size_t i, unsigned eb, uint64_t x)
{
        switch (eb) {
        case 1:
                p[i] = (unsigned char)x;
                break;
        case 2: {
                uint16_t v = (uint16_t)x;
                memcpy(p + 2 * i, &v, 2);
                break;
        }
        case 4: {
                uint32_t v = (uint32_t)x;
                memcpy(p + 4 * i, &v, 4);
                break;
        }
        default:
                memcpy(p + 8 * i, &x, 8);
                break;
        }
}

SORTD__ALWAYS_INLINE unsigned sortd__digit_of(uint64_t y, unsigned shift, uint64_t mask)
{
        return (unsigned)((y >> shift) & mask);
}

/* The index of a loop variant for an element of `bytes` bytes. */
static inline unsigned sortd__log2_bytes(unsigned bytes)
{
        return bytes == 1 ? 0 : bytes == 2 ? 1 : bytes == 4 ? 2 : 3;
}

static inline size_t sortd__tile_count(size_t n)
{
        return (n + SORTD__CPU_TILE_KEYS - 1) / SORTD__CPU_TILE_KEYS;
}

static inline size_t sortd__tile_len(size_t n, size_t t)
{
        size_t begin = t * SORTD__CPU_TILE_KEYS;

        return n - begin < SORTD__CPU_TILE_KEYS ? n - begin : SORTD__CPU_TILE_KEYS;
}

/*
 * A tile is split into SORTD__STREAMS contiguous parts, counted and ranked
 * side by side with their own counters: a run of one digit (low-entropy
 * keys) then makes independent dependency chains instead of one long one,
 * and stability holds because part s precedes part s + 1 in the input. The
 * last part also takes the len % SORTD__STREAMS keys left over.
 */
static inline size_t sortd__stream_len(size_t len)
{
        return len / SORTD__STREAMS;
}

#endif
