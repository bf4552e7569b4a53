/*
 * What every call of libsortd shares, whether its data crosses the socket (client.c) or lies in
 * a region (region.c): the checks a call starts with, the checks and the fields of every sort,
 * and the round trip of a request whose reply carries no payload. Below both of them, on
 * transport.c; it calls neither.
 */
#include <stddef.h>

#include "call.h"
#include "device.h"
#include "sortd.h"
#include "transport.h"
#include "wire.h"

sortd_status sortd__call_reply_status(sortd_conn *c, const Sortd__Wire__Reply *r)
{
        sortd_status s = sortd__wire_status_from(r->status);

        if (s != SORTD_OK)
                sortd__transport_fail(c, s, "%s", *r->error ? r->error : sortd_strerror(s));
        return s == SORTD_E_PROTOCOL ? sortd__transport_breaks(c, s) : s;
}

sortd_status sortd__call_request(sortd_conn *c, Sortd__Wire__Request *req, int pass_fd,
                                 Sortd__Wire__Reply__BodyCase want, Sortd__Wire__Reply **out)
{
        return sortd__call_request_payload(c, req, pass_fd, NULL, 0, want, out);
}

sortd_status sortd__call_request_payload(sortd_conn *c, Sortd__Wire__Request *req, int pass_fd,
                                         const sortd__transport_piece *pieces, int count,
                                         Sortd__Wire__Reply__BodyCase want,
                                         Sortd__Wire__Reply **out)
{
        uint64_t plen;
        sortd_status s;

        if (sortd__transport_broken(c))
                return c->broken_status;
        if (c->outstanding)
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "%llu submitted sorts not yet received",
                                             (unsigned long long)c->outstanding);
        sortd__transport_start_call(c);
        req->id = ++c->next_id;
        s = sortd__transport_send_request(c, req, pass_fd, pieces, count);
        if (s == SORTD_OK)
                s = sortd__transport_recv_reply(c, req->id, out, &plen);
        if (s != SORTD_OK)
                return s;
        if (plen) {
                sortd__wire__reply__free_unpacked(*out, NULL);
                return sortd__transport_breaks(
                        c, sortd__transport_fail(c, SORTD_E_PROTOCOL,
                                                 "unexpected payload in a reply"));
        }
        s = sortd__call_reply_status(c, *out);
        if (s == SORTD_OK && (*out)->body_case != want)
                s = sortd__transport_breaks(
                        c, sortd__transport_fail(c, SORTD_E_PROTOCOL, "reply of the wrong kind"));
        if (s != SORTD_OK) {
                sortd__wire__reply__free_unpacked(*out, NULL);
                *out = NULL;
        }
        return s;
}

void sortd__call_sort_msg(Sortd__Wire__Sort *sort, sortd_key_type t, sortd_payload p,
                          const sortd_sort_options *o,
                          const uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES], size_t n)
{
        sort->key_type = sortd__wire_key_type(t);
        sort->payload = sortd__wire_payload(p);
        sort->order = (Sortd__Wire__Order)o->order;
        sort->begin_bit = o->begin_bit;
        sort->end_bit = o->end_bit;
        sort->n = n;
        if (sortd__device_hinted(device_uuid))
                sort->device_uuid = (ProtobufCBinaryData){.len = SORTD_DEVICE_UUID_BYTES,
                                                          .data = (uint8_t *)device_uuid};
}

void sortd__call_timings(const Sortd__Wire__SortReply *r, sortd_timings *t)
{
        if (r->timings)
                *t = (sortd_timings){
                        .queued_ns = r->timings->queued_ns,
                        .transfer_ns = r->timings->transfer_ns,
                        .sort_ns = r->timings->sort_ns,
                };
}

sortd_status sortd__call_check_sort(sortd_conn *c, sortd_key_type t, sortd_payload p,
                                    const sortd_sort_options *o,
                                    const uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES], size_t n,
                                    sortd__wire_sizes *sizes)
{
        sortd_sort_desc d = {t, p, o->order, o->begin_bit, o->end_bit};
        char why[128];

        if (sortd_sort_desc_check(&d, n, why, sizeof(why)) != SORTD_OK)
                return sortd__transport_fail(c, SORTD_E_INVAL, "%s", why);
        if (sortd__wire_sizes_of(&d, n, sizes) != SORTD_OK)
                return sortd__transport_fail(c, SORTD_E_INVAL, "n = %zu is too large", n);
        if (n > c->info.capacity)
                return sortd__transport_fail(c, SORTD_E_CAPACITY,
                                             "n = %zu above the daemon's capacity %llu", n,
                                             (unsigned long long)c->info.capacity);
        return sortd__device_check_hint(c, device_uuid);
}

sortd_status sortd__call_begin(sortd_conn *c, const void *arg, const char *what)
{
        if (!c)
                return SORTD_E_INVAL;
        if (!arg)
                return sortd__transport_fail(c, SORTD_E_INVAL, "%s must not be NULL", what);
        if (sortd__transport_broken(c))
                return c->broken_status;
        sortd__transport_start_call(c);
        return SORTD_OK;
}
