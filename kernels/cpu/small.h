/*
 * The CPU engine's sort for small arrays, on one thread (small.c): a batch spreads whole
 * requests over the threads, each sorted by one of them, with none of the tiles, tickets and
 * look-back that let many threads share one large sort.
 */
#ifndef SORTD_CPU_SMALL_H
#define SORTD_CPU_SMALL_H

#include <stddef.h>
#include <stdint.h>

#include "onesweep.h"

/* The largest n sortd__small_sort takes: its four arrays of n u64 live in a thread's scratch. */
#define SORTD__SMALL_KEYS 65536u
/*
 * A single sort up to this n takes the small sort: without Onesweep's histogram pass and
 * tiles it is faster on one thread below about 10^4 keys (u32, measured side by side: 64 keys
 * 0.9 us against 8.8, 1,024 keys 6.8 against 16.1, 4,096 keys 26 against 32, 16,384 keys 103
 * against 96).
 */
#define SORTD__SMALL_SINGLE_KEYS 8192u
/* A batch wakes one thread per this many keys of small members (cpu_engine.c). */
#define SORTD__SMALL_SPREAD_KEYS 8192u

_Static_assert(2 * SORTD__SMALL_KEYS * sizeof(uint64_t) <=
                       sizeof(((sortd__cpu_scratch *)0)->local_k),
               "a small sort's keys fit the thread's local_k");
_Static_assert(2 * SORTD__SMALL_KEYS * sizeof(uint64_t) <=
                       sizeof(((sortd__cpu_scratch *)0)->local_v),
               "a small sort's values fit the thread's local_v");

/*
 * Whether sortd__small_sort() sorts n keys by the sorting network (network.h): keys alone of up
 * to 4 bytes, on a CPU that has it, and no bit range, where keys that differ outside the range
 * would be equal images, which the network may reorder.
 */
bool sortd__small_by_network(const sortd__plan *plan, size_t n, const sortd__cpu_scratch *s);

/* Sorts as plan says, 2 <= n <= SORTD__SMALL_KEYS, in s's local buffers. */
void sortd__small_sort(const sortd__plan *plan, void *keys, void *vals, size_t n,
                       sortd__cpu_scratch *s);

#endif
