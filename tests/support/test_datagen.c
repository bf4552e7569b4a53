/* The data generator: names, determinism, and what each distribution promises. */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "datagen.h"
#include "reference.h"
#include "suite.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Key i of kb <= 8 bytes. */
static uint64_t load(const void *k, size_t i, size_t kb)
{
        uint64_t v = 0;

        memcpy(&v, (const char *)k + i * kb, kb);
        return v;
}

/* Word w (0 low, 1 high) of 128-bit key i. */
static uint64_t load_word(const void *k, size_t i, unsigned w)
{
        return load(k, 2 * i + w, 8);
}

/* The sign bit of key i, whatever its width: the top bit of its last byte (little-endian). */
static bool top_bit(const unsigned char *k, size_t i, size_t kb)
{
        return k[(i + 1) * kb - 1] & 0x80;
}

/* Mantissa bits of a float type; 0 for the others. */
static unsigned mant_bits(sortd_key_type t)
{
        switch (t) {
        case SORTD_KEY_F16:
                return 10;
        case SORTD_KEY_BF16:
                return 7;
        case SORTD_KEY_F32:
                return 23;
        case SORTD_KEY_F64:
                return 52;
        default:
                return 0;
        }
}

/* Whether key i of float type t is a NaN: its exponent all ones, its mantissa not zero. */
static bool is_nan(sortd_key_type t, const void *k, size_t i)
{
        size_t kb = sortd_key_size(t);
        unsigned mb = mant_bits(t);
        uint64_t x, mant, expo;

        if (!mb)
                return false; /* integers, 128-bit ones too: no NaNs */
        x = load(k, i, kb);
        mant = ((uint64_t)1 << mb) - 1;
        expo = (((uint64_t)1 << (8 * kb - 1)) - 1) & ~mant;
        return (x & expo) == expo && (x & mant);
}

START_TEST(names_round_trip)
{
        static const char *const names[] = {"uniform", "q1",    "q2",    "q4",       "q8",
                                            "q16",     "q64",   "equal", "sorted",   "reverse",
                                            "few",     "few:3", "few:1", "negative", "special"};
        static const char *const bad[] = {
                "",        "q",        "q0",    "q65",   "qx",
                "q2x",     "few:",     "few:0", "few:x", "few:99999999999",
                "Uniform", "uniform ", "bogus"};
        char buf[32];

        for (size_t i = 0; i < LEN(names); i++) {
                datagen_dist d = DATAGEN_DIST_COUNT;
                unsigned p = 12345;

                ck_assert_msg(datagen_parse(names[i], &d, &p) == 0, "%s", names[i]);
                ck_assert_str_eq(datagen_name(d, p, buf, sizeof(buf)), names[i]);
        }
        for (size_t i = 0; i < LEN(bad); i++) {
                datagen_dist d = DATAGEN_DIST_COUNT;
                unsigned p = 12345;

                ck_assert_msg(datagen_parse(bad[i], &d, &p) == -1, "'%s' accepted", bad[i]);
                ck_assert_int_eq(d, DATAGEN_DIST_COUNT);
                ck_assert_uint_eq(p, 12345);
        }
        ck_assert_int_eq(datagen_parse(NULL, &(datagen_dist){0}, &(unsigned){0}), -1);

        datagen_dist d;
        unsigned p;
        ck_assert_int_eq(datagen_parse("q4", &d, &p), 0);
        ck_assert(d == DATAGEN_ENTROPY && p == 4);
        ck_assert_int_eq(datagen_parse("few", &d, &p), 0);
        ck_assert(d == DATAGEN_FEW && p == 16);
        ck_assert_str_eq(datagen_name(DATAGEN_FEW, 0, buf, sizeof(buf)), "few");
        ck_assert_str_eq(datagen_name(DATAGEN_DIST_COUNT, 0, buf, sizeof(buf)), "?");
        ck_assert_str_eq(datagen_name(DATAGEN_SPECIAL, 0, buf, 4), "spe");
}
END_TEST

/* Same arguments, same bytes; another seed, other bytes; n keys written and no more. */
START_TEST(deterministic)
{
        sortd_key_type t = (sortd_key_type)_i;
        size_t kb = sortd_key_size(t), n = 3001;
        unsigned char *a = malloc(n * kb + 8), *b = malloc(n * kb + 8);

        ck_assert(a && b);
        for (int d = 0; d < DATAGEN_DIST_COUNT; d++) {
                memset(a, 0x77, n * kb + 8);
                memset(b, 0x77, n * kb + 8);
                datagen_fill(a, n, t, d, 4, 42);
                datagen_fill(b, n, t, d, 4, 42);
                ck_assert_mem_eq(a, b, n * kb + 8);
                for (int i = 0; i < 8; i++)
                        ck_assert_uint_eq(a[n * kb + i], 0x77);
                datagen_fill(b, n, t, d, 4, 43);
                /* u8 has 1 in 256 for equal, and no room for jitter in sorted 3001 keys */
                if (kb > 1)
                        ck_assert_msg(memcmp(a, b, n * kb) != 0, "dist %d ignores the seed", d);
        }
        free(a);
        free(b);
}
END_TEST

