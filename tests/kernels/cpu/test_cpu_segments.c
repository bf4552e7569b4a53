/*
 * The CPU engine's segmented sort and top-k against the reference (ref_sort_segments, ref_topk):
 * every key type, payload and order, bit ranges, segment layouts that put segments in each of
 * the engine's size classes and at their bounds (insertion sort, small sort, Onesweep), offsets
 * of both widths and uniform rows, k from 1 past n, data with ties, NaNs and signed zeros at the
 * k-th key, keys in shared memory, and the checks of engine_segments.c.
 *
 * Every comparison is byte for byte, in buffers with guard bytes; top-k's inputs must come back
 * unchanged; argsort outputs are prefilled with a pattern no index has.
 *
 * CK_RUN_CASE=sort|sort-layouts|topk|topk-k|shared|errors runs one part (meson runs each as its
 * own test). SORTD_TEST_SEED=<number> changes the data.
 */
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/small.h"
#include "cpu_check.h"
#include "reference.h"
#include "suite.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))
#define TINY ((uint64_t)SORTD__TINY_KEYS)
#define SMALL ((uint64_t)SORTD__SMALL_KEYS)

/* ---- layouts ------------------------------------------------------------------------------- */

struct layout {
        const char *name;
        sortd_segments seg;
        bool whole; /* top-k with seg NULL: one segment of n keys */
        void *offsets;
        size_t n;
};

static struct layout from_lengths(const char *name, const uint64_t *len, size_t count,
                                  unsigned offset_bytes)
{
        struct layout l = {.name = name};
        uint64_t at = 0;

        l.offsets = malloc((count + 1) * offset_bytes);
        ck_assert_ptr_nonnull(l.offsets);
        for (size_t i = 0; i <= count; i++) {
                if (offset_bytes == 4)
                        ((uint32_t *)l.offsets)[i] = (uint32_t)at;
                else
                        ((uint64_t *)l.offsets)[i] = at;
                at += i < count ? len[i] : 0;
        }
        l.seg = (sortd_segments){
                .count = count, .offsets = l.offsets, .offset_bytes = offset_bytes};
        l.n = at;
        return l;
}

static struct layout rows(const char *name, uint64_t count, uint64_t row_len)
{
        return (struct layout){
                .name = name, .seg = {.count = count, .row_len = row_len}, .n = count * row_len};
}

static struct layout whole(size_t n)
{
        struct layout l = rows("whole (no segments)", 1, n);

        l.whole = true;
        return l;
}

static void layout_free(struct layout *l)
{
        free(l->offsets);
        l->offsets = NULL;
}

/* Lengths in and around every size class: empty, one key, the insertion sort's bounds, small
   ones, some hundreds; count of them, from seed. */
static uint64_t *mixed_lengths(size_t count, uint64_t seed)
{
        static const uint64_t pick[] = {0, 1, 2, 3, TINY - 1, TINY, TINY + 1, 100, 777, 2000};
        uint64_t *len = malloc(count * sizeof(*len));

        ck_assert_ptr_nonnull(len);
        for (size_t i = 0; i < count; i++)
                len[i] = pick[mix(seed + i) % LEN(pick)];
        return len;
}

/* ---- cases --------------------------------------------------------------------------------- */

/* Not datagen's: float keys of five values (fill_zeros_and_nans). */
#define DIST_ZEROS_NANS ((datagen_dist)DATAGEN_DIST_COUNT)

struct seg_case {
        sortd_sort_desc desc;
        struct dist dist;
        const struct layout *l;
        sortd_memory where;
        uint64_t seed;
};

static const char *seg_describe(const struct seg_case *c, const char *what, uint64_t k, char *buf,
                                size_t len)
{
        struct sort_case sc = {.desc = c->desc, .dist = c->dist, .n = c->l->n, .seed = c->seed};
        char base[256];

        if (c->dist.dist == DIST_ZEROS_NANS)
                sc.dist = (struct dist){DATAGEN_SPECIAL, 0}; /* named below */
        describe(&sc, base, sizeof(base));
        snprintf(buf, len, "%s k=%" PRIu64 " layout '%s' (%" PRIu64 " segments)%s%s: %s", what, k,
                 c->l->name, c->l->seg.count, c->where == SORTD_MEMORY_SHARED ? " shared" : "",
                 c->dist.dist == DIST_ZEROS_NANS ? " keys +-0, NaNs and 1.0" : "", base);
        return buf;
}

/* Float keys drawn from +-0, NaNs of both signs and 1.0: every cut falls among ties. */
static void fill_zeros_and_nans(void *keys, size_t n, sortd_key_type t, uint64_t seed)
{
        static const uint32_t f32[] = {0x00000000, 0x80000000, 0x7fc00000,
                                       0xffc00000, 0x3f800000, 0x7fc00001};
        static const uint64_t f64[] = {0, 0x8000000000000000ull, 0x7ff8000000000000ull,
                                       0xfff8000000000000ull, 0x3ff0000000000000ull};

        for (size_t i = 0; i < n; i++) {
                uint64_t r = mix(seed ^ i);

                if (t == SORTD_KEY_F32)
                        ((uint32_t *)keys)[i] = f32[r % LEN(f32)];
                else
                        ((uint64_t *)keys)[i] = f64[r % LEN(f64)];
        }
}

