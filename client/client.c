/*
 * libsortd's public calls: Hello, connect and close, Ping, Status, and the sorts (submit,
 * receive, and the blocking sort, sort_pairs and argsort over them). Each builds a Request,
 * checks what the daemon would refuse before a byte is sent, and reads the Reply it gets back
 * from transport.c, which owns the socket and the frames; this file never touches the fd.
 * What the calls on regions (region.c) share with these is call.c's, below both.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/un.h>

#include "call.h"
#include "buffers.h"
#include "columns.h"
#include "device.h"
#include "region.h"
#include "segmented.h"
#include "sortd.h"
#include "transport.h"
#include "wire.h"

#define DEFAULT_TIMEOUT_MS 60000

static void copy_str(char *dst, size_t len, const char *src)
{
        snprintf(dst, len, "%s", src ? src : "");
}

sortd_status sortd_hello(sortd_conn *c, sortd_info *info)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Hello hello = SORTD__WIRE__HELLO__INIT;
        Sortd__Wire__Reply *r;
        Sortd__Wire__HelloReply *h;
        sortd_status s;

        if (!c)
                return SORTD_E_INVAL;
        hello.protocol_version = SORTD__WIRE_VERSION;
        hello.client_name = c->name;
        req.body_case = SORTD__WIRE__REQUEST__BODY_HELLO;
        req.hello = &hello;
        s = sortd__call_request(c, &req, -1, SORTD__WIRE__REPLY__BODY_HELLO, &r);
        if (s != SORTD_OK)
                return s;
        h = r->hello;
        c->info = (sortd_info){
                .protocol_version = h->protocol_version,
                .capacity = h->capacity,
        };
        copy_str(c->info.server_version, sizeof(c->info.server_version), h->server_version);
        copy_str(c->info.engine, sizeof(c->info.engine), h->engine);
        copy_str(c->info.device, sizeof(c->info.device), h->device);
        if (h->limits) {
                c->info.max_message_bytes = h->limits->max_message_bytes;
                c->info.max_request_bytes = h->limits->max_request_bytes;
                c->info.max_inflight_bytes = h->limits->max_inflight_bytes;
                c->info.max_connections = h->limits->max_connections;
                c->info.max_regions = h->limits->max_regions;
                c->info.max_region_bytes = h->limits->max_region_bytes;
        }
        sortd__device_rows(h->devices, h->n_devices, &c->info.device_count, c->info.devices);
        sortd__wire__reply__free_unpacked(r, NULL);
        if (info)
                *info = c->info;
        return SORTD_OK;
}

void sortd_get_info(const sortd_conn *c, sortd_info *info)
{
        if (c && info)
                *info = c->info;
}

sortd_status sortd_connect(const char *path, const sortd_connect_options *opts, sortd_conn **out,
                           char *errbuf, size_t errbuf_len)
{
        char def[sizeof(((struct sockaddr_un *)0)->sun_path) + 64];
        sortd_conn *c;
        sortd_status s;

        if (!out) {
                if (errbuf_len)
                        snprintf(errbuf, errbuf_len, "out must not be NULL");
                return SORTD_E_INVAL;
        }
        c = calloc(1, sizeof(*c));
        if (c)
                c->msg = malloc(SORTD__WIRE_MAX_MESSAGE);
        if (!c || !c->msg) {
                if (c)
                        free(c->msg);
                free(c);
                if (errbuf_len)
                        snprintf(errbuf, errbuf_len, "out of memory");
                return SORTD_E_NOMEM;
        }
        c->fd = -1;
        sortd_set_timeout(c, opts ? opts->timeout_ms : 0);
        snprintf(c->name, sizeof(c->name), "%s",
                 opts && opts->client_name ? opts->client_name : "libsortd");
        if (!path) {
                sortd__wire_default_socket(def, sizeof(def));
                path = def;
        }
        sortd__transport_start_call(c);
        s = sortd__transport_connect(c, path);
        if (s == SORTD_OK)
                s = sortd_hello(c, NULL);
        if (s != SORTD_OK) {
                if (errbuf_len)
                        snprintf(errbuf, errbuf_len, "%s", c->err);
                sortd_close(c);
                return s;
        }
        *out = c;
        return SORTD_OK;
}

void sortd_close(sortd_conn *c)
{
        if (!c)
                return;
        sortd__region_orphan_all(c);
        sortd__transport_disconnect(c);
        free(c->msg);
        free(c);
}

void sortd_interrupt(sortd_conn *c)
{
        if (c)
                sortd__transport_interrupt(c);
}

const char *sortd_error_message(const sortd_conn *c)
{
        return c ? c->err : "no connection";
}

void sortd_set_progress(sortd_conn *c, sortd_progress_fn *fn, void *user)
{
        if (!c)
                return;
        c->progress.fn = fn;
        c->progress.user = user;
        c->progress.total = 0;
}

void sortd_set_timeout(sortd_conn *c, int timeout_ms)
{
        if (c)
                c->timeout_ms = timeout_ms < 0 ? -1 : timeout_ms ? timeout_ms : DEFAULT_TIMEOUT_MS;
}

sortd_status sortd_ping(sortd_conn *c)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Ping ping = SORTD__WIRE__PING__INIT;
        Sortd__Wire__Reply *r;
        sortd_status s;

        if (!c)
                return SORTD_E_INVAL;
        ping.nonce = (uint64_t)sortd__transport_now_ms();
        req.body_case = SORTD__WIRE__REQUEST__BODY_PING;
        req.ping = &ping;
        s = sortd__call_request(c, &req, -1, SORTD__WIRE__REPLY__BODY_PING, &r);
        if (s != SORTD_OK)
                return s;
        if (r->ping->nonce != ping.nonce)
                s = sortd__transport_breaks(
                        c, sortd__transport_fail(c, SORTD_E_PROTOCOL,
                                                 "ping answered with another nonce"));
        sortd__wire__reply__free_unpacked(r, NULL);
        return s;
}

sortd_status sortd_query_status(sortd_conn *c, sortd_server_status *st)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Status status = SORTD__WIRE__STATUS__INIT;
        Sortd__Wire__Reply *r;
        Sortd__Wire__StatusReply *x;
        sortd_status s;

        if (!c || !st)
                return c ? sortd__transport_fail(c, SORTD_E_INVAL, "st must not be NULL")
                         : SORTD_E_INVAL;
        req.body_case = SORTD__WIRE__REQUEST__BODY_STATUS;
        req.status = &status;
        s = sortd__call_request(c, &req, -1, SORTD__WIRE__REPLY__BODY_STATUS_REPLY, &r);
        if (s != SORTD_OK)
                return s;
        x = r->status_reply;
        *st = (sortd_server_status){.capacity = x->capacity,
                                    .uptime_ms = x->uptime_ms,
#define COPY(name, field, wire_type, label) .name = x->name,
                                    SORTD_STATUS_COUNTERS(COPY)
#undef COPY
        };
        copy_str(st->engine, sizeof(st->engine), x->engine);
        copy_str(st->device, sizeof(st->device), x->device);
        copy_str(st->engine_reason, sizeof(st->engine_reason), x->engine_reason);
        sortd__device_rows(x->devices, x->n_devices, &st->device_count, st->devices);
        sortd__wire__reply__free_unpacked(r, NULL);
        return SORTD_OK;
}

/* ---- sorts ---- */

