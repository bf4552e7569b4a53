/*
 * sortd_engine_sort_batch on the CPU engine: batches that mix every key type, payload, order,
 * bit range and size (small members spread over the threads, larger ones through Onesweep)
 * give each member exactly what the reference sort gives it alone; a member that fails its
 * checks fails alone.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/small.h"
#include "datagen.h"
#include "engine.h"
#include "reference.h"
#include "suite.h"

#define CAPACITY ((size_t)SORTD__SMALL_KEYS * 2)
#define MEMBERS 48

static uint64_t mix(uint64_t z)
{
        z += 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
}

/* A member's input, and the reference's answer from a copy of it. */
typedef struct member {
        sortd_engine_batch_item item;
        void *want_k, *want_v;
} member;

static size_t pick_n(uint64_t r)
{
        switch (r % 8) {
        case 0:
                return r >> 60; /* 0 to 15: n = 0 and 1 included */
        case 1:
                return SORTD__SMALL_KEYS + 1 + (r >> 40) % SORTD__SMALL_KEYS; /* Onesweep */
        case 2:
                return SORTD__SMALL_KEYS - (r >> 60); /* the small sort's edge */
        default:
                return 2 + (r >> 20) % 5000;
        }
}

static void member_make(member *m, uint64_t seed, int key_type)
{
        uint64_t r = mix(seed);
        sortd_sort_desc d = {
                .key_type = key_type >= 0 ? (sortd_key_type)key_type
                                          : (sortd_key_type)((r >> 8) % SORTD_KEY_TYPE_COUNT),
                .payload = (sortd_payload)((r >> 16) % SORTD_PAYLOAD_COUNT),
                .order = (sortd_order)((r >> 24) & 1),
        };
        unsigned width = 8 * (unsigned)sortd_key_size(d.key_type);
        size_t n = pick_n(mix(r)), kb = sortd_key_size(d.key_type),
               vb = sortd_payload_size(d.payload);

        if ((r >> 28) % 4 == 0) { /* a bit range */
                d.begin_bit = (unsigned)((r >> 32) % width);
                d.end_bit = d.begin_bit + 1 + (unsigned)((r >> 40) % (width - d.begin_bit));
        }
        m->item = (sortd_engine_batch_item){.desc = d, .n = n, .status = SORTD_E_SYSTEM};
        m->item.keys = malloc(n * kb + 1);
        m->want_k = malloc(n * kb + 1);
        ck_assert(m->item.keys && m->want_k);
        datagen_fill(m->item.keys, n, d.key_type, (datagen_dist)((r >> 48) % DATAGEN_DIST_COUNT),
                     (r >> 56) % 2 ? 4 : 16, seed);
        memcpy(m->want_k, m->item.keys, n * kb);
        m->want_v = NULL;
        if (vb) {
                m->item.vals = malloc(n * vb + 1);
                m->want_v = malloc(n * vb + 1);
                ck_assert(m->item.vals && m->want_v);
                datagen_fill_values(m->item.vals, n, (unsigned)vb, ~seed);
                memcpy(m->want_v, m->item.vals, n * vb);
        }
        ck_assert_int_eq(ref_sort(&d, m->want_k, m->want_v, n), 0);
}

static void member_check(const member *m, size_t i)
{
        const sortd_engine_batch_item *it = &m->item;
        size_t kb = sortd_key_size(it->desc.key_type), vb = sortd_payload_size(it->desc.payload);

        ck_assert_msg(it->status == SORTD_OK, "member %zu: %s", i, it->why);
        ck_assert_str_eq(it->why, "");
        ck_assert_msg(memcmp(it->keys, m->want_k, it->n * kb) == 0,
                      "member %zu (%s %s n=%zu bits [%u,%u)): keys differ", i,
                      sortd_key_type_name(it->desc.key_type), sortd_payload_name(it->desc.payload),
                      it->n, it->desc.begin_bit, it->desc.end_bit);
        if (vb)
                ck_assert_msg(memcmp(it->vals, m->want_v, it->n * vb) == 0,
                              "member %zu (%s %s n=%zu): values differ", i,
                              sortd_key_type_name(it->desc.key_type),
                              sortd_payload_name(it->desc.payload), it->n);
}

static void member_free(member *m)
{
        free(m->item.keys);
        free(m->item.vals);
        free(m->want_k);
        free(m->want_v);
}