static void make_input(const struct seg_case *c, struct input *in)
{
        size_t n = c->l->n;

        in->kb = sortd_key_size(c->desc.key_type);
        in->vb = sortd_payload_size(c->desc.payload);
        in->keys = malloc(n * in->kb + 1);
        in->vals = malloc(n * in->vb + 1);
        ck_assert(in->keys && in->vals);
        if (c->dist.dist == DIST_ZEROS_NANS)
                fill_zeros_and_nans(in->keys, n, c->desc.key_type, c->seed);
        else
                datagen_fill(in->keys, n, c->desc.key_type, c->dist.dist, c->dist.param, c->seed);
        if (is_argsort(c->desc.payload))
                memset(in->vals, ARGSORT_FILL, n * in->vb);
        else if (in->vb)
                datagen_fill_values(in->vals, n, (unsigned)in->vb, ~c->seed);
}

static void *copy_of(const void *p, size_t bytes)
{
        void *q = malloc(bytes + 1);

        ck_assert_ptr_nonnull(q);
        memcpy(q, p, bytes);
        return q;
}

static void expect_ok(sortd_engine *e, sortd_status s, const char *name)
{
        ck_assert_msg(s == SORTD_OK, "%s: %s: %s", name, sortd_strerror(s), sortd_engine_error(e));
        ck_assert_msg(sortd_engine_error(e)[0] == '\0', "%s: message '%s' after success", name,
                      sortd_engine_error(e));
}

/* The engine's segmented sort of c's input against the reference's; returns whether it moved
   anything. */
static bool check_sort(sortd_engine *e, const struct seg_case *c)
{
        size_t n = c->l->n;
        struct input in;
        struct guarded k, v;
        char name[512];
        void *want_k, *want_v;
        bool moved;

        seg_describe(c, "sort_segments", 0, name, sizeof(name));
        make_input(c, &in);
        want_k = copy_of(in.keys, n * in.kb);
        want_v = copy_of(in.vals, n * in.vb);
        ck_assert_int_eq(ref_sort_segments(&c->desc, &c->l->seg, want_k, in.vb ? want_v : NULL, n),
                         0);
        guarded_alloc(&k, n * in.kb);
        guarded_alloc(&v, n * in.vb);
        memcpy(k.p, in.keys, n * in.kb);
        memcpy(v.p, in.vals, n * in.vb);
        expect_ok(e,
                  sortd_engine_sort_segments(e, &c->desc, &c->l->seg, c->where, k.p,
                                             in.vb ? v.p : NULL, n),
                  name);
        expect_same(name, "keys", k.p, want_k, n, in.kb);
        expect_same(name, "vals", v.p, want_v, n, in.vb);
        guarded_check_free(&k, "keys", name);
        guarded_check_free(&v, "vals", name);
        moved = memcmp(want_k, in.keys, n * in.kb) != 0 || memcmp(want_v, in.vals, n * in.vb) != 0;
        free(want_k);
        free(want_v);
        input_free(&in);
        return moved;
}

/* The engine's top-k of c's input against the reference's, inputs untouched. */
static void check_topk_in(sortd_engine *e, const struct seg_case *c, const struct input *in,
                          uint64_t kk)
{
        const sortd_segments *seg = c->l->whole ? NULL : &c->l->seg;
        size_t n = c->l->n, m = (size_t)sortd_topk_results(seg, n, kk);
        bool argsort = is_argsort(c->desc.payload);
        struct guarded k, v, ok, ov;
        char name[512];
        unsigned char *want_k = malloc(m * in->kb + 1), *want_v = malloc(m * in->vb + 1);

        seg_describe(c, "topk", kk, name, sizeof(name));
        ck_assert(want_k && want_v);
        ck_assert_int_eq(
                ref_topk(&c->desc, seg, kk, in->keys, argsort ? NULL : in->vals, want_k, want_v, n),
                0);
        guarded_alloc(&k, n * in->kb);
        guarded_alloc(&v, n * in->vb);
        guarded_alloc(&ok, m * in->kb);
        guarded_alloc(&ov, m * in->vb);
        memcpy(k.p, in->keys, n * in->kb);
        memcpy(v.p, in->vals, n * in->vb);
        memset(ok.p, ARGSORT_FILL, m * in->kb);
        memset(ov.p, ARGSORT_FILL, m * in->vb);
        expect_ok(e,
                  sortd_engine_topk(e, &c->desc, seg, kk, c->where, k.p,
                                    in->vb && !argsort ? v.p : NULL, ok.p, in->vb ? ov.p : NULL, n),
                  name);
        expect_same(name, "result keys", ok.p, want_k, m, in->kb);
        expect_same(name, "result vals", ov.p, want_v, m, in->vb);
        expect_same(name, "input keys (read only)", k.p, in->keys, n, in->kb);
        expect_same(name, "input vals (read only)", v.p, in->vals, n, in->vb);
        guarded_check_free(&k, "keys", name);
        guarded_check_free(&v, "vals", name);
        guarded_check_free(&ok, "out_keys", name);
        guarded_check_free(&ov, "out_vals", name);
        free(want_k);
        free(want_v);
}

