/*
 * Seeded key generators. Every random word is a pure function of (stream, index): a splitmix64
 * finaliser over a Weyl sequence. That keeps the output independent of how the buffer is cut
 * into blocks, and lets the sparse entropy generator draw a varying number of words for one
 * output word without shifting the words of any other.
 *
 * The ranged fills write any part of the array exactly as the whole fill writes it, so callers
 * may cut the work among threads: pure words make that free, and the sorted distribution's one
 * running state is computed for the first key of the part.
 *
 * Keys are produced as 64-bit patterns in blocks and then narrowed to the key width, so each
 * distribution is written once for every key type. A 128-bit key is two such words, low first:
 * its high word follows the distribution as a 64-bit key of its signedness would, and its low
 * word is drawn from a stream of its own, so that 64-bit data stays what it was. The entropy
 * distribution is the exception: its bits are independent of the key boundaries, so it fills
 * the buffer as raw 64-bit words.
 *
 * Speed, 2^26 keys of any type and distribution on one core of the 2-core dev VM (release
 * build, a throwaway loop of datagen_fill timed with clock_gettime, other builds running):
 * 0.03 to 0.5 s; uniform 0.07 s, the slowest q8 and q7 on 64-bit keys.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "datagen.h"

#define GOLDEN 0x9e3779b97f4a7c15ull
#define BLOCK 1024

/* Stream ids: distinct purposes draw from unrelated sequences. */
enum {
        STREAM_KEYS = 1,
        STREAM_PICK = 2,        /* which class / which of the few values */
        STREAM_PAYLOAD = 3,     /* NaN payloads, table entries */
        STREAM_VALUES = 4,      /* datagen_fill_values */
        STREAM_ENTROPY = 0x100, /* + sample number */
        STREAM_WORD = 0x1000    /* x word: a 128-bit key's high word draws from id + this */
};

enum key_kind { KIND_UNSIGNED, KIND_SIGNED, KIND_FLOAT };

static const struct {
        unsigned bytes;
        enum key_kind kind;
        unsigned mant; /* floats: mantissa bits */
} key_info[SORTD_KEY_TYPE_COUNT] = {
        [SORTD_KEY_U8] = {1, KIND_UNSIGNED, 0},    [SORTD_KEY_I8] = {1, KIND_SIGNED, 0},
        [SORTD_KEY_U16] = {2, KIND_UNSIGNED, 0},   [SORTD_KEY_I16] = {2, KIND_SIGNED, 0},
        [SORTD_KEY_U32] = {4, KIND_UNSIGNED, 0},   [SORTD_KEY_I32] = {4, KIND_SIGNED, 0},
        [SORTD_KEY_F32] = {4, KIND_FLOAT, 23},     [SORTD_KEY_U64] = {8, KIND_UNSIGNED, 0},
        [SORTD_KEY_I64] = {8, KIND_SIGNED, 0},     [SORTD_KEY_F64] = {8, KIND_FLOAT, 52},
        [SORTD_KEY_F16] = {2, KIND_FLOAT, 10},     [SORTD_KEY_BF16] = {2, KIND_FLOAT, 7},
        [SORTD_KEY_U128] = {16, KIND_UNSIGNED, 0}, [SORTD_KEY_I128] = {16, KIND_SIGNED, 0},
};

static inline uint64_t mix64(uint64_t z)
{
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
}

static uint64_t stream_make(uint64_t seed, uint64_t id)
{
        return mix64(seed ^ mix64(id * GOLDEN + 0x632be59bd9b4e019ull));
}

/* The index-th word of a stream. */
static inline uint64_t rnd(uint64_t stream, uint64_t index)
{
        return mix64(stream + (index + 1) * GOLDEN);
}

/* floor(x * m / 2^64): a uniform pick in [0, m) from a uniform word. */
static inline uint64_t pick(uint64_t x, uint64_t m)
{
        return (uint64_t)(((unsigned __int128)x * m) >> 64);
}

struct special_class {
        uint64_t base[2], random[2]; /* word k is base[k] | (a uniform word & random[k]) */
};

