/* Keys of several columns (sortd_types.h): their one check and their layout in one buffer. */
#include "invalid.h"

/* A column's n keys fit, rounded up, whatever the other seven hold. */
#define COLUMN_N_MAX ((UINT64_MAX / SORTD_MAX_COLUMNS - 15) / 16)

uint64_t sortd_columns_offset(const sortd_column *c, unsigned count, uint64_t n, unsigned j)
{
        uint64_t at = 0;

        for (unsigned i = 0; i < j && i < count; i++)
                at = (at + n * sortd_key_size(c[i].key_type) + 15) & ~(uint64_t)15;
        return at;
}

sortd_status sortd_columns_check(const sortd_column *c, unsigned count, sortd_payload payload,
                                 uint64_t n, char *why, size_t why_len)
{
        char sub[160];

        if (!c)
                return sortd__invalid(why, why_len, "NULL columns");
        if (count == 0 || count > SORTD_MAX_COLUMNS)
                return sortd__invalid(why, why_len, "%u key columns; 1 to %d are allowed", count,
                                      SORTD_MAX_COLUMNS);
        if (n > COLUMN_N_MAX)
                return sortd__invalid(why, why_len, "n = %llu rows is too many to lay out",
                                      (unsigned long long)n);
        for (unsigned i = 0; i < count; i++) {
                sortd_sort_desc d = {c[i].key_type, payload, c[i].order, c[i].begin_bit,
                                     c[i].end_bit};

                if (sortd_sort_desc_check(&d, n, sub, sizeof sub) != SORTD_OK)
                        return sortd__invalid(why, why_len, "column %u: %s", i, sub);
        }
        return SORTD_OK;
}
