/*
 * The order-preserving map from a key's bits to an unsigned integer, shared
 * by every engine (plain C, usable from CUDA as host/device code).
 *
 * forward(x) = x ^ sign_xor ^ (float_xor & -(top bit of x)) ^ order_xor
 *   unsigned: nothing; signed: flip the sign bit; float: flip the sign bit
 *   of positives and every bit of negatives (IEEE totalOrder); descending:
 *   then flip every bit, which reverses the order and keeps ties stable.
 * All masks are zero for an identity map, so a pass between the first and the
 * last runs the same code with no branch.
 */
#ifndef SORTD_KEYS_H
#define SORTD_KEYS_H

#include <stdint.h>

#include "engine_impl.h"

#ifdef __CUDACC__
#define SORTD_HD __host__ __device__ __forceinline__
#else
#define SORTD_HD static inline __attribute__((always_inline))
#endif

typedef struct sortd__twiddle {
        uint64_t sign_xor;  /* the sign bit for signed and float keys */
        uint64_t float_xor; /* every bit but the sign, for float keys */
        uint64_t order_xor; /* every bit of the key, for descending */
        unsigned top;       /* index of the key's top bit */
} sortd__twiddle;

SORTD_HD sortd__twiddle sortd__twiddle_make(unsigned key_bytes, int kind, int descending)
{
        unsigned bits = key_bytes * 8;
        uint64_t all = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
        uint64_t sign = (uint64_t)1 << (bits - 1);
        sortd__twiddle t;

        t.sign_xor = kind == SORTD__KEY_UNSIGNED ? 0 : sign;
        t.float_xor = kind == SORTD__KEY_FLOAT ? all ^ sign : 0;
        t.order_xor = descending ? all : 0;
        t.top = bits - 1;
        return t;
}

SORTD_HD sortd__twiddle sortd__twiddle_identity(void)
{
        sortd__twiddle t = {0, 0, 0, 0};
        return t;
}

SORTD_HD int sortd__twiddle_is_identity(sortd__twiddle t)
{
        return !(t.sign_xor | t.float_xor | t.order_xor);
}

SORTD_HD uint64_t sortd__twiddle_forward(sortd__twiddle t, uint64_t x)
{
        return x ^ t.sign_xor ^ (t.float_xor & (0 - (x >> t.top))) ^ t.order_xor;
}

SORTD_HD uint64_t sortd__twiddle_inverse(sortd__twiddle t, uint64_t y)
{
        uint64_t z = y ^ t.order_xor;

        return z ^ t.sign_xor ^ (t.float_xor & ((z >> t.top) - 1));
}

#endif
