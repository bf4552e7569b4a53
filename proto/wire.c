/* The frame header codec and the shared Sort checks (see wire.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire.h"

/*
 * The conversions below are casts (wire = engine + 1 for key types and payloads, the same
 * numbers for orders and status codes): each pair is checked here, so a renumbered or added
 * value on one side fails the build instead of mislabelling a sort.
 */
#define SAME_PLUS_ONE(wire, engine) _Static_assert((int)(wire) == (int)(engine) + 1, #wire)
#define SAME(wire, engine) _Static_assert((int)(wire) == (int)(engine), #wire)

SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_U8, SORTD_KEY_U8);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_I8, SORTD_KEY_I8);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_U16, SORTD_KEY_U16);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_I16, SORTD_KEY_I16);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_U32, SORTD_KEY_U32);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_I32, SORTD_KEY_I32);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_F32, SORTD_KEY_F32);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_U64, SORTD_KEY_U64);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_I64, SORTD_KEY_I64);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_F64, SORTD_KEY_F64);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_F16, SORTD_KEY_F16);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_BF16, SORTD_KEY_BF16);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_U128, SORTD_KEY_U128);
SAME_PLUS_ONE(SORTD__WIRE__KEY_TYPE__KEY_I128, SORTD_KEY_I128);
/* sortd__wire_sort_check takes 1..COUNT as the wire's range. */
SAME(SORTD__WIRE__KEY_TYPE__KEY_I128, SORTD_KEY_TYPE_COUNT);

SAME_PLUS_ONE(SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, SORTD_PAYLOAD_NONE);
SAME_PLUS_ONE(SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES32, SORTD_PAYLOAD_VALUES32);
SAME_PLUS_ONE(SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES64, SORTD_PAYLOAD_VALUES64);
SAME_PLUS_ONE(SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT32, SORTD_PAYLOAD_ARGSORT32);
SAME_PLUS_ONE(SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT64, SORTD_PAYLOAD_ARGSORT64);
SAME(SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT64, SORTD_PAYLOAD_COUNT);

SAME(SORTD__WIRE__ORDER__ASCENDING, SORTD_ASCENDING);
SAME(SORTD__WIRE__ORDER__DESCENDING, SORTD_DESCENDING);
SAME(SORTD__WIRE__ORDER__DESCENDING + 1, SORTD_ORDER_COUNT);

SAME(SORTD__WIRE__STATUS_CODE__OK, SORTD_OK);
SAME(SORTD__WIRE__STATUS_CODE__E_INVAL, SORTD_E_INVAL);
SAME(SORTD__WIRE__STATUS_CODE__E_CAPACITY, SORTD_E_CAPACITY);
SAME(SORTD__WIRE__STATUS_CODE__E_NOMEM, SORTD_E_NOMEM);
SAME(SORTD__WIRE__STATUS_CODE__E_NODEV, SORTD_E_NODEV);
SAME(SORTD__WIRE__STATUS_CODE__E_DEVICE, SORTD_E_DEVICE);
SAME(SORTD__WIRE__STATUS_CODE__E_SYSTEM, SORTD_E_SYSTEM);
SAME(SORTD__WIRE__STATUS_CODE__E_UNSUPPORTED, SORTD_E_UNSUPPORTED);
SAME(SORTD__WIRE__STATUS_CODE__E_PROTOCOL, SORTD_E_PROTOCOL);
SAME(SORTD__WIRE__STATUS_CODE__E_IO, SORTD_E_IO);
SAME(SORTD__WIRE__STATUS_CODE__E_TIMEOUT, SORTD_E_TIMEOUT);
SAME(SORTD__WIRE__STATUS_CODE__E_BUSY, SORTD_E_BUSY);
SAME(SORTD__WIRE__STATUS_CODE__E_SELFCHECK, SORTD_E_SELFCHECK);
/* sortd__wire_status_from takes 0..E_DENIED as the known codes: a new code goes after it
   on both sides, and moves this line. */
SAME(SORTD__WIRE__STATUS_CODE__E_DENIED, SORTD_E_DENIED);

#undef SAME_PLUS_ONE
#undef SAME