static void check_topk(sortd_engine *e, const struct seg_case *c, const uint64_t *ks, size_t nk)
{
        struct input in;

        make_input(c, &in);
        for (size_t i = 0; i < nk; i++)
                check_topk_in(e, c, &in, ks[i]);
        input_free(&in);
}

static struct seg_case seg_case(sortd_key_type t, sortd_payload p, sortd_order o, struct dist d,
                                const struct layout *l)
{
        return (struct seg_case){
                .desc = {.key_type = t, .payload = p, .order = o},
                .dist = d,
                .l = l,
                .seed = case_seed(((uint64_t)t << 16) | ((uint64_t)p << 8) | o,
                                  ((uint64_t)d.dist << 8) | d.param, l->n ^ l->seg.count),
        };
}

static const struct dist some_dists[] = {
        {DATAGEN_UNIFORM, 0}, {DATAGEN_FEW, 16}, {DATAGEN_SPECIAL, 0}, {DATAGEN_ENTROPY, 8}};

/* ---- the segmented sort -------------------------------------------------------------------- */

/* Every payload x order x some distributions, for key type _i, on mixed lengths by u32 and
   u64 offsets and on uniform rows. */
START_TEST(sort_matrix)
{
        uint64_t *len = mixed_lengths(300, 7);
        struct layout ls[] = {
                from_lengths("mixed, u32 offsets", len, 300, 4),
                from_lengths("mixed, u64 offsets", len, 300, 8),
                rows("rows of 50", 200, 50),
        };
        sortd_engine *e = engine_new(SMALL * 2, 0);
        size_t cases = 0, moved = 0;

        for (size_t l = 0; l < LEN(ls); l++)
                for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                                for (size_t d = 0; d < LEN(some_dists); d++) {
                                        struct seg_case c =
                                                seg_case(_i, p, o, some_dists[d], &ls[l]);

                                        moved += check_sort(e, &c);
                                        cases++;
                                }
        ck_assert_uint_ge(moved * 2, cases);
        for (size_t l = 0; l < LEN(ls); l++)
                layout_free(&ls[l]);
        free(len);
        sortd_engine_destroy(e);
}
END_TEST

/* Bit ranges decide alone, in segments of every class. */
START_TEST(sort_bit_ranges)
{
        static const sortd_key_type types[] = {SORTD_KEY_U8,  SORTD_KEY_I16, SORTD_KEY_F32,
                                               SORTD_KEY_I32, SORTD_KEY_U64, SORTD_KEY_F64};
        static const uint64_t len[] = {5, TINY, 1000, SMALL + 3, 0, 2};
        struct layout l = from_lengths("classes", len, LEN(len), 4);
        sortd_engine *e = engine_new(l.n, 2);

        for (size_t t = 0; t < LEN(types); t++) {
                unsigned w = 8 * (unsigned)sortd_key_size(types[t]);
                const unsigned ranges[][2] = {{0, 1}, {w / 2, w - 1}, {1, w}, {w - 3, 0}};

                for (size_t r = 0; r < LEN(ranges); r++)
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                                struct seg_case c = seg_case(types[t], SORTD_PAYLOAD_ARGSORT32, o,
                                                             some_dists[2], &l);

                                c.desc.begin_bit = ranges[r][0];
                                c.desc.end_bit = ranges[r][1];
                                check_sort(e, &c);
                        }
        }
        layout_free(&l);
        sortd_engine_destroy(e);
}
END_TEST

/* Lengths at each class's bounds, one at a time and together. */
START_TEST(sort_class_bounds)
{
        static const uint64_t len[] = {1,         2,     TINY - 1,  TINY,     TINY + 1, 0,
                                       SMALL - 1, SMALL, SMALL + 1, 8192 + 1, 3};
        struct layout l = from_lengths("class bounds", len, LEN(len), 8);
        sortd_engine *e = engine_new(l.n, 0);

        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                        struct seg_case c = seg_case(_i ? SORTD_KEY_U64 : SORTD_KEY_F32, p, o,
                                                     some_dists[0], &l);

                        ck_assert(check_sort(e, &c));
                }
        layout_free(&l);
        sortd_engine_destroy(e);
}
END_TEST

