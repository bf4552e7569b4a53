/*
 * The CPU engine's planning on its own (kernels/cpu/plan.c): which places
 * need a pass, and what sortd__pass_make() decides for a pass from the plan
 * and its place's histogram: buckets or counting first, a dominant digit,
 * the AVX-512 split, direct and streaming stores, the first and last pass's
 * key maps. No keys are sorted; test_cpu_engine.c sorts them.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "cpu/plan.h"
#include "suite.h"

#define TILE ((size_t)SORTD__CPU_TILE_KEYS)

static sortd__plan plan_of(unsigned key_bytes, unsigned val_bytes, enum sortd__key_kind kind,
                           bool descending)
{
        return (sortd__plan){
                .key_bytes = key_bytes,
                .val_bytes = val_bytes,
                .kind = kind,
                .descending = descending,
                .end_bit = 8 * key_bytes,
        };
}

/* Exclusive offsets of one place whose digit d has count[d] keys. */
static void offsets_of(const uint64_t *count, uint64_t *goff)
{
        uint64_t sum = 0;

        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                goff[d] = sum;
                sum += count[d];
        }
}

/* n keys: `top` of them have digit dom, the rest spread over the others. */
static void histogram_of(size_t n, unsigned dom, size_t top, uint64_t *goff)
{
        uint64_t count[SORTD__RADIX];

        for (unsigned d = 0; d < SORTD__RADIX; d++)
                count[d] = d == dom ? top : (n - top) / (SORTD__RADIX - 1);
        count[dom == 0 ? 1 : 0] += (n - top) % (SORTD__RADIX - 1);
        offsets_of(count, goff);
}

static void uniform(size_t n, uint64_t *goff)
{
        histogram_of(n, 0, n / SORTD__RADIX + n % SORTD__RADIX, goff);
}

/* Digit 5 holds all but 1/32 of the keys: over the dominant share. */
static void dominant(size_t n, uint64_t *goff)
{
        histogram_of(n, 5, n - n / 32, goff);
}

/* Where a pass stands: n keys, pass `index` of `passes` over digit place
   `place`, on a CPU with AVX-512 or not, with the caller's keys aligned or
   not. */
struct pass_case {
        size_t n;
        unsigned index, passes, place;
        bool split512, keys_aligned;
};

static sortd__pass make(const sortd__plan *plan, const uint64_t *goff, struct pass_case c)
{
        const sortd__pass_in in = {
                .plan = plan,
                .n = c.n,
                .index = c.index,
                .passes = c.passes,
                .place = c.place,
                .goff = goff,
                .split512 = c.split512,
                .keys_aligned = c.keys_aligned,
        };
        sortd__pass p;

        sortd__pass_make(&in, &p);
        return p;
}

/* A place whose keys all have one digit needs no pass, summed over the
   threads that counted: each of two threads seeing one digit is not enough. */
START_TEST(places_skip_single_bins)
{
        sortd__cpu_scratch *s = calloc(2, sizeof(*s));
        uint64_t goff[SORTD__MAX_PLACES][SORTD__RADIX];
        unsigned places[SORTD__MAX_PLACES];

        ck_assert_ptr_nonnull(s);
        /* Thread 0 counted 10 keys, thread 1 5. */
        s[0].hist[0][1] = 4, s[0].hist[0][3] = 6, s[1].hist[0][2] = 5;
        s[0].hist[1][7] = 10, s[1].hist[1][7] = 5;
        s[0].hist[2][3] = 10, s[1].hist[2][9] = 5;
        s[0].hist[3][0] = 10, s[1].hist[3][0] = 5;
        ck_assert_uint_eq(sortd__plan_places(s, 2, 4, goff, places), 2);
        ck_assert_uint_eq(places[0], 0);
        ck_assert_uint_eq(places[1], 2);
        ck_assert_uint_eq(goff[0][2], 4);
        ck_assert_uint_eq(goff[0][3], 9);
        ck_assert_uint_eq(goff[0][4], 15);
        ck_assert_uint_eq(goff[2][4], 10);
        ck_assert_uint_eq(goff[2][10], 15);
        /* Thread 0 alone saw one digit of place 2. */
        ck_assert_uint_eq(sortd__plan_places(s, 1, 4, goff, places), 1);
        ck_assert_uint_eq(places[0], 0);
        free(s);
}
END_TEST