START_TEST(values)
{
        uint64_t a[1001], b[1001];
        uint32_t c[1001];

        datagen_fill_values(a, 1000, 8, 7);
        datagen_fill_values(b, 1000, 8, 7);
        ck_assert_mem_eq(a, b, 8000);
        datagen_fill_values(b, 1000, 8, 8);
        ck_assert(memcmp(a, b, 8000) != 0);
        c[1000] = 0xdeadbeef;
        datagen_fill_values(c, 1000, 4, 7);
        ck_assert_uint_eq(c[1000], 0xdeadbeef);
        size_t distinct = 0;
        for (int i = 1; i < 1000; i++)
                distinct += c[i] != c[i - 1];
        ck_assert_uint_gt(distinct, 990);
}
END_TEST

/* Filled in parts, in any order, an array holds the bytes of the whole fill: what lets sortbench
   cut generation among threads without the data depending on their number. */
START_TEST(parts_match_whole)
{
        static const size_t cuts[] = {0, 1, 7, 13, 1023, 1025, 2048, 2999, 3000, 3001};
        sortd_key_type t = (sortd_key_type)_i;
        size_t kb = sortd_key_size(t), n = cuts[LEN(cuts) - 1];
        unsigned char *a = malloc(n * kb + 8), *b = malloc(n * kb + 8);

        ck_assert(a && b);
        for (int d = 0; d <= DATAGEN_DIST_COUNT; d++) {
                /* the entropy distribution once more with q = 12, its sparse path */
                datagen_dist dist = d == DATAGEN_DIST_COUNT ? DATAGEN_ENTROPY : (datagen_dist)d;
                unsigned param = d == DATAGEN_DIST_COUNT ? 12 : 4;

                datagen_fill(a, n, t, dist, param, 42);
                memset(b, 0x77, n * kb + 8);
                datagen_fill_range(b, n, 5, 5, t, dist, param, 42);
                datagen_fill_range(b, n, n - 1, n + 1, t, dist, param, 42);
                /* ck_abort_msg under an if: a ck_assert per byte costs Check a write each */
                for (size_t i = 0; i < n * kb + 8; i++)
                        if (b[i] != 0x77)
                                ck_abort_msg("dist %d: an empty or overlong range wrote", d);
                datagen_fill_range(b, n, 13, 1023, t, dist, param, 42);
                for (size_t i = 0; i < n * kb + 8; i++) {
                        bool inside = i >= 13 * kb && i < 1023 * kb;

                        if (inside ? b[i] != a[i] : b[i] != 0x77)
                                ck_abort_msg("%s dist %d: byte %zu of keys [13, 1023)",
                                             sortd_key_type_name(t), d, i);
                }
                for (size_t c = LEN(cuts) - 1; c > 0; c--)
                        datagen_fill_range(b, n, cuts[c - 1], cuts[c], t, dist, param, 42);
                ck_assert_msg(memcmp(a, b, n * kb) == 0, "%s dist %d: parts differ from the whole",
                              sortd_key_type_name(t), d);
                for (int i = 0; i < 8; i++)
                        ck_assert_uint_eq(b[n * kb + i], 0x77);
        }
        free(a);
        free(b);
}
END_TEST

START_TEST(values_in_parts)
{
        static const size_t cuts[] = {0, 3, 1024, 1031, 2500, 2501};
        size_t n = cuts[LEN(cuts) - 1];
        unsigned char a[2501 * 8 + 8], b[2501 * 8 + 8];

        for (unsigned vb = 4; vb <= 8; vb += 4) {
                datagen_fill_values(a, n, vb, 9);
                memset(b, 0x77, sizeof(b));
                for (size_t c = LEN(cuts) - 1; c > 0; c--)
                        datagen_fill_values_range(b, cuts[c - 1], cuts[c], vb, 9);
                ck_assert_mem_eq(a, b, n * vb);
                ck_assert_uint_eq(b[n * vb], 0x77);
        }
}
END_TEST