/* One segment; all empty but one; a huge one (Onesweep) among 10^4 tiny ones; rows. */
START_TEST(sort_layouts)
{
        const size_t huge = SMALL + 40000;
        uint64_t *len = mixed_lengths(10000, 3), *empty = calloc(100, sizeof(uint64_t));
        struct layout ls[4];
        sortd_engine *e;

        ck_assert_ptr_nonnull(empty);
        for (size_t i = 0; i < 10000; i++)
                len[i] %= 4; /* 0 to 3 keys */
        len[4321] = huge;
        empty[37] = 5000;
        ls[0] = from_lengths("huge among tiny", len, 10000, 4);
        ls[1] = from_lengths("all empty but one", empty, 100, 8);
        ls[2] = rows("one segment", 1, huge);
        ls[3] = rows("rows of 4000", 40, 4000);
        e = engine_new(ls[3].n, 0);
        for (size_t l = 0; l < LEN(ls); l++)
                for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++) {
                        struct seg_case c =
                                seg_case(SORTD_KEY_I32, p, p % 2, some_dists[l % 2], &ls[l]);

                        ck_assert(check_sort(e, &c));
                }
        for (size_t l = 0; l < LEN(ls); l++)
                layout_free(&ls[l]);
        free(len);
        free(empty);
        sortd_engine_destroy(e);
}
END_TEST

/* 10^6 segments of one or two keys: spread over the threads by chunks. */
START_TEST(sort_million_segments)
{
        const size_t count = 1000000;
        uint64_t *len = malloc(count * sizeof(*len));
        struct layout l;
        sortd_engine *e;

        ck_assert_ptr_nonnull(len);
        for (size_t i = 0; i < count; i++)
                len[i] = 1 + mix(i) % 2;
        l = from_lengths("10^6 of 1 or 2 keys", len, count, 4);
        e = engine_new(l.n, 0);
        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p += 3) {
                struct seg_case c = seg_case(SORTD_KEY_U32, p, SORTD_DESCENDING, some_dists[0], &l);

                ck_assert(check_sort(e, &c));
        }
        layout_free(&l);
        free(len);
        sortd_engine_destroy(e);
}
END_TEST

/* ---- top-k --------------------------------------------------------------------------------- */

/* Every payload x order for key type _i, k across the segments' lengths; the distributions and
   layouts taken in turn (the reference sorts every segment whole for each k). */
START_TEST(topk_matrix)
{
        static const uint64_t ks[] = {1, TINY + 1, 200, 5000};
        uint64_t *len = mixed_lengths(300, 11);
        struct layout ls[] = {
                from_lengths("mixed, u32 offsets", len, 300, 4),
                from_lengths("mixed, u64 offsets", len, 300, 8),
                rows("rows of 300", 100, 300),
        };
        sortd_engine *e = engine_new(SMALL * 2, 0);

        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                        unsigned turn = (unsigned)(_i + p * 2 + o);
                        struct seg_case c = seg_case(_i, p, o, some_dists[turn % LEN(some_dists)],
                                                     &ls[turn % LEN(ls)]);

                        check_topk(e, &c, ks, LEN(ks));
                }
        for (size_t l = 0; l < LEN(ls); l++)
                layout_free(&ls[l]);
        free(len);
        sortd_engine_destroy(e);
}
END_TEST

/* One large segment (every thread selects it), k from 1 past n: around the classes' bounds and a
   tile, a gather above the small sort's (own_keys), half, n - 1, n, n + 1. The first shape takes
   every k, the others a few, on 2 threads; 3 threads split the segment unevenly. */
START_TEST(topk_whole_array)
{
        const size_t n = 300000;
        const uint64_t all_ks[] = {1,         TINY - 1, TINY + 1, SMALL - 1, SMALL,
                                   SMALL + 1, TILE - 1, TILE + 1, 70000,     n / 2,
                                   n - 1,     n,        n + 1,    7};
        const uint64_t some_ks[] = {1, SMALL + 1, 70000, n / 2, n + 1};
        static const struct {
                sortd_key_type t;
                sortd_payload p;
                struct dist d;
        } shapes[] = {
                {SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT32, {DATAGEN_UNIFORM, 0}},
                {SORTD_KEY_F32, SORTD_PAYLOAD_VALUES64, {DATAGEN_SPECIAL, 0}},
                {SORTD_KEY_F64, SORTD_PAYLOAD_ARGSORT64, {DIST_ZEROS_NANS, 0}},
                {SORTD_KEY_I64, SORTD_PAYLOAD_VALUES32, {DATAGEN_FEW, 16}},
                {SORTD_KEY_U16, SORTD_PAYLOAD_NONE, {DATAGEN_EQUAL, 0}},
                {SORTD_KEY_I8, SORTD_PAYLOAD_ARGSORT32, {DATAGEN_UNIFORM, 0}},
        };
        struct layout l = whole(n);
        sortd_engine *e = engine_new(n + 1, _i ? 3 : 2);

        for (size_t s = 0; s < (_i ? 2 : LEN(shapes)); s++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                        struct seg_case c = seg_case(shapes[s].t, shapes[s].p, o, shapes[s].d, &l);

                        if (s == 0 && !_i)
                                check_topk(e, &c, all_ks, LEN(all_ks));
                        else if ((s + (size_t)o) % 2 == 0)
                                check_topk(e, &c, some_ks, LEN(some_ks));
                }
        sortd_engine_destroy(e);
}
END_TEST

