#include "copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "policy.h"

#define PAGE 4096u

void sortd__copy_stream(void *dst, const void *src, size_t bytes)
{
        unsigned char *d = dst;
        const unsigned char *s = src;

#if defined(__SSE2__)
        if (bytes >= 2 * SORTD__LINE) {
                size_t head = (SORTD__LINE - (uintptr_t)d % SORTD__LINE) % SORTD__LINE;

                memcpy(d, s, head);
                d += head, s += head, bytes -= head;
                for (; bytes >= SORTD__LINE;
                     d += SORTD__LINE, s += SORTD__LINE, bytes -= SORTD__LINE) {
                        const __m128i *from = (const __m128i *)s;
                        __m128i *to = (__m128i *)d;

                        _mm_stream_si128(to, _mm_loadu_si128(from));
                        _mm_stream_si128(to + 1, _mm_loadu_si128(from + 1));
                        _mm_stream_si128(to + 2, _mm_loadu_si128(from + 2));
                        _mm_stream_si128(to + 3, _mm_loadu_si128(from + 3));
                }
        }
#endif
        memcpy(d, s, bytes);
}

void sortd__copy_fence(void)
{
#if defined(__SSE2__)
        _mm_sfence(); /* non-temporal stores are weakly ordered, even against a lock's */
#else
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

struct copy_job {
        unsigned char *dst;
        const unsigned char *src;
        size_t bytes;
        bool stream;
};

static void copy_share(void *arg, unsigned tid, unsigned n)
{
        const struct copy_job *j = arg;
        size_t pages = (j->bytes + PAGE - 1) / PAGE;
        size_t lo = pages * tid / n * PAGE, hi = pages * (tid + 1) / n * PAGE;

        hi = hi < j->bytes ? hi : j->bytes;
        if (!j->stream) {
                memcpy(j->dst + lo, j->src + lo, hi - lo);
                return;
        }
        sortd__copy_stream(j->dst + lo, j->src + lo, hi - lo);
        sortd__copy_fence();
}

void sortd__pool_copy(sortd__pool *pool, void *dst, const void *src, size_t bytes, size_t share_min,
                      bool stream)
{
        struct copy_job job = {dst, src, bytes, stream};
        size_t shares = bytes / (share_min > PAGE ? share_min : PAGE);
        unsigned threads = sortd__pool_size(pool);

        if (shares < 2) {
                memcpy(dst, src, bytes); /* small: its reader may still find it in the cache */
                return;
        }
        sortd__pool_run(pool, shares < threads ? (unsigned)shares : threads, copy_share, &job);
}