/* Argsort of generated data in the given order is the identity: the data was already sorted. */
static void expect_presorted(sortd_key_type t, datagen_dist dist, sortd_order o, size_t n)
{
        size_t kb = sortd_key_size(t);
        unsigned char *k = malloc(n * kb + 1);
        uint64_t *perm = malloc(n * 8 + 8);
        sortd_sort_desc d = {t, SORTD_PAYLOAD_ARGSORT64, o, 0, 0};
        size_t strict = 0;

        ck_assert(k && perm);
        datagen_fill(k, n, t, dist, 0, n);
        ck_assert_int_eq(ref_sort(&d, k, perm, n), 0);
        for (size_t i = 0; i < n; i++)
                if (perm[i] != i)
                        ck_abort_msg("%s n=%zu: position %zu out of order", sortd_key_type_name(t),
                                     n, i);
        for (size_t i = 0; i + 1 < n; i++)
                strict += ref_compare(&d, k, i, i + 1) < 0;
        /* strictly monotone while the type has room for n distinct keys */
        if (kb >= 4 || n <= (size_t)1 << (8 * kb - 1))
                ck_assert_uint_eq(strict, n - 1);
        else
                ck_assert_uint_ge(strict, ((size_t)1 << (8 * kb)) / 2);
        for (size_t i = 0; i < n; i++)
                if (is_nan(t, k, i))
                        ck_abort_msg("%s: NaN at %zu", sortd_key_type_name(t), i);
        free(k);
        free(perm);
}

START_TEST(sorted_and_reverse)
{
        static const size_t sizes[] = {1, 2, 3, 100, 1000, 70001};

        for (size_t s = 0; s < LEN(sizes); s++) {
                expect_presorted(_i, DATAGEN_SORTED, SORTD_ASCENDING, sizes[s]);
                expect_presorted(_i, DATAGEN_REVERSE, SORTD_DESCENDING, sizes[s]);
        }
}
END_TEST

struct bytes16 {
        unsigned char b[16];
};

static int cmp_bytes16(const void *a, const void *b)
{
        return memcmp(a, b, 16);
}

/* Distinct keys of kb <= 16 bytes, as byte strings. */
static size_t count_distinct(const void *k, size_t n, size_t kb)
{
        struct bytes16 *v = calloc(n + 1, sizeof(*v));
        size_t distinct = n ? 1 : 0;

        ck_assert_ptr_nonnull(v);
        for (size_t i = 0; i < n; i++)
                memcpy(v[i].b, (const char *)k + i * kb, kb);
        qsort(v, n, sizeof(*v), cmp_bytes16);
        for (size_t i = 1; i < n; i++)
                distinct += cmp_bytes16(&v[i], &v[i - 1]) != 0;
        free(v);
        return distinct;
}

START_TEST(equal_few_negative)
{
        sortd_key_type t = (sortd_key_type)_i;
        size_t kb = sortd_key_size(t), n = 20000;
        bool is_unsigned = t == SORTD_KEY_U8 || t == SORTD_KEY_U16 || t == SORTD_KEY_U32 ||
                           t == SORTD_KEY_U64 || t == SORTD_KEY_U128;
        unsigned char *k = malloc(n * kb);
        size_t negative = 0;

        ck_assert_ptr_nonnull(k);
        datagen_fill(k, n, t, DATAGEN_EQUAL, 0, 5);
        ck_assert_uint_eq(count_distinct(k, n, kb), 1);
        datagen_fill(k, n, t, DATAGEN_FEW, 16, 5);
        ck_assert_uint_le(count_distinct(k, n, kb), 16);
        ck_assert_uint_ge(count_distinct(k, n, kb), kb == 1 ? 10 : 16);
        datagen_fill(k, n, t, DATAGEN_FEW, 3, 5);
        ck_assert_uint_le(count_distinct(k, n, kb), 3);
        datagen_fill(k, n, t, DATAGEN_FEW, 1000, 5);
        ck_assert_uint_gt(count_distinct(k, n, kb), kb == 1 ? 200 : 900);
        datagen_fill(k, n, t, DATAGEN_NEGATIVE, 0, 5);
        for (size_t i = 0; i < n; i++)
                negative += top_bit(k, i, kb);
        if (is_unsigned)
                ck_assert(negative > n / 3 && negative < n * 2 / 3);
        else
                ck_assert_uint_eq(negative, n);
        free(k);
}
END_TEST

/*
 * AND of q samples: each bit set with probability 2^-q, independently: the count of set bits
 * within 5 standard deviations, and so is the count of adjacent pairs both set (p^2 each), which
 * a generator that clustered its bits would miss.
 */