/* Buckets from two tiles of keys, each a tile's expected count of its digit
   plus five standard deviations and the slack. */
START_TEST(buckets_from_two_tiles)
{
        const sortd__plan keys = plan_of(4, 0, SORTD__KEY_UNSIGNED, false);
        const sortd__plan pairs = plan_of(4, 4, SORTD__KEY_UNSIGNED, false);
        const size_t n = 2 * TILE;
        uint64_t goff[SORTD__RADIX];
        sortd__pass p;

        uniform(n - 1, goff);
        p = make(&keys, goff, (struct pass_case){n - 1, 1, 4, 1, true, true});
        ck_assert(!p.buckets);
        ck_assert_int_eq(p.dominant, -1);
        uniform(n, goff);
        p = make(&keys, goff, (struct pass_case){n, 1, 4, 1, true, true});
        ck_assert(p.buckets);
        ck_assert_int_eq(p.dominant, -1);
        ck_assert(!p.split && !p.direct);
        /* A tile expects 512 keys of each digit: 512 + 5 * 22 + 16 slots. */
        ck_assert_uint_eq(p.bucket_start[0], 0);
        ck_assert_uint_eq(p.bucket_cap[0], 638);
        ck_assert_uint_eq(p.bucket_start[1], 638);
        ck_assert_uint_eq(p.bucket_start[255], 255 * 638);
        p = make(&pairs, goff, (struct pass_case){n, 1, 4, 1, true, true});
        ck_assert(p.buckets);
}
END_TEST

/* A digit with nearly every key goes through a register in keys-only sorts;
   with values its place is skewed, and counts first. */
START_TEST(dominant_keys_only)
{
        const sortd__plan keys = plan_of(4, 0, SORTD__KEY_UNSIGNED, false);
        const sortd__plan pairs = plan_of(4, 4, SORTD__KEY_UNSIGNED, false);
        sortd__plan argsort = plan_of(4, 4, SORTD__KEY_UNSIGNED, false);
        const size_t n = 8 * TILE;
        const struct pass_case c = {n, 1, 4, 1, false, true};
        uint64_t goff[SORTD__RADIX];
        sortd__pass p;

        argsort.argsort = true;
        dominant(n, goff);
        p = make(&keys, goff, c);
        ck_assert(p.buckets);
        ck_assert_int_eq(p.dominant, 5);
        ck_assert_uint_eq(p.bucket_cap[5], TILE);
        p = make(&pairs, goff, c);
        ck_assert(!p.buckets);
        ck_assert_int_eq(p.dominant, -1);
        p = make(&argsort, goff, c);
        ck_assert(!p.buckets);
        ck_assert_int_eq(p.dominant, -1);
        /* Half the keys on one digit: skewed, not dominant. */
        histogram_of(n, 5, n / 2, goff);
        p = make(&keys, goff, c);
        ck_assert(!p.buckets);
        ck_assert_int_eq(p.dominant, -1);
}
END_TEST

/* The split takes bucket tiles of u32 keys that the pass does not map, on a
   CPU that has AVX-512; elsewhere a dominant digit's keys go straight to the
   output once the pass streams, if the caller's keys are aligned. */
