/* See rows.h. It reports through fail.c and calls nothing else of sortctl's but args.c. */
#include "rows.h"
#include "fail.h"
#include "sortctl.h"

int sc_rows_value(sc_args *a, sc_rows *r)
{
        const char *v = sc_args_value(a, "rows");

        if (!v)
                return -1;
        if (sc_args_parse_count(v, &r->len) < 0 || r->len == 0)
                return sc_fail(SC_FAIL, "--rows %s: give the length of a row, at least 1", v), -1;
        return 1;
}

int sc_rows_of(const sc_input *in, sc_rows *r)
{
        uint64_t len = in->ndim == 2 ? in->shape[1] : r->len;

        r->on = in->ndim == 2 || r->len;
        if (!r->on)
                return SC_OK;
        if (in->ndim == 2 && r->len && r->len != len)
                return sc_fail(SC_FAIL,
                               "--rows %llu: %s is a 2-d array of rows of %llu: give --rows %llu "
                               "or none",
                               (unsigned long long)r->len, in->path, (unsigned long long)len,
                               (unsigned long long)len);
        if (in->ndim != 2 && in->n % len)
                return sc_fail(SC_FAIL,
                               "%s has %llu keys, not a whole number of rows of --rows %llu",
                               in->path, (unsigned long long)in->n, (unsigned long long)len);
        r->seg = (sortd_segments){
                .count = in->ndim == 2 ? in->shape[0] : in->n / len,
                .row_len = len,
        };
        return SC_OK;
}

void sc_rows_shape(const sc_rows *r, uint64_t width, sc_output *o)
{
        if (!r->on)
                return;
        o->ndim = 2;
        o->shape[0] = r->seg.count;
        o->shape[1] = width;
}
