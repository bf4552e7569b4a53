/* The one check of a sort descriptor (sortd_types.h): client, daemon and engine all call it. */
#include "invalid.h"

sortd_status sortd_sort_desc_check(const sortd_sort_desc *d, uint64_t n, char *why, size_t why_len)
{
        unsigned width, end;

        if (!d)
                return sortd__invalid(why, why_len, "NULL desc");
        if ((unsigned)d->key_type >= SORTD_KEY_TYPE_COUNT)
                return sortd__invalid(why, why_len, "unknown key type %d", (int)d->key_type);
        if ((unsigned)d->payload >= SORTD_PAYLOAD_COUNT)
                return sortd__invalid(why, why_len, "unknown payload %d", (int)d->payload);
        if ((unsigned)d->order >= SORTD_ORDER_COUNT)
                return sortd__invalid(why, why_len, "unknown order %d", (int)d->order);
        width = (unsigned)sortd_key_size(d->key_type) * 8;
        end = d->end_bit ? d->end_bit : width;
        if (end > width || d->begin_bit >= end)
                return sortd__invalid(why, why_len, "bad bit range [%u, %u) for a %u-bit key",
                                      d->begin_bit, d->end_bit, width);
        if (d->payload == SORTD_PAYLOAD_ARGSORT32 && n > (uint64_t)UINT32_MAX + 1)
                return sortd__invalid(why, why_len, "n = %llu too large for u32 argsort indices",
                                      (unsigned long long)n);
        return SORTD_OK;
}