/* What an inline sort sends and gets back: the arrays' sizes, its segments and results, and
   where the reply's keys and values (or indices) land. */
typedef struct inline_plan {
        sortd__wire_sizes sizes; /* of the n keys and their values */
        sortd__segmented seg;
        void *keys_dst, *vals_dst;
        uint64_t keys_len, vals_len; /* the reply's */
} inline_plan;

static void plan_reply(const sortd_request *r, inline_plan *p)
{
        size_t ks = sortd_key_size(r->key_type), vs = sortd_payload_size(r->payload);

        if (r->column_count) { /* read by sortd__columns_read, column by column */
                p->keys_len = p->sizes.reply_len - p->sizes.vals_bytes;
                p->vals_len = p->sizes.vals_bytes;
                return;
        }
        if (r->k) {
                p->keys_dst = r->out_keys;
                p->vals_dst = r->out_vals;
                p->keys_len = p->seg.results * ks;
                p->vals_len = p->seg.results * vs;
                return;
        }
        p->keys_dst = r->keys;
        p->vals_dst = r->vals;
        p->keys_len = p->sizes.keys_bytes;
        p->vals_len = p->sizes.vals_bytes;
}

/* A top-k's outputs: non-NULL and aligned where results go, and apart. */
static sortd_status check_outputs(sortd_conn *c, const sortd_request *r, const inline_plan *p)
{
        size_t ks = sortd_key_size(r->key_type), vs = sortd_payload_size(r->payload);

        if (p->keys_len && (!r->out_keys || sortd__misaligned(r->out_keys, ks)))
                return sortd__transport_fail(
                        c, SORTD_E_INVAL, "out_keys must be non-NULL and aligned to %zu bytes", ks);
        if (p->vals_len && (!r->out_vals || sortd__misaligned(r->out_vals, vs)))
                return sortd__transport_fail(
                        c, SORTD_E_INVAL, "out_vals must be non-NULL and aligned to %zu bytes", vs);
        if (sortd__overlap(r->out_keys, p->keys_len, r->out_vals, p->vals_len))
                return sortd__transport_fail(c, SORTD_E_INVAL, "out_keys and out_vals overlap");
        return SORTD_OK;
}