static void put16(uint8_t *p, uint16_t v)
{
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
        put16(p, (uint16_t)v);
        put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
        put32(p, (uint32_t)v);
        put32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t get16(const uint8_t *p)
{
        return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
        return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const uint8_t *p)
{
        return get32(p) | (uint64_t)get32(p + 4) << 32;
}

void sortd__wire_header_pack(const sortd__wire_header *h, uint8_t out[SORTD__WIRE_HEADER_SIZE])
{
        put32(out, h->magic);
        put16(out + 4, h->version);
        put16(out + 6, h->flags);
        put32(out + 8, h->message_len);
        put64(out + 12, h->payload_len);
}

void sortd__wire_header_unpack(const uint8_t in[SORTD__WIRE_HEADER_SIZE], sortd__wire_header *h)
{
        *h = (sortd__wire_header){
                .magic = get32(in),
                .version = get16(in + 4),
                .flags = get16(in + 6),
                .message_len = get32(in + 8),
                .payload_len = get64(in + 12),
        };
}

sortd_status sortd__wire_header_check(const sortd__wire_header *h, uint32_t max_message, char *why,
                                      size_t why_len)
{
        if (h->magic != SORTD__WIRE_MAGIC) {
                snprintf(why, why_len, "bad frame magic 0x%08x (expected 0x%08x)", h->magic,
                         SORTD__WIRE_MAGIC);
                return SORTD_E_PROTOCOL;
        }
        if (h->version != SORTD__WIRE_VERSION) {
                snprintf(why, why_len, "protocol version %u not supported (this side speaks %u)",
                         h->version, SORTD__WIRE_VERSION);
                return SORTD_E_PROTOCOL;
        }
        if (h->flags != 0) {
                snprintf(why, why_len, "unknown frame flags 0x%04x", h->flags);
                return SORTD_E_PROTOCOL;
        }
        if (h->message_len == 0 || h->message_len > max_message) {
                snprintf(why, why_len, "message length %u outside [1, %u]", h->message_len,
                         max_message);
                return SORTD_E_PROTOCOL;
        }
        return SORTD_OK;
}

sortd_status sortd__wire_sizes_of(const sortd_sort_desc *desc, uint64_t n, sortd__wire_sizes *sizes)
{
        uint64_t ks = sortd_key_size(desc->key_type), vs = sortd_payload_size(desc->payload);
        bool argsort = sortd_payload_is_argsort(desc->payload);

        if (ks == 0)
                return SORTD_E_INVAL;
        /* 16 bytes a key at most: below this bound no size can overflow. */
        if (n > UINT64_MAX / 32)
                return SORTD_E_INVAL;
        *sizes = (sortd__wire_sizes){
                .keys_bytes = n * ks,
                .vals_bytes = n * vs,
                .request_len = n * ks + (argsort ? 0 : n * vs),
                .reply_len = n * (ks + vs),
        };
        return SORTD_OK;
}

sortd_status sortd__wire_sort_check(const Sortd__Wire__Sort *s, sortd_sort_desc *desc,
                                    sortd__wire_sizes *sizes, char *why, size_t why_len)
{
        sortd_sort_desc d;
        sortd_status st;

        /* The wire's enums are the engine's plus one (0 = unset): their ranges are the wire's
           to check; the rest is sortd_sort_desc_check's. */
        if ((int)s->key_type <= 0 || (int)s->key_type > (int)SORTD_KEY_TYPE_COUNT) {
                snprintf(why, why_len, "unknown key type %d", (int)s->key_type);
                return SORTD_E_INVAL;
        }
        if ((int)s->payload <= 0 || (int)s->payload > (int)SORTD_PAYLOAD_COUNT) {
                snprintf(why, why_len, "unknown payload kind %d", (int)s->payload);
                return SORTD_E_INVAL;
        }
        if ((int)s->order < 0 || (int)s->order >= (int)SORTD_ORDER_COUNT) {
                snprintf(why, why_len, "unknown order %d", (int)s->order);
                return SORTD_E_INVAL;
        }
        d = (sortd_sort_desc){
                .key_type = (sortd_key_type)(s->key_type - 1),
                .payload = (sortd_payload)(s->payload - 1),
                .order = (sortd_order)s->order,
                .begin_bit = s->begin_bit,
                .end_bit = s->end_bit,
        };
        st = sortd_sort_desc_check(&d, s->n, why, why_len);
        if (st != SORTD_OK)
                return st;
        if (s->data_case != SORTD__WIRE__SORT__DATA_INLINE_DATA &&
            s->data_case != SORTD__WIRE__SORT__DATA_REGION) {
                snprintf(why, why_len, "sort request names no data location");
                return SORTD_E_INVAL;
        }
        if (sortd__wire_sizes_of(&d, s->n, sizes) != SORTD_OK) {
                snprintf(why, why_len, "n = %llu is too large", (unsigned long long)s->n);
                return SORTD_E_INVAL;
        }
        *desc = d;
        return SORTD_OK;
}

Sortd__Wire__KeyType sortd__wire_key_type(sortd_key_type t)
{
        return (Sortd__Wire__KeyType)(t + 1);
}

Sortd__Wire__Payload sortd__wire_payload(sortd_payload p)
{
        return (Sortd__Wire__Payload)(p + 1);
}

Sortd__Wire__StatusCode sortd__wire_status(sortd_status s)
{
        return (Sortd__Wire__StatusCode)s;
}

sortd_status sortd__wire_status_from(Sortd__Wire__StatusCode c)
{
        return (int)c >= 0 && (int)c <= (int)SORTD_E_DENIED ? (sortd_status)c : SORTD_E_PROTOCOL;
}

void sortd__wire_default_socket(char *out, size_t len)
{
        const char *env = getenv("SORTD_SOCKET"), *xdg = getenv("XDG_RUNTIME_DIR");

        if (env && *env)
                snprintf(out, len, "%s", env);
        else if (geteuid() == 0 || !xdg || !*xdg)
                snprintf(out, len, "/run/sortd/sortd.sock");
        else
                snprintf(out, len, "%s/sortd.sock", xdg);
}