static sortd_engine *engine(unsigned threads)
{
        sortd_engine_config cfg = {.capacity = CAPACITY, .threads = threads};
        sortd_engine *e = NULL;
        char why[256];

        ck_assert_msg(sortd_engine_create("cpu", &cfg, &e, why, sizeof(why)) == SORTD_OK, "%s",
                      why);
        return e;
}

/* _i: the key type of every member, or -1 (as SORTD_KEY_TYPE_COUNT) for a mix of all. */
static void run_batch(unsigned threads, int key_type, uint64_t seed)
{
        sortd_engine *e = engine(threads);
        sortd_engine_batch_item items[MEMBERS];
        member m[MEMBERS];

        for (size_t i = 0; i < MEMBERS; i++)
                member_make(&m[i], seed * 1000 + i, key_type);
        for (size_t i = 0; i < MEMBERS; i++)
                items[i] = m[i].item;
        ck_assert_msg(sortd_engine_sort_batch(e, items, MEMBERS) == SORTD_OK, "%s",
                      sortd_engine_error(e));
        for (size_t i = 0; i < MEMBERS; i++) {
                m[i].item = items[i];
                member_check(&m[i], i);
                member_free(&m[i]);
        }
        sortd_engine_destroy(e);
}

START_TEST(one_key_type)
{
        run_batch(2, _i, (uint64_t)_i + 1);
}
END_TEST

START_TEST(mixed_types)
{
        run_batch(_i % 2 ? 2 : 1, -1, 100 + (uint64_t)_i);
}
END_TEST

/* Members that fail their checks fail alone, each with its own message. */
START_TEST(bad_members_fail_alone)
{
        sortd_engine *e = engine(2);
        uint32_t a[1000], b[1000], c[1000];
        uint64_t idx[1000];
        sortd_engine_batch_item items[5] = {
                {.desc = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE}, .keys = a, .n = 1000},
                {.desc = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, .begin_bit = 8, .end_bit = 40},
                 .keys = b,
                 .n = 1000},
                {.desc = {SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT64},
                 .keys = c,
                 .vals = idx,
                 .n = 1000},
                {.desc = {SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32}, .keys = c, .vals = NULL, .n = 10},
                {.desc = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE}, .keys = a, .n = CAPACITY + 1},
        };

        for (uint32_t i = 0; i < 1000; i++)
                a[i] = b[i] = c[i] = (uint32_t)mix(i);
        ck_assert_int_eq(sortd_engine_sort_batch(e, items, 5), SORTD_E_INVAL);
        ck_assert_msg(strstr(sortd_engine_error(e), "item 1 of 5: "), "%s", sortd_engine_error(e));
        ck_assert_int_eq(items[0].status, SORTD_OK);
        ck_assert_int_eq(items[1].status, SORTD_E_INVAL);
        ck_assert_msg(strstr(items[1].why, "bit"), "%s", items[1].why);
        ck_assert_int_eq(items[2].status, SORTD_OK);
        ck_assert_int_eq(items[3].status, SORTD_E_INVAL);
        ck_assert_msg(strstr(items[3].why, "vals is NULL"), "%s", items[3].why);
        ck_assert_int_eq(items[4].status, SORTD_E_CAPACITY);
        for (size_t i = 1; i < 1000; i++) {
                ck_assert_uint_le(a[i - 1], a[i]);
                ck_assert_uint_le(c[i - 1], c[i]);
                ck_assert_uint_eq(c[i], (uint32_t)mix(idx[i]));
                ck_assert_uint_eq(b[i], (uint32_t)mix(i)); /* untouched */
        }
        /* An empty batch, and one whose members have nothing to sort. */
        ck_assert_int_eq(sortd_engine_sort_batch(e, NULL, 0), SORTD_OK);
        ck_assert_int_eq(sortd_engine_sort_batch(e, NULL, 1), SORTD_E_INVAL);
        sortd_engine_batch_item one = {
                .desc = {SORTD_KEY_U8, SORTD_PAYLOAD_ARGSORT32}, .keys = a, .vals = b, .n = 1};
        b[0] = 77;
        ck_assert_int_eq(sortd_engine_sort_batch(e, &one, 1), SORTD_OK);
        ck_assert_uint_eq(b[0], 0);
        ck_assert_str_eq(sortd_engine_error(e), "");
        sortd_engine_destroy(e);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("engine_batch");
        TCase *tc = tcase_create("batch");

        tcase_set_timeout(tc, 600);
        tcase_add_loop_test(tc, one_key_type, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_loop_test(tc, mixed_types, 0, 4);
        tcase_add_test(tc, bad_members_fail_alone);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
