/* See fmt_half.h. */
#include <math.h>

#include "fmt_half.h"

/* The mantissa's bits; the exponent's bias follows from them, as the exponent has the rest. */
static unsigned mantissa_bits(sortd_key_type t)
{
        return t == SORTD_KEY_BF16 ? 7 : 10;
}

static int bias_of(unsigned mant)
{
        return (1 << (14 - mant)) - 1; /* 15 - mant exponent bits */
}

double half_widen(sortd_key_type t, uint16_t bits)
{
        unsigned mant = mantissa_bits(t);
        int bias = bias_of(mant), all = 2 * bias + 1;
        int e = (bits >> mant) & all;
        unsigned m = bits & ((1u << mant) - 1);
        double v;

        if (e == all)
                v = m ? NAN : INFINITY;
        else if (e)
                v = ldexp((double)(m | 1u << mant), e - bias - (int)mant);
        else
                v = ldexp((double)m, 1 - bias - (int)mant);
        return bits >> 15 ? copysign(v, -1.0) : copysign(v, 1.0);
}

uint16_t half_narrow(sortd_key_type t, double d, bool *overflow)
{
        unsigned mant = mantissa_bits(t);
        int bias = bias_of(mant), all = 2 * bias + 1, e, x;
        uint16_t sign = signbit(d) ? 0x8000 : 0, inf = (uint16_t)(sign | all << mant);
        double a = fabs(d), m;

        *overflow = false;
        if (isnan(d))
                return (uint16_t)(inf | 1u << (mant - 1));
        if (isinf(d))
                return inf;
        if (a < ldexp(1.0, 1 - bias)) {
                /* A denormal, in units of its last place; the largest rounds up into the
                   smallest normal, whose encoding follows. Scaling by a power of 2 is exact,
                   so nearbyint rounds once, ties to even. */
                m = nearbyint(ldexp(a, bias - 1 + (int)mant));
                return (uint16_t)(sign | (uint16_t)m);
        }
        (void)frexp(a, &e); /* a = f * 2^e, 0.5 <= f < 1 */
        m = nearbyint(ldexp(a, (int)mant + 1 - e));
        x = e - 1 + bias;
        if (m == ldexp(1.0, (int)mant + 1)) {
                m /= 2;
                x++;
        }
        if (x >= all) {
                *overflow = true;
                return inf;
        }
        return (uint16_t)(sign | x << mant | ((uint16_t)m & ((1u << mant) - 1)));
}