/* Ties, NaNs and signed zeros at the k-th key, in segments of every class, with bit ranges. */
START_TEST(topk_ties)
{
        static const uint64_t len[] = {7, TINY + 5, 3000, SMALL + 5000, 1, 0, 500};
        const uint64_t ks[] = {1, 3, TINY, 1500, 2999, SMALL / 2};
        struct layout l = from_lengths("classes", len, LEN(len), 8);
        sortd_engine *e = engine_new(l.n, 0);

        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                struct seg_case c[] = {
                        seg_case(SORTD_KEY_F32, SORTD_PAYLOAD_ARGSORT32, o,
                                 (struct dist){DIST_ZEROS_NANS, 0}, &l),
                        seg_case(SORTD_KEY_F64, SORTD_PAYLOAD_VALUES64, o,
                                 (struct dist){DIST_ZEROS_NANS, 0}, &l),
                        seg_case(SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32, o,
                                 (struct dist){DATAGEN_FEW, 16}, &l),
                        seg_case(SORTD_KEY_I64, SORTD_PAYLOAD_ARGSORT64, o,
                                 (struct dist){DATAGEN_EQUAL, 0}, &l),
                };

                for (size_t i = 0; i < LEN(c); i++)
                        check_topk(e, &c[i], ks, LEN(ks));
                /* only the bits [3, 11) decide: many more ties */
                c[2].desc.begin_bit = 3;
                c[2].desc.end_bit = 11;
                c[2].dist = some_dists[0];
                check_topk(e, &c[2], ks, LEN(ks));
                c[3].desc.begin_bit = 60;
                c[3].dist = some_dists[2];
                check_topk(e, &c[3], ks, LEN(ks));
        }
        layout_free(&l);
        sortd_engine_destroy(e);
}
END_TEST

/* 10^6 segments of one or two keys, and a huge one among tiny ones. */
START_TEST(topk_many_segments)
{
        const size_t count = 1000000;
        const uint64_t ks[] = {1, 2};
        const uint64_t big_ks[] = {1, 3, 1000};
        uint64_t *len = malloc(count * sizeof(*len));
        struct layout l, h;
        sortd_engine *e;

        ck_assert_ptr_nonnull(len);
        for (size_t i = 0; i < count; i++)
                len[i] = 1 + mix(i ^ 99) % 2;
        l = from_lengths("10^6 of 1 or 2 keys", len, count, 8);
        for (size_t i = 0; i < 10000; i++)
                len[i] = mix(i) % 4;
        len[77] = SMALL + 12345;
        h = from_lengths("huge among tiny", len, 10000, 4);
        e = engine_new(l.n, 0);
        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p += 2) {
                struct seg_case c = seg_case(SORTD_KEY_I32, p, SORTD_ASCENDING, some_dists[0], &l);
                struct seg_case d = seg_case(SORTD_KEY_F64, p, SORTD_DESCENDING, some_dists[2], &h);

                check_topk(e, &c, ks, LEN(ks));
                check_topk(e, &d, big_ks, LEN(big_ks));
        }
        layout_free(&l);
        layout_free(&h);
        free(len);
        sortd_engine_destroy(e);
}
END_TEST

/* Few distinct keys in a large segment: the first pass gathers the smallest value's copies, too
   many to sort, and the select goes on over them alone (select.c's narrow_fused()). */
START_TEST(topk_few_values)
{
        const size_t n = (size_t)1 << 20;
        const uint64_t ks[] = {1, 1000, 90000};
        struct layout l = whole(n);
        sortd_engine *e = engine_new(n, 2);

        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                struct seg_case c = seg_case(o ? SORTD_KEY_I64 : SORTD_KEY_U32,
                                             o ? SORTD_PAYLOAD_ARGSORT32 : SORTD_PAYLOAD_VALUES32,
                                             o, (struct dist){DATAGEN_FEW, 12}, &l);

                check_topk(e, &c, ks, LEN(ks));
        }
        sortd_engine_destroy(e);
}
END_TEST

/* Keys that mislead the select's sample (select_fused.c reads every len/1024-th key): those are
   the first keys in the order and the rest lie far behind, so the k-th key's digit is past
   what the first pass gathered, and the select must read the keys again to find it. */
START_TEST(topk_sample_misled)
{
        const size_t n = 1024 * 64;
        const uint64_t ks[] = {1023, 1025, 2000, 5000};
        struct layout l = whole(n);
        sortd_engine *e = engine_new(n, 2);

        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                struct seg_case c =
                        seg_case(SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT32, o, some_dists[0], &l);
                struct input in;

                make_input(&c, &in);
                for (size_t i = 0; i < n; i++) {
                        uint32_t far = (uint32_t)mix(i) | 0x80000000u;

                        ((uint32_t *)in.keys)[i] = i % 64 ? far : (uint32_t)i;
                        if (o == SORTD_DESCENDING)
                                ((uint32_t *)in.keys)[i] = ~((uint32_t *)in.keys)[i];
                }
                for (size_t i = 0; i < LEN(ks); i++)
                        check_topk_in(e, &c, &in, ks[i]);
                input_free(&in);
        }
        sortd_engine_destroy(e);
}
END_TEST