/* The inputs: keys, and the values a sort moves or a top-k reads (an argsort's top-k has no
   input values: the indices are made). */
static sortd_status check_inputs(sortd_conn *c, const sortd_request *r)
{
        size_t ks = sortd_key_size(r->key_type), vs = sortd_payload_size(r->payload);
        bool vals = vs && !(r->k && sortd_payload_is_argsort(r->payload));

        if (r->n && (!r->keys || sortd__misaligned(r->keys, ks)))
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "keys must be non-NULL and aligned to %zu bytes", ks);
        if (r->n && vals && (!r->vals || sortd__misaligned(r->vals, vs)))
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "vals must be non-NULL and aligned to %zu bytes", vs);
        return SORTD_OK;
}

/* The bytes the daemon would hold for r, within its max-request-bytes. */
static sortd_status check_held(sortd_conn *c, const sortd_request *r, const inline_plan *p)
{
        uint64_t held = p->sizes.reply_len;

        if (r->segments || r->k)
                held = sortd__segmented_held_bytes(r->segments, r->n, r->k, r->key_type, r->payload,
                                                   1);
        return sortd__segmented_check_held(c, held, "request");
}

/* Everything the daemon would refuse, refused here before a byte is sent. */
static sortd_status validate(sortd_conn *c, const sortd_request *r, inline_plan *p)
{
        sortd_status s;

        *p = (inline_plan){0};
        if (r->column_count) {
                s = sortd__columns_check_inline(c, r, &p->sizes);
                plan_reply(r, p);
                return s;
        }
        s = sortd__call_check_sort(c, r->key_type, r->payload, &r->opts, r->device_uuid, r->n,
                                   &p->sizes);
        if (s == SORTD_OK)
                s = sortd__segmented_check(c, r->segments, r->n, r->k, &p->seg);
        if (s == SORTD_OK)
                s = check_inputs(c, r);
        if (s != SORTD_OK)
                return s;
        plan_reply(r, p);
        if (r->k && (s = check_outputs(c, r, p)) != SORTD_OK)
                return s;
        return check_held(c, r, p);
}

/* The payload of one array's sort: the keys, the values unless the sort makes them, then the
   offsets. */
static void array_pieces(const sortd_request *r, const inline_plan *p, sortd__transport_piece *out)
{
        bool argsort = sortd_payload_is_argsort(r->payload);

        out[0] = (sortd__transport_piece){r->keys, (size_t)p->sizes.keys_bytes};
        out[1] = (sortd__transport_piece){r->vals, argsort ? 0 : (size_t)p->sizes.vals_bytes};
        out[2] = (sortd__transport_piece){r->segments ? r->segments->offsets : NULL,
                                          (size_t)p->seg.offsets_bytes};
}

sortd_status sortd_submit(sortd_conn *c, sortd_request *r)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Sort sort = SORTD__WIRE__SORT__INIT;
        Sortd__Wire__InlineData inl = SORTD__WIRE__INLINE_DATA__INIT;
        Sortd__Wire__Segments seg = SORTD__WIRE__SEGMENTS__INIT;
        sortd__columns_msg cols;
        sortd__transport_piece pieces[SORTD__TRANSPORT_MAX_PIECES];
        int count = 3;
        inline_plan p;
        sortd_status s;

        s = sortd__call_begin(c, r, "request");
        if (s == SORTD_OK)
                s = validate(c, r, &p);
        if (s != SORTD_OK)
                return s;
        if (r->column_count) {
                sortd__columns_sort_msg(&sort, &cols, r->columns, r->column_count, r->payload,
                                        r->device_uuid, r->n);
                count = sortd__columns_pieces(r, pieces);
        } else {
                sortd__call_sort_msg(&sort, r->key_type, r->payload, &r->opts, r->device_uuid,
                                     r->n);
                sortd__segmented_msg(&sort, &seg, r->segments, r->k);
                array_pieces(r, &p, pieces);
        }
        sort.data_case = SORTD__WIRE__SORT__DATA_INLINE_DATA;
        sort.inline_data = &inl;
        req.id = r->id = ++c->next_id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_SORT;
        req.sort = &sort;
        s = sortd__transport_send_request(c, &req, -1, pieces, count);
        if (s == SORTD_OK)
                c->outstanding++;
        return s;
}

