/* The checks of a caller's buffers that the inline sorts (client.c, columns.c) share. */
#ifndef SORTD_CLIENT_BUFFERS_H
#define SORTD_CLIENT_BUFFERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool sortd__misaligned(const void *p, size_t align)
{
        return (uintptr_t)p % align != 0;
}

/* Two buffers of the caller's, both written by the reply, must not share a byte. */
static inline bool sortd__overlap(const void *a, uint64_t alen, const void *b, uint64_t blen)
{
        uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

        return alen && blen && x < y + blen && y < x + alen;
}

#endif
