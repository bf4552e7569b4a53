/* Segments and top-k results (sortd_types.h): the one check that client, daemon and engine
   all call, and the arithmetic they share. */
#include "invalid.h"

static uint64_t offset_at(const sortd_segments *s, uint64_t i)
{
        return s->offset_bytes == 4 ? ((const uint32_t *)s->offsets)[i]
                                    : ((const uint64_t *)s->offsets)[i];
}

uint64_t sortd_segment_begin(const sortd_segments *s, uint64_t i)
{
        return s->offsets ? offset_at(s, i) : i * s->row_len;
}

uint64_t sortd_segment_length(const sortd_segments *s, uint64_t i)
{
        return s->offsets ? offset_at(s, i + 1) - offset_at(s, i) : s->row_len;
}

static sortd_status check_rows(const sortd_segments *s, uint64_t n, char *why, size_t why_len)
{
        if (s->offset_bytes)
                return sortd__invalid(why, why_len,
                                      "offset width %u given for uniform rows (no offsets)",
                                      s->offset_bytes);
        if (s->row_len && s->count > UINT64_MAX / s->row_len)
                return sortd__invalid(why, why_len, "%llu rows of %llu keys overflow",
                                      (unsigned long long)s->count, (unsigned long long)s->row_len);
        if (s->count * s->row_len != n)
                return sortd__invalid(why, why_len, "%llu rows of %llu keys are not n = %llu",
                                      (unsigned long long)s->count, (unsigned long long)s->row_len,
                                      (unsigned long long)n);
        return SORTD_OK;
}

static sortd_status check_offsets(const sortd_segments *s, uint64_t n, char *why, size_t why_len)
{
        uint64_t prev;

        if (s->offset_bytes != 4 && s->offset_bytes != 8)
                return sortd__invalid(why, why_len, "offsets of %u bytes: 4 (u32) or 8 (u64)",
                                      s->offset_bytes);
        if ((uintptr_t)s->offsets % s->offset_bytes)
                return sortd__invalid(why, why_len, "offsets not aligned to %u bytes",
                                      s->offset_bytes);
        if (s->row_len)
                return sortd__invalid(why, why_len, "row length %llu given with offsets",
                                      (unsigned long long)s->row_len);
        if (s->count == UINT64_MAX)
                return sortd__invalid(why, why_len, "%llu segments: too many",
                                      (unsigned long long)s->count);
        if ((prev = offset_at(s, 0)) != 0)
                return sortd__invalid(why, why_len,
                                      "offsets[0] = %llu: the first segment starts at 0",
                                      (unsigned long long)prev);
        for (uint64_t i = 1; i <= s->count; i++) {
                uint64_t o = offset_at(s, i);

                if (o < prev)
                        return sortd__invalid(
                                why, why_len, "offsets[%llu] = %llu below offsets[%llu] = %llu",
                                (unsigned long long)i, (unsigned long long)o,
                                (unsigned long long)(i - 1), (unsigned long long)prev);
                if (o > n)
                        return sortd__invalid(why, why_len, "offsets[%llu] = %llu past n = %llu",
                                              (unsigned long long)i, (unsigned long long)o,
                                              (unsigned long long)n);
                prev = o;
        }
        if (prev != n)
                return sortd__invalid(why, why_len,
                                      "offsets[%llu] = %llu: the last segment ends at n = %llu",
                                      (unsigned long long)s->count, (unsigned long long)prev,
                                      (unsigned long long)n);
        return SORTD_OK;
}

sortd_status sortd_segments_check(const sortd_segments *s, uint64_t n, char *why, size_t why_len)
{
        if (!s)
                return sortd__invalid(why, why_len, "NULL segments");
        return s->offsets ? check_offsets(s, n, why, why_len) : check_rows(s, n, why, why_len);
}

uint64_t sortd_topk_results(const sortd_segments *s, uint64_t n, uint64_t k)
{
        uint64_t m = 0;

        if (!s)
                return k < n ? k : n;
        if (!s->offsets)
                return s->count * (k < s->row_len ? k : s->row_len);
        for (uint64_t i = 0; i < s->count; i++) {
                uint64_t len = sortd_segment_length(s, i);

                m += k < len ? k : len;
        }
        return m;
}
