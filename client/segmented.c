/*
 * Segments and top-k on the client's side (segmented.h): checked here before a byte is sent,
 * as the daemon would check them, so that a bad request fails with its reason and leaves the
 * connection as it was. Below client.c and region_sort.c, on transport.c.
 */
#include <stdint.h>

#include "segmented.h"
#include "sortd.h"
#include "transport.h"
#include "wire.h"

sortd_status sortd__segmented_offsets_size(sortd_conn *c, uint64_t count, unsigned width,
                                           uint64_t *bytes)
{
        if (width != 4 && width != 8)
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "segments: offsets of %u bytes: 4 (u32) or 8 (u64)",
                                             width);
        /* No address space holds more: the bound keeps (count + 1) x width from wrapping. */
        if (count >= UINT64_MAX / 16)
                return sortd__transport_fail(c, SORTD_E_INVAL, "segments: %llu segments: too many",
                                             (unsigned long long)count);
        *bytes = (count + 1) * width;
        return SORTD_OK;
}

sortd_status sortd__segmented_check(sortd_conn *c, const sortd_segments *seg, uint64_t n,
                                    uint64_t k, sortd__segmented *out)
{
        char why[160];

        *out = (sortd__segmented){0};
        if (seg && seg->offsets &&
            sortd__segmented_offsets_size(c, seg->count, seg->offset_bytes, &out->offsets_bytes) !=
                    SORTD_OK)
                return SORTD_E_INVAL;
        if (seg && sortd_segments_check(seg, n, why, sizeof(why)) != SORTD_OK)
                return sortd__transport_fail(c, SORTD_E_INVAL, "segments: %s", why);
        if (k)
                out->results = sortd_topk_results(seg, n, k);
        return SORTD_OK;
}

uint64_t sortd__segmented_part(uint64_t bytes)
{
        return (bytes + 15) & ~(uint64_t)15;
}

/* The daemon cannot count the results of offsets it has not read: it takes the most. */
static uint64_t results_max(const sortd_segments *seg, uint64_t n, uint64_t k)
{
        if (!k)
                return 0;
        if (!seg || !seg->offset_bytes)
                return sortd_topk_results(seg, n, k);
        return k >= n || seg->count >= n / k ? n : seg->count * k;
}

uint64_t sortd__segmented_held_bytes(const sortd_segments *seg, uint64_t n, uint64_t k,
                                     sortd_key_type t, sortd_payload p, int inline_data)
{
        uint64_t ks = sortd_key_size(t), vs = sortd_payload_size(p), m = results_max(seg, n, k);
        uint64_t offsets = seg && seg->offset_bytes ? (seg->count + 1) * seg->offset_bytes : 0;

        if (!inline_data)
                return sortd__segmented_part(offsets);
        /* a top-k reads the values it moves, and an argsort's indices are its results */
        return sortd__segmented_part(n * ks) +
               sortd__segmented_part(k && sortd_payload_is_argsort(p) ? 0 : n * vs) +
               sortd__segmented_part(offsets) + sortd__segmented_part(m * ks) +
               sortd__segmented_part(m * vs);
}

void sortd__segmented_msg(Sortd__Wire__Sort *sort, Sortd__Wire__Segments *msg,
                          const sortd_segments *seg, uint64_t k)
{
        sort->k = k;
        if (!seg)
                return;
        msg->count = seg->count;
        msg->row_len = seg->row_len;
        msg->offset_type = seg->offset_bytes == 4 ? SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U32
                           : seg->offset_bytes == 8
                                   ? SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U64
                                   : SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_NONE;
        sort->segments = msg;
}

sortd_status sortd__segmented_check_held(sortd_conn *c, uint64_t held, const char *what)
{
        if (c->info.max_request_bytes && held > c->info.max_request_bytes)
                return sortd__transport_fail(
                        c, SORTD_E_CAPACITY,
                        "%s of %llu bytes above the daemon's max-request-bytes %llu", what,
                        (unsigned long long)held, (unsigned long long)c->info.max_request_bytes);
        return SORTD_OK;
}