START_TEST(entropy)
{
        sortd_key_type t = (sortd_key_type)_i;
        /* 2^18 keys, as many bits for 128-bit keys as for 64-bit ones */
        size_t kb = sortd_key_size(t), n = kb > 8 ? (1 << 21) / kb : 1 << 18, bits = n * kb * 8;
        unsigned char *k;
        static const unsigned qs[] = {1, 2, 3, 4, 7, 8, 9, 12, 16};

        /* The entropy fill sees only the key's width: the first type of each width stands for
           the others (parts_match_whole and deterministic still fill every type). */
        for (int u = 0; u < _i; u++)
                if (sortd_key_size((sortd_key_type)u) == kb)
                        return;
        k = malloc(n * kb);
        ck_assert_ptr_nonnull(k);
        for (size_t j = 0; j < LEN(qs); j++) {
                double p = ldexp(1, -(int)qs[j]), set = 0, pairs = 0;
                double want = bits * p, want_pairs = (bits - n * kb) * p * p;

                datagen_fill(k, n, t, DATAGEN_ENTROPY, qs[j], 9 + j);
                for (size_t i = 0; i < n * kb; i++) {
                        set += __builtin_popcount(k[i]);
                        pairs += __builtin_popcount(k[i] & (k[i] >> 1));
                }
                ck_assert_msg(fabs(set - want) < 5 * sqrt(want) + 1,
                              "q%u: %.0f bits set, want %.0f", qs[j], set, want);
                ck_assert_msg(fabs(pairs - want_pairs) < 5 * sqrt(want_pairs) + 2,
                              "q%u: %.0f adjacent pairs set, want %.0f", qs[j], pairs, want_pairs);
                if (kb == 8 && qs[j] <= 12) /* every bit position equally likely */
                        for (unsigned b = 0; b < 64; b++) {
                                double at = 0, want_at = n * p;

                                for (size_t i = 0; i < n; i++)
                                        at += (load(k, i, 8) >> b) & 1;
                                if (fabs(at - want_at) > 5 * sqrt(want_at) + 1)
                                        ck_abort_msg("q%u: bit %u set %.0f times, want %.0f", qs[j],
                                                     b, at, want_at);
                        }
        }
        datagen_fill(k, n, t, DATAGEN_UNIFORM, 0, 9);
        double ones = 0;
        for (size_t i = 0; i < n * kb; i++)
                ones += __builtin_popcount(k[i]);
        ck_assert(fabs(ones / (n * kb * 8) - 0.5) < 0.01);
        free(k);
}
END_TEST

/* Every class the header promises, in both signs. */
START_TEST(special_floats)
{
        static const sortd_key_type types[] = {SORTD_KEY_F32, SORTD_KEY_F64, SORTD_KEY_F16,
                                               SORTD_KEY_BF16};
        const size_t n = 20000;
        sortd_key_type t = types[_i];
        size_t kb = sortd_key_size(t);
        unsigned mb = mant_bits(t);
        uint64_t sign = (uint64_t)1 << (8 * kb - 1), mant = ((uint64_t)1 << mb) - 1;
        uint64_t expo = (sign - 1) & ~mant, quiet = (uint64_t)1 << (mb - 1);
        unsigned char *k = malloc(n * kb);
        enum { C_ZERO, C_INF, C_QNAN, C_SNAN, C_DENORM, C_NORMAL, CLASSES };
        size_t seen[2][CLASSES] = {{0}};

        ck_assert_ptr_nonnull(k);
        datagen_fill(k, n, t, DATAGEN_SPECIAL, 0, 3);
        for (size_t i = 0; i < n; i++) {
                uint64_t x = load(k, i, kb), e = x & expo, m = x & mant;
                int c = e == expo ? (m == 0        ? C_INF
                                     : (m & quiet) ? C_QNAN
                                                   : C_SNAN)
                        : e == 0  ? (m == 0 ? C_ZERO : C_DENORM)
                                  : C_NORMAL;
                seen[(x & sign) != 0][c]++;
        }
        for (int s = 0; s < 2; s++)
                for (int c = 0; c < CLASSES; c++)
                        ck_assert_msg(seen[s][c] > n / 100, "%s sign %d class %d: %zu",
                                      sortd_key_type_name(t), s, c, seen[s][c]);
        free(k);
}
END_TEST