/* The result is read into the caller's buffers as it arrives (no second copy of a large
   array), so a connection lost on the way leaves them mixed: the caller must hear that. */
static sortd_status result_cut(sortd_conn *c, sortd_status s)
{
        char why[sizeof(c->err)];

        snprintf(why, sizeof(why), "%s", c->err);
        return sortd__transport_fail(c, s,
                                     "%.150s, while the sorted result arrived: the buffers hold "
                                     "part of it and part of the input",
                                     why);
}

/* What the reply to r carries, worked out again from r as it was submitted. */
static sortd_status replan(sortd_conn *c, const sortd_request *r, inline_plan *p)
{
        sortd_sort_desc d = {r->key_type, r->payload, r->opts.order, 0, 0};

        *p = (inline_plan){0};
        if (r->column_count) {
                if (sortd__wire_columns_sizes(r->columns, r->column_count, r->payload, r->n,
                                              &p->sizes) != SORTD_OK)
                        return sortd__transport_fail(c, SORTD_E_INVAL,
                                                     "not the request that was submitted");
                plan_reply(r, p);
                return SORTD_OK;
        }
        if (sortd__wire_sizes_of(&d, r->n, &p->sizes) != SORTD_OK ||
            sortd__segmented_check(c, r->segments, r->n, r->k, &p->seg) != SORTD_OK)
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "not the request that was submitted");
        plan_reply(r, p);
        return SORTD_OK;
}

/* The reply's header for r, checked against what it must carry; its payload follows. */
static sortd_status reply_header(sortd_conn *c, sortd_request *r, const inline_plan *p)
{
        Sortd__Wire__Reply *rep;
        uint64_t plen;
        sortd_status s;

        s = sortd__transport_recv_reply(c, r->id, &rep, &plen);
        if (s != SORTD_OK)
                return s;
        c->outstanding--;
        if (c->replies_left)
                c->replies_left--;
        s = sortd__call_reply_status(c, rep);
        if (s == SORTD_OK && (rep->body_case != SORTD__WIRE__REPLY__BODY_SORT ||
                              rep->sort->n != r->n || plen != p->keys_len + p->vals_len)) {
                s = sortd__transport_breaks(
                        c, sortd__transport_fail(c, SORTD_E_PROTOCOL,
                                                 "sort reply does not match the request"));
        } else if (s != SORTD_OK && plen) {
                s = sortd__transport_breaks(c, sortd__transport_fail(c, SORTD_E_PROTOCOL,
                                                                     "error reply with a payload"));
        }
        if (s == SORTD_OK)
                sortd__call_timings(rep->sort, &r->timings);
        sortd__wire__reply__free_unpacked(rep, NULL);
        return s;
}

/* sortd_receive within the deadline of the call in progress. */
static sortd_status receive(sortd_conn *c, sortd_request *r)
{
        inline_plan p;
        sortd_status s;

        if (!c->outstanding)
                return sortd__transport_fail(c, SORTD_E_INVAL, "no submitted request to receive");
        s = replan(c, r, &p);
        if (s == SORTD_OK)
                s = reply_header(c, r, &p);
        if (s != SORTD_OK)
                return s;
        sortd__transport_progress_begin(c, SORTD_PROGRESS_RECEIVING, 0, p.keys_len + p.vals_len);
        if (r->column_count) {
                s = sortd__columns_read(c, r);
        } else {
                s = sortd__transport_read_all(c, p.keys_dst, (size_t)p.keys_len);
                if (s == SORTD_OK && p.vals_len)
                        s = sortd__transport_read_all(c, p.vals_dst, (size_t)p.vals_len);
        }
        c->progress.total = 0;
        return s == SORTD_OK ? s : result_cut(c, s);
}

sortd_status sortd_receive(sortd_conn *c, sortd_request *r)
{
        sortd_status s;

        /* The daemon refused a request and closed, but it answered those before it first. */
        if (c && r && sortd__transport_replies_left(c)) {
                sortd__transport_start_call(c);
                return receive(c, r);
        }
        s = sortd__call_begin(c, r, "request");
        return s == SORTD_OK ? receive(c, r) : s;
}

/* A blocking sort is one call: one deadline for sending the request and reading the reply. */
sortd_status sortd_sort_request(sortd_conn *c, sortd_request *r)
{
        sortd_status s;

        if (c && c->outstanding)
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "%llu submitted sorts not yet received",
                                             (unsigned long long)c->outstanding);
        s = sortd_submit(c, r);
        return s == SORTD_OK ? receive(c, r) : s;
}