/* ---- shared memory ------------------------------------------------------------------------- */

/* Keys in memory that another process may write: the same results when nobody does. */
START_TEST(shared_same_results)
{
        static const uint64_t len[] = {3, TINY + 1, 4000, SMALL + 7, 0, 1};
        const uint64_t ks[] = {1, 2, 1000, SMALL + 100};
        struct layout l = from_lengths("classes", len, LEN(len), 4), w = whole(200000);
        sortd_engine *e = engine_new(w.n, 0);

        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++) {
                struct seg_case c = seg_case(SORTD_KEY_F32, p, p % 2, some_dists[2], &l);
                struct seg_case d = seg_case(SORTD_KEY_U64, p, p % 2, some_dists[p % 2], &w);

                c.where = d.where = SORTD_MEMORY_SHARED;
                ck_assert(check_sort(e, &c));
                check_topk(e, &c, ks, LEN(ks));
                check_topk(e, &d, ks, LEN(ks));
        }
        layout_free(&l);
        sortd_engine_destroy(e);
}
END_TEST

struct scribbler {
        uint32_t *keys;
        size_t n;
        atomic_bool stop;
};

/* Another process's writes, as a thread: keys flip between two values all the while. */
static void *scribble(void *arg)
{
        struct scribbler *s = arg;
        uint64_t x = 1;

        while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
                x = mix(x);
                ((volatile uint32_t *)s->keys)[x % s->n] = (x >> 32) & 1 ? 7u : 3000000000u;
        }
        return NULL;
}

/* Keys written while the select runs: never a write outside the outputs, never a result that
   is no key of the input, no index of its segment, or an index twice. */
START_TEST(shared_keys_change)
{
        const size_t n = 400000, m = 1000;
        struct guarded k, ok, ov;
        struct scribbler s = {.n = n};
        sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0};
        sortd_engine *e = engine_new(n, 2);
        pthread_t th;
        uint8_t *seen = calloc(n, 1);

        ck_assert_ptr_nonnull(seen);
        guarded_alloc(&k, n * 4);
        guarded_alloc(&ok, m * 4);
        guarded_alloc(&ov, m * 4);
        s.keys = k.p;
        for (size_t i = 0; i < n; i++)
                s.keys[i] = i % 2 ? 7u : 3000000000u;
        atomic_init(&s.stop, false);
        ck_assert_int_eq(pthread_create(&th, NULL, scribble, &s), 0);
        for (int r = 0; r < 50; r++) {
                ck_assert_int_eq(sortd_engine_topk(e, &d, NULL, m, SORTD_MEMORY_SHARED, k.p, NULL,
                                                   ok.p, ov.p, n),
                                 SORTD_OK);
                for (size_t i = 0; i < m; i++) {
                        uint32_t key = ((uint32_t *)ok.p)[i], idx = ((uint32_t *)ov.p)[i];

                        ck_assert(key == 7u || key == 3000000000u);
                        ck_assert_uint_lt(idx, n);
                        ck_assert_msg(!seen[idx], "round %d: index %" PRIu32 " twice", r, idx);
                        seen[idx] = 1;
                }
                for (size_t i = 0; i < m; i++)
                        seen[((uint32_t *)ov.p)[i]] = 0;
        }
        atomic_store(&s.stop, true);
        pthread_join(th, NULL);
        guarded_check_free(&k, "keys", "shared_keys_change");
        guarded_check_free(&ok, "out_keys", "shared_keys_change");
        guarded_check_free(&ov, "out_vals", "shared_keys_change");
        free(seen);
        sortd_engine_destroy(e);
}
END_TEST

/* ---- the checks of engine_segments.c ------------------------------------------------------- */

static void expect_status(sortd_engine *e, sortd_status got, sortd_status want, const char *what)
{
        ck_assert_msg(got == want, "%s: got %s, want %s (%s)", what, sortd_strerror(got),
                      sortd_strerror(want), sortd_engine_error(e));
        if (want != SORTD_OK)
                ck_assert_msg(sortd_engine_error(e)[0], "%s: no message", what);
}

