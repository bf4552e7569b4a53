/*
 * libFuzzer target for the segments check (common/segments.c), which every segmented or top-k
 * request passes in the client, the daemon and the engine. The input: a form byte (rows, u32
 * or u64 offsets, with a width or row length that may not fit the form), the segment count,
 * n, the row length and k, then the offsets' bytes. Segments the check accepts must tile
 * [0, n) exactly, each inside it, and their top-k result count must be the sum of the
 * segments' own; one it refuses must say why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sortd_types.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct reader {
        const uint8_t *p;
        size_t left;
} reader;

static uint64_t take(reader *r, unsigned bytes)
{
        uint64_t v = 0;

        for (unsigned i = 0; i < bytes && r->left; i++, r->left--)
                v |= (uint64_t)*r->p++ << (8 * i);
        return v;
}

static void check_accepted(const sortd_segments *s, uint64_t n, uint64_t k)
{
        uint64_t at = 0, results = 0;

        for (uint64_t i = 0; i < s->count; i++) {
                uint64_t b = sortd_segment_begin(s, i), len = sortd_segment_length(s, i);

                if (b != at || len > n - b)
                        abort();
                at = b + len;
                results += len < k ? len : k;
        }
        if (at != n || sortd_topk_results(s, n, k) != results)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        reader r = {data, size};
        unsigned form = (unsigned)take(&r, 1);
        uint64_t count = take(&r, 2), n = take(&r, 3), row_len = take(&r, 2), k = take(&r, 2);
        unsigned width = form & 1 ? 4 : 8;
        sortd_segments s = {.count = count, .row_len = row_len};
        void *offsets = NULL;
        char why[256] = "";

        if (form & 2) { /* offsets: as many as the input holds, the rest of count+1 zero */
                offsets = calloc(count + 1, width);
                if (!offsets)
                        return 0;
                memcpy(offsets, r.p, r.left < (count + 1) * width ? r.left : (count + 1) * width);
                s.offsets = offsets;
                s.offset_bytes = width;
                s.row_len = form & 4 ? row_len : 0;
        } else if (form & 4) {
                s.offset_bytes = width;
        } else if (form & 8) {
                n = count * row_len; /* rows that fit, most of the time */
        }
        if (sortd_segments_check(&s, n, why, sizeof(why)) == SORTD_OK)
                check_accepted(&s, n, k);
        else if (!why[0])
                abort();
        free(offsets);
        return 0;
}
