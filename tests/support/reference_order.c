/*
 * The key order of sortd_types.h, one key at a time. Full-width orders compare the keys
 * themselves: integers by value, floats by IEEE 754 totalOrder (sign first, then the magnitude
 * bits, reversed for negatives). Only a partial bit range goes through the order-preserving
 * unsigned image, since that is where the contract defines the range.
 */
#include <string.h>

#include "reference_order.h"

typedef unsigned __int128 u128;

/* The widths and kinds again, on purpose: nothing here comes from kernels/. */
static const struct {
        unsigned bytes;
        enum ref_mode mode;
} types[SORTD_KEY_TYPE_COUNT] = {
        [SORTD_KEY_U8] = {1, REF_UNSIGNED},    [SORTD_KEY_I8] = {1, REF_SIGNED},
        [SORTD_KEY_U16] = {2, REF_UNSIGNED},   [SORTD_KEY_I16] = {2, REF_SIGNED},
        [SORTD_KEY_U32] = {4, REF_UNSIGNED},   [SORTD_KEY_I32] = {4, REF_SIGNED},
        [SORTD_KEY_F32] = {4, REF_FLOAT},      [SORTD_KEY_U64] = {8, REF_UNSIGNED},
        [SORTD_KEY_I64] = {8, REF_SIGNED},     [SORTD_KEY_F64] = {8, REF_FLOAT},
        [SORTD_KEY_F16] = {2, REF_FLOAT},      [SORTD_KEY_BF16] = {2, REF_FLOAT},
        [SORTD_KEY_U128] = {16, REF_UNSIGNED}, [SORTD_KEY_I128] = {16, REF_SIGNED},
};

static const unsigned payload_bytes[SORTD_PAYLOAD_COUNT] = {
        [SORTD_PAYLOAD_NONE] = 0,      [SORTD_PAYLOAD_VALUES32] = 4,  [SORTD_PAYLOAD_VALUES64] = 8,
        [SORTD_PAYLOAD_ARGSORT32] = 4, [SORTD_PAYLOAD_ARGSORT64] = 8,
};

int ref__order_make(sortd_key_type t, sortd_order order, unsigned begin_bit, unsigned end_bit,
                    struct ref_order *o)
{
        unsigned bits, end;

        if ((unsigned)t >= SORTD_KEY_TYPE_COUNT || (unsigned)order >= SORTD_ORDER_COUNT)
                return -1;
        bits = types[t].bytes * 8;
        end = end_bit ? end_bit : bits;
        if (end > bits || begin_bit >= end)
                return -1;
        *o = (struct ref_order){
                .bits = bits,
                .mode = types[t].mode,
                .descending = order == SORTD_DESCENDING,
                .ranged = begin_bit != 0 || end != bits,
                .begin = begin_bit,
                .end = end,
        };
        return 0;
}

int ref__payload_bytes(sortd_payload p)
{
        return (unsigned)p < SORTD_PAYLOAD_COUNT ? (int)payload_bytes[p] : -1;
}

uint64_t ref__load(const void *base, size_t i, unsigned bytes)
{
        const unsigned char *p = (const unsigned char *)base + i * bytes;
        uint8_t b;
        uint16_t h;
        uint32_t w;
        uint64_t d;

        switch (bytes) {
        case 1:
                memcpy(&b, p, 1);
                return b;
        case 2:
                memcpy(&h, p, 2);
                return h;
        case 4:
                memcpy(&w, p, 4);
                return w;
        default:
                memcpy(&d, p, 8);
                return d;
        }
}

void ref__store(void *base, size_t i, unsigned bytes, uint64_t v)
{
        unsigned char *p = (unsigned char *)base + i * bytes;
        uint8_t b = (uint8_t)v;
        uint16_t h = (uint16_t)v;
        uint32_t w = (uint32_t)v;

        switch (bytes) {
        case 1:
                memcpy(p, &b, 1);
                break;
        case 2:
                memcpy(p, &h, 2);
                break;
        case 4:
                memcpy(p, &w, 4);
                break;
        default:
                memcpy(p, &v, 8);
                break;
        }
}

/* The bits [begin, end) of the order-preserving unsigned image of the key x (<= 64 bits). */
static uint64_t masked_image(const struct ref_order *o, uint64_t x)
{
        uint64_t all = o->bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << o->bits) - 1;
        uint64_t sign = (uint64_t)1 << (o->bits - 1);
        unsigned width = o->end - o->begin;
        uint64_t img;

        if (o->mode == REF_SIGNED)
                img = x ^ sign;
        else if (o->mode == REF_FLOAT)
                img = x & sign ? ~x & all : x ^ sign;
        else
                img = x;
        img >>= o->begin;
        return width == 64 ? img : img & (((uint64_t)1 << width) - 1);
}

uint64_t ref__rec_key(const struct ref_order *o, uint64_t x)
{
        uint64_t sign = (uint64_t)1 << (o->bits - 1);

        if (o->ranged)
                return masked_image(o, x);
        if (o->mode == REF_SIGNED && (x & sign))
                return x | ~(sign - 1); /* sign-extend */
        return x;
}

/* A 128-bit key: 16 bytes, the low 8 first. */
static u128 load128(const void *keys, size_t i)
{
        uint64_t w[2];

        memcpy(w, (const unsigned char *)keys + 16 * i, 16);
        return (u128)w[1] << 64 | w[0];
}

/* 128-bit keys: by value (signed or not), or by bits [begin, end) of the image (i128's sign
   bit 127 flipped). Ascending; the caller turns it for descending. */
static int compare128(const struct ref_order *o, u128 a, u128 b)
{
        if (o->ranged) {
                unsigned width = o->end - o->begin;
                u128 flip = o->mode == REF_SIGNED ? (u128)1 << 127 : 0;
                u128 mask = width == 128 ? ~(u128)0 : ((u128)1 << width) - 1;

                a = ((a ^ flip) >> o->begin) & mask;
                b = ((b ^ flip) >> o->begin) & mask;
        } else if (o->mode == REF_SIGNED) {
                return ((__int128)a > (__int128)b) - ((__int128)a < (__int128)b);
        }
        return (a > b) - (a < b);
}

int ref__compare(const struct ref_order *o, const void *keys, size_t i, size_t j)
{
        enum ref_mode mode = o->ranged ? REF_UNSIGNED : o->mode;
        uint64_t a, b;

        if (o->bits == 128) {
                int c = compare128(o, load128(keys, i), load128(keys, j));

                return o->descending ? -c : c;
        }
        a = ref__rec_key(o, ref__load(keys, i, o->bits / 8));
        b = ref__rec_key(o, ref__load(keys, j, o->bits / 8));
        if (ref__less(a, b, mode, o->descending, o->bits))
                return -1;
        return ref__less(b, a, mode, o->descending, o->bits) ? 1 : 0;
}