struct gen {
        unsigned bits;
        unsigned words; /* 64-bit words per key: 2 for 128-bit keys, else 1 */
        unsigned mant;  /* floats: mantissa bits */
        enum key_kind kind;
        uint64_t mask; /* every bit of the key's top word */
        uint64_t sign; /* the top bit of the key */
        uint64_t seed;
        unsigned param;
        size_t n;
        /*
         * DATAGEN_SORTED: image(k) = lo + floor(k * range / n) + jitter(k) < image(k + 1), with
         * (acc_q, acc_r) = floor and remainder of k * range / n, stepped by (step, rem) per key;
         * DATAGEN_REVERSE walks the same sequence down from k = n - 1.
         */
        uint64_t lo, step, rem, acc_q, acc_r;
        bool reverse;
        struct special_class special[32];
};

/* Writes keys [i0, i0 + m) as m x g->words words, each key's low word first. */
typedef void (*gen_block_fn)(struct gen *g, uint64_t *out, size_t i0, size_t m);

/* Stream id for word k of a key: word 0 keeps the id's own stream. */
static uint64_t word_stream(const struct gen *g, uint64_t id, unsigned k)
{
        return stream_make(g->seed, id + k * STREAM_WORD);
}

/* The key whose order-preserving image is img (the inverse of the map in engine.h). */
static uint64_t from_image(const struct gen *g, uint64_t img)
{
        switch (g->kind) {
        case KIND_UNSIGNED:
                return img;
        case KIND_SIGNED:
                return img ^ g->sign;
        case KIND_FLOAT:
                return img & g->sign ? img ^ g->sign : ~img & g->mask;
        }
        return img;
}

static void gen_uniform(struct gen *g, uint64_t *out, size_t i0, size_t m)
{
        for (unsigned k = 0; k < g->words; k++) {
                uint64_t s = word_stream(g, STREAM_KEYS, k);

                for (size_t j = 0; j < m; j++)
                        out[j * g->words + k] = rnd(s, i0 + j);
        }
}

static void gen_equal(struct gen *g, uint64_t *out, size_t i0, size_t m)
{
        for (unsigned k = 0; k < g->words; k++) {
                uint64_t v = rnd(word_stream(g, STREAM_KEYS, k), 0);

                for (size_t j = 0; j < m; j++)
                        out[j * g->words + k] = v;
        }
}

/* A 128-bit key's low word: uniform, whatever the distribution of the high word. */
static void fill_low_words(struct gen *g, uint64_t *out, size_t i0, size_t m)
{
        uint64_t s = word_stream(g, STREAM_KEYS, 1);

        for (size_t j = 0; g->words == 2 && j < m; j++)
                out[2 * j] = rnd(s, i0 + j);
}

/*
 * Strictly increasing images while n fits the range, non-decreasing beyond: floor(k * range / n)
 * stepped without a division per key, plus a random jitter below the step. A 128-bit key's high
 * word climbs so, strictly (n < 2^64), so its random low word cannot break the order.
 */
static void gen_sorted(struct gen *g, uint64_t *out, size_t i0, size_t m)
{
        uint64_t s = stream_make(g->seed, STREAM_KEYS);

        fill_low_words(g, out, i0, m);
        for (size_t j = 0; j < m; j++) {
                size_t k = g->reverse ? g->n - 1 - (i0 + j) : i0 + j;
                uint64_t jitter = g->step ? pick(rnd(s, k), g->step) : 0;

                out[j * g->words + g->words - 1] = from_image(g, g->lo + g->acc_q + jitter);
                if (!g->reverse) {
                        uint64_t carry = g->acc_r >= g->n - g->rem;

                        g->acc_r += g->rem - (carry ? g->n : 0);
                        g->acc_q += g->step + carry;
                } else {
                        uint64_t borrow = g->acc_r < g->rem;

                        g->acc_r += (borrow ? g->n : 0) - g->rem;
                        g->acc_q -= g->step + borrow;
                }
        }
}