/* What NULL options mean: ascending, the key's full width. */
static sortd_sort_options options_or_default(const sortd_sort_options *opts)
{
        return opts ? *opts : (sortd_sort_options){.order = SORTD_ASCENDING};
}

/* One call for every payload: the 4-byte or the 8-byte form of it, by size (0 = none). */
static sortd_status sort_call(sortd_conn *c, void *keys, void *vals, size_t size, size_t n,
                              sortd_key_type t, const sortd_sort_options *opts, sortd_payload p4,
                              sortd_payload p8)
{
        sortd_request r = {.keys = keys, .vals = vals, .n = n, .key_type = t};

        if (size && size != 4 && size != 8)
                return c ? sortd__transport_fail(c, SORTD_E_INVAL,
                                                 "value/index size must be 4 or 8, not %zu", size)
                         : SORTD_E_INVAL;
        r.payload = size == 0 ? SORTD_PAYLOAD_NONE : size == 4 ? p4 : p8;
        r.opts = options_or_default(opts);
        return sortd_sort_request(c, &r);
}

sortd_status sortd_sort(sortd_conn *c, void *keys, size_t n, sortd_key_type t,
                        const sortd_sort_options *opts)
{
        return sort_call(c, keys, NULL, 0, n, t, opts, SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_NONE);
}

sortd_status sortd_sort_pairs(sortd_conn *c, void *keys, void *vals, size_t val_size, size_t n,
                              sortd_key_type t, const sortd_sort_options *opts)
{
        if (val_size == 0)
                return c ? sortd__transport_fail(c, SORTD_E_INVAL, "val_size must be 4 or 8")
                         : SORTD_E_INVAL;
        return sort_call(c, keys, vals, val_size, n, t, opts, SORTD_PAYLOAD_VALUES32,
                         SORTD_PAYLOAD_VALUES64);
}

sortd_status sortd_argsort(sortd_conn *c, void *keys, void *idx, size_t idx_size, size_t n,
                           sortd_key_type t, const sortd_sort_options *opts)
{
        if (idx_size == 0)
                return c ? sortd__transport_fail(c, SORTD_E_INVAL, "idx_size must be 4 or 8")
                         : SORTD_E_INVAL;
        return sort_call(c, keys, idx, idx_size, n, t, opts, SORTD_PAYLOAD_ARGSORT32,
                         SORTD_PAYLOAD_ARGSORT64);
}

sortd_status sortd_sort_segments(sortd_conn *c, void *keys, void *vals, size_t n, sortd_key_type t,
                                 sortd_payload payload, const sortd_segments *seg,
                                 const sortd_sort_options *opts)
{
        sortd_request r = {.keys = keys, .vals = vals, .n = n, .key_type = t, .payload = payload};

        if (!seg)
                return c ? sortd__transport_fail(c, SORTD_E_INVAL, "seg must not be NULL")
                         : SORTD_E_INVAL;
        r.segments = seg;
        r.opts = options_or_default(opts);
        return sortd_sort_request(c, &r);
}

sortd_status sortd_topk(sortd_conn *c, const void *keys, const void *vals, size_t n,
                        sortd_key_type t, sortd_payload payload, const sortd_segments *seg,
                        uint64_t k, void *out_keys, void *out_vals, const sortd_sort_options *opts)
{
        /* A request only reads its inputs when it has a k: they stay the caller's const. */
        sortd_request r = {.keys = (void *)keys,
                           .vals = (void *)vals,
                           .n = n,
                           .key_type = t,
                           .payload = payload,
                           .segments = seg,
                           .k = k,
                           .out_keys = out_keys,
                           .out_vals = out_vals};

        /* On the wire k = 0 asks for a whole sort, which would write the inputs. */
        if (!k)
                return c ? sortd__transport_fail(c, SORTD_E_INVAL,
                                                 "k must be at least 1 (k = 0 selects nothing)")
                         : SORTD_E_INVAL;
        r.opts = options_or_default(opts);
        return sortd_sort_request(c, &r);
}

sortd_status sortd_sort_columns(sortd_conn *c, const sortd_column *cols, unsigned count,
                                void *const *keys, void *vals, size_t n, sortd_payload payload)
{
        sortd_request r = {.vals = vals,
                           .n = n,
                           .payload = payload,
                           .columns = cols,
                           .column_count = count,
                           .column_keys = keys};

        /* column_count 0 would be a one-array sort of nothing: refused as the columns' check */
        if (c && count == 0)
                return sortd__transport_fail(c, SORTD_E_INVAL, "0 key columns; 1 to %d are allowed",
                                             SORTD_MAX_COLUMNS);
        return sortd_sort_request(c, &r);
}