START_TEST(errors_segments)
{
        uint32_t keys[8] = {8, 7, 6, 5, 4, 3, 2, 1}, vals[8];
        const uint32_t keys0[8] = {8, 7, 6, 5, 4, 3, 2, 1};
        const uint32_t past[] = {0, 4, 9}, down[] = {0, 5, 4, 8}, good[] = {0, 4, 8};
        const sortd_segments bad[] = {
                {.count = 2, .offsets = past, .offset_bytes = 4},
                {.count = 3, .offsets = down, .offset_bytes = 4},
                {.count = 3, .row_len = 2},
                {.count = 2, .offsets = good, .offset_bytes = 2},
                {.count = 2, .row_len = 4, .offset_bytes = 4},
        };
        const sortd_segments seg = {.count = 2, .offsets = good, .offset_bytes = 4};
        sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0};
        sortd_engine *e = engine_new(8, 0);

        for (size_t i = 0; i < LEN(bad); i++)
                expect_status(e,
                              sortd_engine_sort_segments(e, &d, &bad[i], SORTD_MEMORY_HOST, keys,
                                                         vals, 8),
                              SORTD_E_INVAL, "bad segments");
        expect_status(e, sortd_engine_sort_segments(e, &d, NULL, SORTD_MEMORY_HOST, keys, vals, 8),
                      SORTD_E_INVAL, "NULL segments");
        expect_status(e, sortd_engine_sort_segments(e, &d, &seg, SORTD_MEMORY_HOST, NULL, vals, 8),
                      SORTD_E_INVAL, "NULL keys");
        expect_status(e, sortd_engine_sort_segments(e, &d, &seg, SORTD_MEMORY_HOST, keys, NULL, 8),
                      SORTD_E_INVAL, "NULL vals for argsort");
        expect_status(e,
                      sortd_engine_sort_segments(e, &d, &seg, SORTD_MEMORY_HOST, keys, keys + 1, 8),
                      SORTD_E_INVAL, "vals overlapping keys");
        expect_status(e,
                      sortd_engine_sort_segments(e, &d, &seg, SORTD_MEMORY_DEVICE, keys, vals, 8),
                      SORTD_E_UNSUPPORTED, "device memory on the cpu engine");
        expect_status(e,
                      sortd_engine_sort_segments(e, &d, &seg, (sortd_memory)SORTD_MEMORY_COUNT,
                                                 keys, vals, 8),
                      SORTD_E_INVAL, "unknown memory");
        ck_assert_mem_eq(keys, keys0, sizeof(keys));
        expect_status(e, sortd_engine_sort_segments(e, &d, &seg, SORTD_MEMORY_HOST, keys, vals, 8),
                      SORTD_OK, "good");
        ck_assert_uint_eq(keys[0], 5);
        ck_assert_uint_eq(vals[0], 3);
        ck_assert_uint_eq(keys[4], 1);
        ck_assert_uint_eq(vals[4], 3);
        sortd_engine_destroy(e);
        /* above the capacity */
        e = engine_new(7, 0);
        expect_status(e, sortd_engine_sort_segments(e, &d, &seg, SORTD_MEMORY_HOST, keys, vals, 8),
                      SORTD_E_CAPACITY, "n above capacity");
        sortd_engine_destroy(e);
}
END_TEST

START_TEST(errors_topk)
{
        _Alignas(8) uint32_t keys[9] = {8, 7, 6, 5, 4, 3, 2, 1, 0};
        _Alignas(8) uint32_t vals[9] = {0}, ok[9], ov[9];
        const uint32_t good[] = {0, 4, 8};
        const sortd_segments seg = {.count = 2, .offsets = good, .offset_bytes = 4};
        const sortd_segments bad = {.count = 2, .row_len = 3};
        sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32, SORTD_DESCENDING, 0, 0};
        sortd_engine *e = engine_new(8, 0);
        const sortd_memory host = SORTD_MEMORY_HOST;

        expect_status(e, sortd_engine_topk(e, &d, &bad, 2, host, keys, vals, ok, ov, 8),
                      SORTD_E_INVAL, "bad segments");
        expect_status(e, sortd_engine_topk(e, &d, &seg, 2, host, NULL, vals, ok, ov, 8),
                      SORTD_E_INVAL, "NULL keys");
        expect_status(e, sortd_engine_topk(e, &d, &seg, 2, host, keys, NULL, ok, ov, 8),
                      SORTD_E_INVAL, "NULL vals");
        expect_status(e, sortd_engine_topk(e, &d, &seg, 2, host, keys, vals, NULL, ov, 8),
                      SORTD_E_INVAL, "NULL out_keys");
        expect_status(e, sortd_engine_topk(e, &d, &seg, 2, host, keys, vals, ok, NULL, 8),
                      SORTD_E_INVAL, "NULL out_vals");
        expect_status(
                e,
                sortd_engine_topk(e, &d, &seg, 2, host, keys, vals, (unsigned char *)ok + 1, ov, 8),
                SORTD_E_INVAL, "misaligned out_keys");
        expect_status(
                e,
                sortd_engine_topk(e, &d, &seg, 2, host, keys, vals, ok, (unsigned char *)ov + 2, 8),
                SORTD_E_INVAL, "misaligned out_vals");
        expect_status(e, sortd_engine_topk(e, &d, &seg, 2, host, keys, vals, keys + 3, ov, 8),
                      SORTD_E_INVAL, "out_keys over keys");
        expect_status(e, sortd_engine_topk(e, &d, &seg, 2, host, keys, vals, ok, vals + 6, 8),
                      SORTD_E_INVAL, "out_vals over vals");
        expect_status(e, sortd_engine_topk(e, &d, &seg, 2, host, keys, vals, ok, ok + 2, 8),
                      SORTD_E_INVAL, "out_vals over out_keys");
        expect_status(e,
                      sortd_engine_topk(e, &d, &seg, 2, SORTD_MEMORY_DEVICE, keys, vals, ok, ov, 8),
                      SORTD_E_UNSUPPORTED, "device memory on the cpu engine");
        expect_status(e, sortd_engine_topk(e, &d, NULL, 2, host, keys, vals, ok, ov, 9),
                      SORTD_E_CAPACITY, "n above capacity");
        /* argsort reads no vals: NULL, or overlapping the keys, is no fault */
        d.payload = SORTD_PAYLOAD_ARGSORT32;
        expect_status(e, sortd_engine_topk(e, &d, &seg, 2, host, keys, keys, ok, ov, 8), SORTD_OK,
                      "argsort, vals unused");
        ck_assert_uint_eq(ok[0], 8);
        ck_assert_uint_eq(ov[0], 0);
        ck_assert_uint_eq(ok[2], 4);
        ck_assert_uint_eq(ov[3], 1);
        /* k = 0: nothing to write, NULL outputs accepted */
        expect_status(e, sortd_engine_topk(e, &d, &seg, 0, host, keys, NULL, NULL, NULL, 8),
                      SORTD_OK, "k = 0");
        sortd_engine_destroy(e);
}
END_TEST