/* Value v of the few; 128-bit: values 2i and 2i + 1 share their high word, not their low. */
static void gen_few(struct gen *g, uint64_t *out, size_t i0, size_t m)
{
        uint64_t which = stream_make(g->seed, STREAM_PICK);
        uint64_t value = stream_make(g->seed, STREAM_KEYS);
        uint64_t high = word_stream(g, STREAM_KEYS, 1);
        uint64_t count = g->param ? g->param : 16;

        for (size_t j = 0; j < m; j++) {
                uint64_t v = pick(rnd(which, i0 + j), count);

                out[j * g->words] = rnd(value, v);
                if (g->words == 2)
                        out[2 * j + 1] = rnd(high, v / 2);
        }
}

/* The sign bit set (for floats that includes -0, -inf and negative NaNs); unsigned: uniform. */
static void gen_negative(struct gen *g, uint64_t *out, size_t i0, size_t m)
{
        uint64_t s = stream_make(g->seed, STREAM_KEYS);
        uint64_t force = g->kind == KIND_UNSIGNED ? 0 : g->sign;

        fill_low_words(g, out, i0, m);
        for (size_t j = 0; j < m; j++)
                out[j * g->words + g->words - 1] = rnd(s, i0 + j) | force;
}

/* DATAGEN_SPECIAL: a class from the table, its random bits filled in. */
static void gen_special(struct gen *g, uint64_t *out, size_t i0, size_t m)
{
        uint64_t which = stream_make(g->seed, STREAM_PICK);

        for (unsigned k = 0; k < g->words; k++) {
                uint64_t payload = word_stream(g, STREAM_PAYLOAD, k);

                for (size_t j = 0; j < m; j++) {
                        const struct special_class *c = &g->special[rnd(which, i0 + j) & 31];

                        out[j * g->words + k] = c->base[k] | (rnd(payload, i0 + j) & c->random[k]);
                }
        }
}

static void store_block(void *keys, size_t i0, const uint64_t *v, size_t m, unsigned bytes)
{
        unsigned char *p = (unsigned char *)keys + i0 * bytes;

        switch (bytes) {
        case 1:
                for (size_t j = 0; j < m; j++)
                        p[j] = (uint8_t)v[j];
                break;
        case 2:
                for (size_t j = 0; j < m; j++) {
                        uint16_t x = (uint16_t)v[j];
                        memcpy(p + 2 * j, &x, 2);
                }
                break;
        case 4:
                for (size_t j = 0; j < m; j++) {
                        uint32_t x = (uint32_t)v[j];
                        memcpy(p + 4 * j, &x, 4);
                }
                break;
        default: /* 8 and 16: little-endian words, the low one first */
                memcpy(p, v, m * bytes);
                break;
        }
}

/*
 * The entropy distribution: every bit set with probability p = 2^-q, independently, as in the AND
 * of q uniform words; the key boundaries do not matter, so the buffer is filled as raw words.
 *
 * Up to q = 7 the words are ANDed. Beyond, most bits are zero and q words per word would cost up
 * to 16 times the uniform fill, so the set bits are placed instead: the distance to the next one
 * is geometric, drawn from one uniform word by a search in its cumulative table
 * cdf[i] = 2^64 (1 - (1 - p)^i), the chance that one of the next i bits is set. The words come
 * out with the same distribution (to the table's double rounding).
 */
#define ENTROPY_AND_MAX 7

struct entropy {
        unsigned q;
        uint64_t s[ENTROPY_AND_MAX];
        uint64_t cdf[65];
};

static uint64_t entropy_and(const struct entropy *e, uint64_t j)
{
        uint64_t acc = ~(uint64_t)0;

        for (unsigned k = 0; k < e->q; k++)
                acc &= rnd(e->s[k], j);
        return acc;
}