START_TEST(split_where_it_applies)
{
        const sortd__plan u32 = plan_of(4, 0, SORTD__KEY_UNSIGNED, false);
        const sortd__plan i32 = plan_of(4, 0, SORTD__KEY_SIGNED, false);
        const sortd__plan u32_down = plan_of(4, 0, SORTD__KEY_UNSIGNED, true);
        const sortd__plan u64 = plan_of(8, 0, SORTD__KEY_UNSIGNED, false);
        const size_t small = 8 * TILE, big = 40 * TILE; /* 4 MiB and 20 MiB of u32 */
        uint64_t goff_small[SORTD__RADIX], goff_big[SORTD__RADIX];
        sortd__pass p;

        dominant(small, goff_small);
        dominant(big, goff_big);
        p = make(&u32, goff_small, (struct pass_case){small, 1, 4, 1, true, true});
        ck_assert(p.split && !p.stream && !p.direct);
        p = make(&u32, goff_small, (struct pass_case){small, 1, 4, 1, false, true});
        ck_assert(!p.split && !p.direct);
        p = make(&u32, goff_big, (struct pass_case){big, 1, 4, 1, true, true});
        ck_assert(p.split && p.stream && !p.direct);
        p = make(&u32, goff_big, (struct pass_case){big, 1, 4, 1, false, true});
        ck_assert(!p.split && p.direct);
        p = make(&u32, goff_big, (struct pass_case){big, 1, 4, 1, false, false});
        ck_assert(!p.split && !p.direct);
        /* Mapped keys: signed ones in the first pass, not in a middle one. */
        p = make(&i32, goff_small, (struct pass_case){small, 0, 4, 0, true, true});
        ck_assert(p.twiddle && p.dominant == 5 && !p.split);
        p = make(&i32, goff_small, (struct pass_case){small, 1, 4, 1, true, true});
        ck_assert(!p.twiddle && p.split);
        p = make(&u32_down, goff_small, (struct pass_case){small, 0, 1, 3, true, true});
        ck_assert(p.twiddle && !p.split);
        p = make(&u64, goff_small, (struct pass_case){small, 1, 4, 1, true, true});
        ck_assert(p.dominant == 5 && !p.split);
        /* Below two tiles: no buckets, so neither. */
        dominant(TILE, goff_small);
        p = make(&u32, goff_small, (struct pass_case){TILE, 1, 4, 1, true, true});
        ck_assert(!p.buckets && p.dominant == -1 && !p.split);
}
END_TEST

/* The first pass maps keys on load, generates argsort's indices and takes
   place 0's counts from the histogram pass; the last maps keys back on
   store. Places narrow to the plan's bit range. */
START_TEST(first_and_last_pass)
{
        sortd__plan plan = plan_of(2, 8, SORTD__KEY_SIGNED, false);
        const size_t n = (16u << 20) / 10 + 1; /* 16 MiB of keys and indices */
        uint64_t goff[SORTD__RADIX];
        sortd__pass p;

        plan.argsort = true;
        plan.begin_bit = 4;
        uniform(n, goff);
        p = make(&plan, goff, (struct pass_case){n, 0, 2, 0, false, true});
        ck_assert(p.precounted && p.gen_index && p.twiddle && p.stream);
        ck_assert(!sortd__twiddle_is_identity(p.load_tw));
        ck_assert(sortd__twiddle_is_identity(p.store_tw));
        ck_assert_uint_eq(p.shift, 4);
        ck_assert_uint_eq(p.mask, 0xff);
        ck_assert_uint_eq(p.ntiles, (n + TILE - 1) / TILE);
        p = make(&plan, goff, (struct pass_case){n, 1, 2, 1, false, true});
        ck_assert(!p.precounted && !p.gen_index && p.twiddle);
        ck_assert(sortd__twiddle_is_identity(p.load_tw));
        ck_assert(!sortd__twiddle_is_identity(p.store_tw));
        ck_assert_uint_eq(p.shift, 12);
        ck_assert_uint_eq(p.mask, 0xf);
        /* Place 0 skipped: the first pass has no counts to take. */
        p = make(&plan, goff, (struct pass_case){n, 0, 1, 1, false, true});
        ck_assert(!p.precounted && p.gen_index);
        p = make(&plan, goff, (struct pass_case){n - 1, 0, 2, 0, false, true});
        ck_assert(!p.stream);
}
END_TEST

START_TEST(threads_per_keys)
{
        ck_assert_uint_eq(sortd__plan_threads(8, 1), 1);
        ck_assert_uint_eq(sortd__plan_threads(8, SORTD__KEYS_PER_THREAD * 2 - 1), 1);
        ck_assert_uint_eq(sortd__plan_threads(8, SORTD__KEYS_PER_THREAD * 3), 3);
        ck_assert_uint_eq(sortd__plan_threads(2, SORTD__KEYS_PER_THREAD * 3), 2);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("cpu-plan");
        TCase *tc = tcase_create("plan");

        tcase_add_test(tc, places_skip_single_bins);
        tcase_add_test(tc, buckets_from_two_tiles);
        tcase_add_test(tc, dominant_keys_only);
        tcase_add_test(tc, split_where_it_applies);
        tcase_add_test(tc, first_and_last_pass);
        tcase_add_test(tc, threads_per_keys);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
