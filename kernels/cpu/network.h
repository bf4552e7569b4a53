/*
 * The small sort's sorting network (network.c): the 4-byte images of keys that carry no values,
 * sorted by bitonic merges in AVX-512 registers. Without values and over the keys' whole width,
 * equal images are equal keys, so the network's order of ties cannot show, and a short row
 * sorts in far fewer instructions than four counting scatters take.
 */
#ifndef SORTD_CPU_NETWORK_H
#define SORTD_CPU_NETWORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most keys the network sorts: above it, the radix sort's linear cost wins. Keys with
   values or indices, ranked with them in 8-byte images, lose to it sooner. */
#define SORTD__NETWORK_KEYS 4096u
#define SORTD__NETWORK_RANKED_KEYS 2048u

#if defined(__x86_64__) && defined(__GNUC__)
#define SORTD__HAVE_NETWORK 1
#else
#define SORTD__HAVE_NETWORK 0
#endif

/* Whether this CPU can run sortd__network_sort(). */
bool sortd__network_available(void);

/* The images n keys take in the network: n rounded up to a power of two, at least 16. */
static inline size_t sortd__network_room(size_t n)
{
        size_t r = 16;

        while (r < n)
                r *= 2;
        return r;
}

/*
 * Whether n keys are worth the network: up to `most`, and, where the padding to
 * sortd__network_room(n) grows past 1,024 keys, only when n fills at least three quarters of it.
 */
static inline bool sortd__network_worth(size_t n, size_t most)
{
        size_t room = sortd__network_room(n);

        return n <= most && (room <= 1024 || 4 * n >= 3 * room);
}

/*
 * Sorts the n images in a ascending. a is 64-byte aligned, with room for
 * sortd__network_room(n) images: the network pads it with the largest image. Only where
 * sortd__network_available().
 */
void sortd__network_sort(uint32_t *a, size_t n);
/* The same for 8-byte images; a has room for sortd__network_room(n) of them. */
void sortd__network_sort64(uint64_t *a, size_t n);

#endif
