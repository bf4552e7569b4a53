/*
 * Large host copies whose destination is not read again soon: the binning
 * passes' runs, and the GPU engines' staging between the caller's memory and
 * the pinned slots. Whole cache lines of the destination are written with
 * non-temporal stores, which neither read the line first (a plain store's
 * read-for-ownership: a third of a copy's memory traffic) nor push the
 * source out of the cache.
 */
#ifndef SORTD_CPU_COPY_H
#define SORTD_CPU_COPY_H

#include <stdbool.h>
#include <stddef.h>

#include "pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[0, bytes) = src[0, bytes), streaming the whole lines of dst. Another
   thread, or a device, may read dst only after sortd__copy_fence() here. */
void sortd__copy_stream(void *dst, const void *src, size_t bytes);
void sortd__copy_fence(void);

/*
 * dst = src, split over the pool's threads in shares of whole pages, of at
 * least share_min bytes each (below that a wake-up costs more than it copies),
 * streamed (and fenced) or with memcpy. Less than two shares is one memcpy on
 * the calling thread. Returns once all of dst is written.
 */
void sortd__pool_copy(sortd__pool *pool, void *dst, const void *src, size_t bytes, size_t share_min,
                      bool stream);

#ifdef __cplusplus
}
#endif

#endif