static uint64_t entropy_sparse(const struct entropy *e, uint64_t j)
{
        uint64_t w = 0;
        unsigned at = 0; /* bits below `at` are decided */

        for (uint64_t draw = 0; at < 64; draw++) {
                uint64_t u = rnd(e->s[0] + draw * 0x2545f4914f6cdd1dull, j);
                unsigned gap = 0;

                if (u >= e->cdf[64 - at])
                        break; /* none of the remaining bits is set */
                for (unsigned step = 32; step; step >>= 1)
                        if (e->cdf[gap + step] <= u)
                                gap += step;
                /* cdf[gap] <= u < cdf[gap + 1]: the next set bit is `gap` bits on */
                w |= (uint64_t)1 << (at + gap);
                at += gap + 1;
        }
        return w;
}

/* Bytes [lo, hi) of the buffer; word j covers bytes [8j, 8j + 8), whatever the key width. */
static void fill_entropy(void *keys, size_t lo, size_t hi, unsigned q, uint64_t seed)
{
        struct entropy e;
        unsigned char *p = keys;

        e.q = q < 1 ? 1 : q > 64 ? 64 : q;
        for (unsigned k = 0; k < ENTROPY_AND_MAX; k++)
                e.s[k] = stream_make(seed, STREAM_ENTROPY + k);
        for (unsigned i = 0; i <= 64; i++)
                e.cdf[i] = (uint64_t)(-expm1(i * log1p(-ldexp(1, -(int)e.q))) * 0x1p64);
        for (size_t j = lo / 8 * 8; j < hi; j += 8) {
                uint64_t w =
                        e.q <= ENTROPY_AND_MAX ? entropy_and(&e, j / 8) : entropy_sparse(&e, j / 8);
                size_t from = j < lo ? lo : j, to = hi - j < 8 ? hi : j + 8;

                memcpy(p + from, (const unsigned char *)&w + (from - j), to - from);
        }
}

/* The running state for key `first` of the n, the first the fill generates. */
static void setup_sorted(struct gen *g, bool reverse, size_t first)
{
        uint64_t lo = 0, hi = g->mask;
        uint64_t k = reverse ? g->n - 1 - first : first;
        unsigned __int128 range, at;

        if (g->kind == KIND_FLOAT) {
                /* -inf .. +inf: by value, no NaNs */
                uint64_t inf = (g->mask >> 1) & ~(((uint64_t)1 << g->mant) - 1);

                lo = ~(inf | g->sign) & g->mask;
                hi = inf ^ g->sign;
        }
        range = (unsigned __int128)(hi - lo) + 1;
        g->lo = lo;
        /* one key over the whole 2^64 range: any step will do */
        g->step = range / g->n > UINT64_MAX ? UINT64_MAX : (uint64_t)(range / g->n);
        g->rem = (uint64_t)(range % g->n);
        g->reverse = reverse;
        at = range * k; /* < 2^128: range <= 2^64, k < n */
        g->acc_q = (uint64_t)(at / g->n);
        g->acc_r = (uint64_t)(at % g->n);
}

/* Integers: min, max, 0, +-1 and their neighbours (in both signed and unsigned readings), and a
   quarter of random values. */
static void setup_special_int(struct gen *g)
{
        const uint64_t s = g->sign, a = g->mask;
        const uint64_t v[12] = {0, 1, 2, a, a - 1, a - 2, s - 2, s - 1, s, s + 1, s + 2, 3};

        for (unsigned c = 0; c < 32; c++)
                g->special[c] = (struct special_class){{c % 16 < 12 ? v[c % 16] : 0},
                                                       {c % 16 < 12 ? 0 : a}};
}

/*
 * 128-bit integers, {low, high} words: 0, 1, the unsigned max (i128's -1) and its neighbour, the
 * i128 max and min and their neighbours, 2^64 - 1 and 2^64 (a carry between the words), and keys
 * that share their high word (0, all ones, one fixed word) over a random low one.
 */