START_TEST(special_integers)
{
        static const sortd_key_type types[] = {SORTD_KEY_U8,  SORTD_KEY_I8,  SORTD_KEY_U16,
                                               SORTD_KEY_I16, SORTD_KEY_U32, SORTD_KEY_I32,
                                               SORTD_KEY_U64, SORTD_KEY_I64};
        const size_t n = 5000;
        sortd_key_type t = types[_i];
        size_t kb = sortd_key_size(t);
        uint64_t all = kb == 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * kb)) - 1;
        uint64_t sign = (uint64_t)1 << (8 * kb - 1);
        /* 0, 1, max (unsigned) / -1, min (signed), max (signed), and neighbours */
        const uint64_t want[] = {0, 1, 2, all, all - 1, sign, sign + 1, sign - 1, sign - 2};
        unsigned char *k = malloc(n * kb);

        ck_assert_ptr_nonnull(k);
        datagen_fill(k, n, t, DATAGEN_SPECIAL, 0, 3);
        for (size_t w = 0; w < LEN(want); w++) {
                size_t hits = 0;

                for (size_t i = 0; i < n; i++)
                        hits += load(k, i, kb) == want[w];
                ck_assert_msg(hits > n / 40, "%s: 0x%llx %zu times", sortd_key_type_name(t),
                              (unsigned long long)want[w], hits);
        }
        free(k);
}
END_TEST

/*
 * 128-bit integers, {low, high}: 0, 1, u128 max (i128 -1), i128 max and min, 2^64 - 1 and 2^64,
 * and many distinct keys that share one high word.
 */
START_TEST(special_wide)
{
        const uint64_t a = ~(uint64_t)0, s = (uint64_t)1 << 63;
        const uint64_t want[][2] = {{0, 0}, {1, 0}, {a, a}, {a, s - 1}, {0, s}, {a, 0}, {0, 1}};
        const size_t n = 5000;
        sortd_key_type t = _i ? SORTD_KEY_I128 : SORTD_KEY_U128;
        unsigned char *k = malloc(n * 16);
        size_t shared = 0;

        ck_assert_ptr_nonnull(k);
        datagen_fill(k, n, t, DATAGEN_SPECIAL, 0, 3);
        for (size_t w = 0; w < LEN(want); w++) {
                size_t hits = 0;

                for (size_t i = 0; i < n; i++)
                        hits += load_word(k, i, 0) == want[w][0] &&
                                load_word(k, i, 1) == want[w][1];
                ck_assert_msg(hits > n / 40, "%s: {0x%llx, 0x%llx} %zu times",
                              sortd_key_type_name(t), (unsigned long long)want[w][0],
                              (unsigned long long)want[w][1], hits);
        }
        for (size_t i = 1; i < n; i++)
                for (size_t j = i < 50 ? 0 : i - 50; j < i; j++)
                        shared += load_word(k, i, 1) == load_word(k, j, 1) &&
                                  load_word(k, i, 0) != load_word(k, j, 0);
        ck_assert_msg(shared > n, "%s: %zu pairs share only their high word",
                      sortd_key_type_name(t), shared);
        free(k);
}
END_TEST

/* Few 128-bit values: pairs of them share their high word and differ in the low one. */
START_TEST(few_wide)
{
        const size_t n = 4000;
        unsigned char *k = malloc(n * 16);
        size_t high_only = 0, both = 0;

        ck_assert_ptr_nonnull(k);
        datagen_fill(k, n, (sortd_key_type)(SORTD_KEY_U128 + _i), DATAGEN_FEW, 16, 8);
        ck_assert_uint_eq(count_distinct(k, n, 16), 16);
        for (size_t i = 1; i < n; i++) {
                bool hi = load_word(k, i, 1) == load_word(k, i - 1, 1);
                bool lo = load_word(k, i, 0) == load_word(k, i - 1, 0);

                high_only += hi && !lo;
                both += hi && lo;
        }
        ck_assert_uint_gt(high_only, n / 50);
        ck_assert_uint_gt(both, n / 50);
        free(k);
}
END_TEST

static Suite *datagen_suite(void)
{
        Suite *s = suite_create("datagen");
        TCase *tc = tcase_create("datagen");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, names_round_trip);
        tcase_add_test(tc, values);
        tcase_add_test(tc, values_in_parts);
        tcase_add_loop_test(tc, deterministic, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_loop_test(tc, parts_match_whole, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_loop_test(tc, sorted_and_reverse, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_loop_test(tc, equal_few_negative, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_loop_test(tc, entropy, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_loop_test(tc, special_floats, 0, 4);
        tcase_add_loop_test(tc, special_integers, 0, 8);
        tcase_add_loop_test(tc, special_wide, 0, 2);
        tcase_add_loop_test(tc, few_wide, 0, 2);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return run_suite(datagen_suite());
}
