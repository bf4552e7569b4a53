/*
 * A Sort by key columns (see request.h): what the message alone can tell. The columns travel
 * as one buffer (sortd_columns_offset): an inline sort's payload is that buffer, then the
 * values unless an argsort makes them; a region sort's buffer lies in its keys region.
 */
#include "job.h"
#include "request.h"

sortd_status sortd__request_columns_check(const Sortd__Wire__Sort *s, sortd__request *rq, char *why,
                                          size_t why_len)
{
        bool region = s->data_case == SORTD__WIRE__SORT__DATA_REGION;
        sortd_payload p;
        sortd__job_parts parts;
        sortd_status st;

        st = sortd__wire_columns_check(s, &rq->cols, &p, &rq->sizes, why, why_len);
        if (st != SORTD_OK)
                return st;
        rq->desc = (sortd_sort_desc){.key_type = rq->cols.col[0].key_type, .payload = p};
        /* the buffer holds the columns, and the values or the indices an argsort writes */
        parts = (sortd__job_parts){.keys = rq->sizes.keys_bytes, .vals = rq->sizes.vals_bytes};
        rq->seg = (sortd__request_segments){
                .buffer_bytes = region ? 0 : sortd__job_parts_bytes(&parts),
                .payload_bytes = region ? 0 : rq->sizes.request_len,
        };
        return SORTD_OK;
}