static void setup_special_wide(struct gen *g)
{
        const uint64_t a = ~(uint64_t)0, s = (uint64_t)1 << 63, h = 0x0123456789abcdefull;
        const struct special_class c[16] = {
                {{0, 0}, {0, 0}},     {{1, 0}, {0, 0}},     {{a, a}, {0, 0}},
                {{a - 1, a}, {0, 0}}, {{a, s - 1}, {0, 0}}, {{a - 1, s - 1}, {0, 0}},
                {{0, s}, {0, 0}},     {{1, s}, {0, 0}},     {{a, 0}, {0, 0}},
                {{0, 1}, {0, 0}},     {{0, 0}, {a, 0}},     {{0, a}, {a, 0}},
                {{0, h}, {a, 0}},     {{0, h}, {7, 0}},     {{0, 0}, {a, a}},
                {{0, 0}, {a, a}},
        };

        for (unsigned k = 0; k < 32; k++)
                g->special[k] = c[k % 16];
}

/* Floats: 16 classes (zeros, infinities, NaNs, denormals, normals), each in both signs. */
static void setup_special_float(struct gen *g)
{
        unsigned mb = g->mant, eb = g->bits - 1 - mb;
        uint64_t one = 1, mant = (one << mb) - 1, exp_all = ((one << eb) - 1) << mb;
        uint64_t quiet = one << (mb - 1), bias = (one << (eb - 1)) - 1;
        uint64_t low_exp = ((one << (eb - 2)) - 1) << mb; /* all but the top two exponent bits */
        const struct {
                uint64_t base, random;
        } c[16] = {
                {0, 0},                                 /* zero */
                {exp_all, 0},                           /* infinity */
                {exp_all | quiet, quiet - 1},           /* quiet NaN, random payload */
                {exp_all | quiet, 0},                   /* the default quiet NaN */
                {exp_all | 1, quiet - 1},               /* signalling NaN, random payload */
                {exp_all | 1, 6},                       /* signalling NaN, small payload */
                {1, mant},                              /* denormal */
                {1, 0},                                 /* smallest denormal */
                {mant, 0},                              /* largest denormal */
                {one << mb, 0},                         /* smallest normal */
                {(exp_all - (one << mb)) | mant, 0},    /* largest finite */
                {bias << mb, 0},                        /* 1.0 */
                {one << (mb + eb - 2), low_exp | mant}, /* normal, exponent 01x..x: below 1 */
                {one << (mb + eb - 1), low_exp | mant}, /* normal, exponent 10x..x: 2 and up */
                {(bias - 1) << mb, (one << mb) | mant}, /* normal in [0.5, 2) */
                {0, (one << mb) | mant},                /* denormal or smallest binade */
        };

        for (unsigned k = 0; k < 32; k++)
                g->special[k] = (struct special_class){{c[k % 16].base | (k < 16 ? 0 : g->sign)},
                                                       {c[k % 16].random}};
}

/* The generator of a distribution other than entropy, its state set up for key `begin`. */
static gen_block_fn gen_setup(struct gen *g, datagen_dist dist, size_t begin)
{
        switch (dist) {
        case DATAGEN_EQUAL:
                return gen_equal;
        case DATAGEN_SORTED:
        case DATAGEN_REVERSE:
                setup_sorted(g, dist == DATAGEN_REVERSE, begin);
                return gen_sorted;
        case DATAGEN_FEW:
                return gen_few;
        case DATAGEN_NEGATIVE:
                return gen_negative;
        case DATAGEN_SPECIAL:
                if (g->kind == KIND_FLOAT)
                        setup_special_float(g);
                else if (g->words == 2)
                        setup_special_wide(g);
                else
                        setup_special_int(g);
                return gen_special;
        default:
                return gen_uniform;
        }
}

void datagen_fill_range(void *keys, size_t n, size_t begin, size_t end, sortd_key_type t,
                        datagen_dist dist, unsigned param, uint64_t seed)
{
        struct gen g;
        gen_block_fn fn;
        uint64_t block[2 * BLOCK];
        unsigned bytes;

        if ((unsigned)t >= SORTD_KEY_TYPE_COUNT || end > n || begin >= end)
                return;
        bytes = key_info[t].bytes;
        if (dist == DATAGEN_ENTROPY) {
                fill_entropy(keys, begin * bytes, end * bytes, param, seed);
                return;
        }
        g = (struct gen){
                .bits = bytes * 8,
                .words = bytes > 8 ? 2 : 1,
                .mant = key_info[t].mant,
                .kind = key_info[t].kind,
                .seed = seed,
                .param = param,
                .n = n,
        };
        g.mask = g.bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << g.bits) - 1;
        g.sign = (uint64_t)1 << (g.bits >= 64 ? 63 : g.bits - 1);
        fn = gen_setup(&g, dist, begin);
        for (size_t i = begin; i < end; i += BLOCK) {
                size_t m = end - i < BLOCK ? end - i : BLOCK;

                fn(&g, block, i, m);
                store_block(keys, i, block, m, bytes);
        }
}