/* Injected faults reach the segmented calls as they reach sorts, and the engine goes on. */
START_TEST(errors_faults)
{
        sortd_engine_config cfg = {.capacity = 64, .faults = {.every = 2, .status = SORTD_E_NOMEM}};
        sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};
        const sortd_segments seg = {.count = 2, .row_len = 4};
        uint32_t keys[8] = {4, 3, 2, 1, 8, 7, 6, 5}, out[2];
        sortd_engine *e = NULL;
        char why[256];

        ck_assert_int_eq(sortd_engine_create("cpu", &cfg, &e, why, sizeof(why)), SORTD_OK);
        expect_status(e, sortd_engine_sort_segments(e, &d, &seg, SORTD_MEMORY_HOST, keys, NULL, 8),
                      SORTD_OK, "call 1");
        expect_status(
                e, sortd_engine_topk(e, &d, &seg, 1, SORTD_MEMORY_HOST, keys, NULL, out, NULL, 8),
                SORTD_E_NOMEM, "call 2 (injected)");
        ck_assert_ptr_nonnull(strstr(sortd_engine_error(e), "injected"));
        expect_status(
                e, sortd_engine_topk(e, &d, &seg, 1, SORTD_MEMORY_HOST, keys, NULL, out, NULL, 8),
                SORTD_OK, "call 3");
        ck_assert_uint_eq(out[0], 1);
        ck_assert_uint_eq(out[1], 5);
        sortd_engine_destroy(e);
        cfg.faults = (sortd_engine_faults){.every = 1, .status = SORTD_E_DEVICE, .lose_device = 1};
        ck_assert_int_eq(sortd_engine_create("cpu", &cfg, &e, why, sizeof(why)), SORTD_OK);
        expect_status(e, sortd_engine_sort_segments(e, &d, &seg, SORTD_MEMORY_HOST, keys, NULL, 8),
                      SORTD_E_DEVICE, "lost");
        ck_assert(sortd_engine_lost(e));
        expect_status(
                e, sortd_engine_topk(e, &d, &seg, 1, SORTD_MEMORY_HOST, keys, NULL, out, NULL, 8),
                SORTD_E_DEVICE, "after the loss");
        sortd_engine_destroy(e);
}
END_TEST

static Suite *segments_suite(void)
{
        Suite *s = suite_create("cpu-segments");
        TCase *tc;

        tc = tcase_create("sort");
        tcase_set_timeout(tc, 600);
        tcase_add_loop_test(tc, sort_matrix, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_test(tc, sort_bit_ranges);
        tcase_add_loop_test(tc, sort_class_bounds, 0, 2);
        suite_add_tcase(s, tc);

        tc = tcase_create("sort-layouts");
        tcase_set_timeout(tc, 600);
        tcase_add_test(tc, sort_layouts);
        tcase_add_test(tc, sort_million_segments);
        suite_add_tcase(s, tc);

        tc = tcase_create("topk");
        tcase_set_timeout(tc, 600);
        tcase_add_loop_test(tc, topk_matrix, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_test(tc, topk_ties);
        tcase_add_test(tc, topk_many_segments);
        suite_add_tcase(s, tc);

        tc = tcase_create("topk-k");
        tcase_set_timeout(tc, 600);
        tcase_add_loop_test(tc, topk_whole_array, 0, 2);
        tcase_add_test(tc, topk_sample_misled);
        tcase_add_test(tc, topk_few_values);
        suite_add_tcase(s, tc);

        tc = tcase_create("shared");
        tcase_set_timeout(tc, 600);
        tcase_add_test(tc, shared_same_results);
        tcase_add_test(tc, shared_keys_change);
        suite_add_tcase(s, tc);

        tc = tcase_create("errors");
        tcase_add_test(tc, errors_segments);
        tcase_add_test(tc, errors_topk);
        tcase_add_test(tc, errors_faults);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        cpu_check_seed_from_env();
        return run_suite(segments_suite());
}
