/*
 * The reference's key order of one key type (one column), shared by its sorts of keys
 * (reference.c) and of columns (reference_columns.c); internal to the oracle. Written from
 * sortd_types.h alone, like the rest of the reference: nothing here comes from kernels/.
 */
#ifndef SORTD_TESTS_REFERENCE_ORDER_H
#define SORTD_TESTS_REFERENCE_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sortd_types.h"

enum ref_mode {
        REF_UNSIGNED, /* by value, or by a masked image */
        REF_SIGNED,   /* by value, two's complement */
        REF_FLOAT,    /* the bit pattern in IEEE 754 totalOrder */
};

struct ref_order {
        unsigned bits; /* key width: 8 to 128 */
        enum ref_mode mode;
        bool descending;
        bool ranged; /* a bit range narrower than the key */
        unsigned begin, end;
};

/* The order of keys of type t; -1 for an unknown type or order or a bit range outside the key. */
int ref__order_make(sortd_key_type t, sortd_order order, unsigned begin_bit, unsigned end_bit,
                    struct ref_order *o);
/* A payload element's bytes (0 for none); -1 for an unknown payload. */
int ref__payload_bytes(sortd_payload p);

/* Element i of an array of 1, 2, 4 or 8-byte elements, zero-extended; and its store. */
uint64_t ref__load(const void *base, size_t i, unsigned bytes);
void ref__store(void *base, size_t i, unsigned bytes, uint64_t v);

/*
 * What ref__less compares for a key x of at most 64 bits: its masked order-preserving image
 * when ranged (compare it as REF_UNSIGNED then), the value sign-extended to 64 bits when
 * signed, else x.
 */
uint64_t ref__rec_key(const struct ref_order *o, uint64_t x);

/* IEEE 754 totalOrder of two bit patterns of `bits` bits: a < b. */
static inline bool ref__total_order_less(uint64_t a, uint64_t b, unsigned bits)
{
        uint64_t sign = (uint64_t)1 << (bits - 1);
        bool na = a & sign, nb = b & sign;

        if (na != nb)
                return na;
        return na ? (a & ~sign) > (b & ~sign) : (a & ~sign) < (b & ~sign);
}

/* Strict "a sorts before b" of two ref__rec_key results; inlined where mode is a constant. */
static inline __attribute__((always_inline)) bool
ref__less(uint64_t a, uint64_t b, enum ref_mode mode, bool descending, unsigned bits)
{
        if (descending) {
                uint64_t t = a;
                a = b;
                b = t;
        }
        switch (mode) {
        case REF_SIGNED:
                return (int64_t)a < (int64_t)b;
        case REF_FLOAT:
                return ref__total_order_less(a, b, bits);
        default:
                return a < b;
        }
}

/*
 * Compares keys[i] and keys[j] of any width (128-bit ones too) in o's order: negative when
 * keys[i] comes first, 0 when they tie, positive otherwise.
 */
int ref__compare(const struct ref_order *o, const void *keys, size_t i, size_t j);

#endif