void datagen_fill(void *keys, size_t n, sortd_key_type t, datagen_dist dist, unsigned param,
                  uint64_t seed)
{
        datagen_fill_range(keys, n, 0, n, t, dist, param, seed);
}

void datagen_fill_values_range(void *vals, size_t begin, size_t end, unsigned bytes, uint64_t seed)
{
        uint64_t s = stream_make(seed, STREAM_VALUES);
        uint64_t block[BLOCK];

        if (bytes != 4 && bytes != 8)
                return;
        for (size_t i = begin; i < end; i += BLOCK) {
                size_t m = end - i < BLOCK ? end - i : BLOCK;

                for (size_t j = 0; j < m; j++)
                        block[j] = rnd(s, i + j);
                store_block(vals, i, block, m, bytes);
        }
}

void datagen_fill_values(void *vals, size_t n, unsigned bytes, uint64_t seed)
{
        datagen_fill_values_range(vals, 0, n, bytes, seed);
}

static const char *const dist_names[DATAGEN_DIST_COUNT] = {
        [DATAGEN_UNIFORM] = "uniform",   [DATAGEN_ENTROPY] = "q",       [DATAGEN_EQUAL] = "equal",
        [DATAGEN_SORTED] = "sorted",     [DATAGEN_REVERSE] = "reverse", [DATAGEN_FEW] = "few",
        [DATAGEN_NEGATIVE] = "negative", [DATAGEN_SPECIAL] = "special",
};

/* A decimal in [lo, hi] that is all of s; -1 otherwise. */
static long parse_number(const char *s, long lo, long hi)
{
        long v = 0;

        if (!*s)
                return -1;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -1;
                v = v * 10 + (*s - '0');
                if (v > hi)
                        return -1;
        }
        return v < lo ? -1 : v;
}

int datagen_parse(const char *name, datagen_dist *dist, unsigned *param)
{
        long v;

        if (!name)
                return -1;
        if (name[0] == 'q') {
                v = parse_number(name + 1, 1, 64);
                if (v < 0)
                        return -1;
                *dist = DATAGEN_ENTROPY;
                *param = (unsigned)v;
                return 0;
        }
        if (strncmp(name, "few:", 4) == 0) {
                v = parse_number(name + 4, 1, UINT32_MAX);
                if (v < 0)
                        return -1;
                *dist = DATAGEN_FEW;
                *param = (unsigned)v;
                return 0;
        }
        for (int d = 0; d < DATAGEN_DIST_COUNT; d++) {
                if (d != DATAGEN_ENTROPY && strcmp(name, dist_names[d]) == 0) {
                        *dist = (datagen_dist)d;
                        *param = d == DATAGEN_FEW ? 16 : 0;
                        return 0;
                }
        }
        return -1;
}

const char *datagen_name(datagen_dist dist, unsigned param, char *buf, size_t len)
{
        if (!buf || !len)
                return buf;
        if (dist == DATAGEN_ENTROPY) /* as datagen_fill clamps it */
                snprintf(buf, len, "q%u", param < 1 ? 1 : param > 64 ? 64 : param);
        else if (dist == DATAGEN_FEW && param && param != 16)
                snprintf(buf, len, "few:%u", param);
        else if ((unsigned)dist < DATAGEN_DIST_COUNT)
                snprintf(buf, len, "%s", dist_names[dist]);
        else
                snprintf(buf, len, "?");
        return buf;
}
