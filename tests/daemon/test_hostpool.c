/*
 * daemon/sched/hostpool.c alone: the allocator over plain memory (alignment, first fit, coalescing
 * on either side, exhaustion, sizes of 0 and beyond the arena, and random rounds against a
 * shadow model of the arena), and the arena taken from the CPU engine, whose host memory is
 * real mappings.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "suite.h"
#include "internal.h"

#define A SORTD__HOSTPOOL_ALIGN

/* Fails without one ck_assert per check: each talks to Check's parent process. */
#define EXPECT(cond, ...)                                                                          \
        do {                                                                                       \
                if (!(cond))                                                                       \
                        ck_abort_msg(__VA_ARGS__);                                                 \
        } while (0)

static void pool_over(sortd__hostpool *p, void *base, size_t bytes)
{
        char why[128] = "";

        ck_assert_msg(sortd__hostpool_init(p, base, bytes, why, sizeof(why)) == 0, "%s", why);
}

static size_t off_of(const sortd__hostpool *p, const void *buf)
{
        return (size_t)((const uint8_t *)buf - p->base);
}

/* The free list is exactly these extents, in order. */
static void expect_extents(const sortd__hostpool *p, const sortd__hostpool_extent *e, size_t n)
{
        ck_assert_uint_eq(p->nfree, n);
        for (size_t i = 0; i < n; i++) {
                ck_assert_uint_eq(p->free[i].off, e[i].off);
                ck_assert_uint_eq(p->free[i].len, e[i].len);
        }
}

START_TEST(aligned_and_disjoint)
{
        enum { N = 300 };
        uint8_t *arena = xmalloc(N * 512);
        sortd__hostpool p;
        uint8_t *b[N + 1];

        pool_over(&p, arena, N * 512);
        ck_assert(sortd__hostpool_on(&p));
        for (size_t n = 1; n <= N; n++) {
                b[n] = sortd__hostpool_alloc(&p, n);
                EXPECT(b[n], "alloc(%zu) failed", n);
                EXPECT((uintptr_t)b[n] % A == 0, "alloc(%zu) at %p", n, (void *)b[n]);
                EXPECT(n == 1 || b[n] >= b[n - 1] + n - 1, "alloc(%zu) overlaps the one before", n);
                memset(b[n], (int)n, n);
        }
        ck_assert_uint_eq(p.live, N);
        for (size_t n = 1; n <= N; n++) {
                for (size_t i = 0; i < n; i++)
                        EXPECT(b[n][i] == (uint8_t)n, "buffer %zu overwritten", n);
                sortd__hostpool_free(&p, b[n], n);
        }
        ck_assert_uint_eq(p.used, 0);
        expect_extents(&p, &(sortd__hostpool_extent){0, N * 512}, 1);
        sortd__hostpool_close(&p);
        ck_assert(!sortd__hostpool_on(&p));
        free(arena);
}
END_TEST

/* Four buffers fill the arena; freeing them in turn joins a neighbour before, one after, both,
   and none. */
START_TEST(coalescing)
{
        uint8_t *arena = xmalloc(4 * 256);
        sortd__hostpool p;
        uint8_t *b[4];

        pool_over(&p, arena, 4 * 256);
        for (int i = 0; i < 4; i++)
                b[i] = sortd__hostpool_alloc(&p, 256);
        ck_assert_ptr_null(sortd__hostpool_alloc(&p, 1));
        expect_extents(&p, NULL, 0);
        sortd__hostpool_free(&p, b[1], 256); /* none */
        expect_extents(&p, &(sortd__hostpool_extent){256, 256}, 1);
        sortd__hostpool_free(&p, b[3], 256); /* none */
        expect_extents(&p, (sortd__hostpool_extent[]){{256, 256}, {768, 256}}, 2);
        sortd__hostpool_free(&p, b[2], 256); /* both */
        expect_extents(&p, &(sortd__hostpool_extent){256, 768}, 1);
        sortd__hostpool_free(&p, b[0], 256); /* after */
        expect_extents(&p, &(sortd__hostpool_extent){0, 1024}, 1);

        for (int i = 0; i < 4; i++)
                b[i] = sortd__hostpool_alloc(&p, 256);
        sortd__hostpool_free(&p, b[0], 256);
        sortd__hostpool_free(&p, b[1], 256); /* before */
        expect_extents(&p, &(sortd__hostpool_extent){0, 512}, 1);
        sortd__hostpool_free(&p, b[3], 256);
        sortd__hostpool_free(&p, b[2], 256); /* both */
        expect_extents(&p, &(sortd__hostpool_extent){0, 1024}, 1);
        ck_assert_ptr_eq(sortd__hostpool_alloc(&p, 1024), arena);
        sortd__hostpool_free(&p, arena, 1024);
        sortd__hostpool_close(&p);
        free(arena);
}
END_TEST

START_TEST(first_fit_reuse)
{
        uint8_t *arena = xmalloc(1 << 16), *a, *b, *c, *d, *e, *f;
        sortd__hostpool p;

        pool_over(&p, arena, 1 << 16);
        a = sortd__hostpool_alloc(&p, 1000); /* 1024 bytes */
        b = sortd__hostpool_alloc(&p, 1000);
        c = sortd__hostpool_alloc(&p, 1000);
        ck_assert_uint_eq(off_of(&p, c), 2048);
        sortd__hostpool_free(&p, a, 1000);
        d = sortd__hostpool_alloc(&p, 500); /* the first hole that holds it: a's */
        ck_assert_ptr_eq(d, a);
        e = sortd__hostpool_alloc(&p, 600); /* a's rest (512) is too small: after c */
        ck_assert_uint_eq(off_of(&p, e), 3072);
        f = sortd__hostpool_alloc(&p, 400); /* a's rest again */
        ck_assert_uint_eq(off_of(&p, f), 512);
        sortd__hostpool_free(&p, d, 500);
        sortd__hostpool_free(&p, f, 400);
        sortd__hostpool_free(&p, b, 1000);
        sortd__hostpool_free(&p, e, 600);
        sortd__hostpool_free(&p, c, 1000);
        expect_extents(&p, &(sortd__hostpool_extent){0, 1 << 16}, 1);
        sortd__hostpool_close(&p);
        free(arena);
}
END_TEST

START_TEST(exhaustion)
{
        enum { N = 100 };
        uint8_t *arena = xmalloc(N * A), *b[N];
        sortd__hostpool p;

        pool_over(&p, arena, N * A);
        for (int i = 0; i < N; i++)
                b[i] = sortd__hostpool_alloc(&p, 1 + (size_t)i % A);
        ck_assert_ptr_null(sortd__hostpool_alloc(&p, 1));
        ck_assert_uint_eq(p.used, N * A);
        ck_assert_uint_eq(p.peak, N * A);
        sortd__hostpool_free(&p, b[50], 1 + 50 % A);
        ck_assert_ptr_null(sortd__hostpool_alloc(&p, A + 1));
        ck_assert_ptr_eq(sortd__hostpool_alloc(&p, A), b[50]);
        for (int i = 0; i < N; i++)
                sortd__hostpool_free(&p, b[i], i == 50 ? A : 1 + (size_t)i % A);
        expect_extents(&p, &(sortd__hostpool_extent){0, N * A}, 1);
        ck_assert_uint_eq(p.used, 0);
        ck_assert_uint_eq(p.peak, N * A); /* the most ever held, not what is held now */
        sortd__hostpool_close(&p);
        free(arena);
}
END_TEST

/* The arena is 1000 bytes: 960 of them usable. */
START_TEST(zero_and_huge)
{
        uint8_t *arena = xmalloc(1000), *b;
        sortd__hostpool p;

        pool_over(&p, arena, 1000);
        ck_assert_ptr_null(sortd__hostpool_alloc(&p, 0));
        ck_assert_ptr_null(sortd__hostpool_alloc(&p, SIZE_MAX));
        ck_assert_ptr_null(sortd__hostpool_alloc(&p, SIZE_MAX - A + 2)); /* would round to 0 */
        ck_assert_ptr_null(sortd__hostpool_alloc(&p, 1001));
        ck_assert_ptr_null(sortd__hostpool_alloc(&p, 961));
        b = sortd__hostpool_alloc(&p, 960);
        ck_assert_ptr_eq(b, arena);
        ck_assert_ptr_null(sortd__hostpool_alloc(&p, 1));
        sortd__hostpool_free(&p, b, 960);
        ck_assert_uint_eq(p.live, 0);
        sortd__hostpool_close(&p);
        free(arena);
}
END_TEST

START_TEST(off_and_bad_arenas)
{
        uint8_t *arena = xmalloc(4096);
        sortd__hostpool p;
        char why[128] = "";

        pool_over(&p, NULL, 0);
        ck_assert(!sortd__hostpool_on(&p));
        ck_assert_ptr_null(sortd__hostpool_alloc(&p, 1));
        sortd__hostpool_close(&p);
        pool_over(&p, arena, A - 1); /* not one buffer: off */
        ck_assert(!sortd__hostpool_on(&p));
        ck_assert_ptr_null(sortd__hostpool_alloc(&p, 1));
        sortd__hostpool_close(&p);
        ck_assert_int_eq(sortd__hostpool_init(&p, arena + 8, 1024, why, sizeof(why)), -EINVAL);
        ck_assert_ptr_nonnull(strstr(why, "aligned"));
        ck_assert(!sortd__hostpool_on(&p));
        sortd__hostpool_close(&p);
        free(arena);
}
END_TEST

/* ---- random rounds against a shadow model ---- */

#define SHADOW_BYTES ((256u << 10) + 1000) /* usable: 4111 granules of 64 bytes */
#define GRANULES (SHADOW_BYTES / A)
#define MAX_LIVE 200

typedef struct shadow {
        int owner[GRANULES]; /* the live slot a granule belongs to, -1 when free */
        struct {
                uint8_t *buf;
                size_t n;
        } live[MAX_LIVE];
        size_t nlive;
        uint64_t rng;
} shadow;

static uint64_t next_rand(shadow *s)
{
        s->rng ^= s->rng << 13;
        s->rng ^= s->rng >> 7;
        s->rng ^= s->rng << 17;
        return s->rng;
}

/* Mostly small sizes, some large, a few of 0 or beyond the arena. */
static size_t random_size(shadow *s)
{
        uint64_t r = next_rand(s);

        switch (r % 16) {
        case 0:
                return r >> 60 ? (size_t)(r >> 8) % (SHADOW_BYTES / 3) : 0;
        case 1:
                return SHADOW_BYTES + (size_t)(r >> 40) % 100;
        case 2:
        case 3:
                return 1 + (size_t)(r >> 8) % (SHADOW_BYTES / 8);
        default:
                return 1 + (size_t)(r >> 8) % 4096;
        }
}

/* Where first fit must put n bytes: the first run of free granules that holds it, or -1. */
static long first_fit(const shadow *s, size_t n)
{
        size_t need = (n + A - 1) / A, run = 0;

        if (n == 0 || n > SHADOW_BYTES)
                return -1;
        for (size_t g = 0; g < GRANULES; g++) {
                run = s->owner[g] < 0 ? run + 1 : 0;
                if (run == need)
                        return (long)(g + 1 - need);
        }
        return -1;
}

static void shadow_alloc(shadow *s, sortd__hostpool *p)
{
        size_t n = random_size(s), slot = s->nlive;
        long want = first_fit(s, n);
        uint8_t *b = sortd__hostpool_alloc(p, n);

        EXPECT(want < 0 ? !b : b && off_of(p, b) == (size_t)want * A,
               "alloc(%zu): got offset %zd, first fit is granule %ld", n,
               b ? (ssize_t)off_of(p, b) : (ssize_t)-1, want);
        if (!b)
                return;
        for (size_t g = (size_t)want; g < (size_t)want + (n + A - 1) / A; g++)
                s->owner[g] = (int)slot;
        memset(b, (int)(slot + 1), n);
        s->live[slot].buf = b;
        s->live[slot].n = n;
        s->nlive++;
}

static void shadow_free(shadow *s, sortd__hostpool *p)
{
        size_t slot = (size_t)(next_rand(s) % s->nlive), last = s->nlive - 1;
        uint8_t *b = s->live[slot].buf;
        size_t n = s->live[slot].n, g0 = off_of(p, b) / A;

        for (size_t i = 0; i < n; i++)
                EXPECT(b[i] == (uint8_t)(slot + 1), "buffer %zu overwritten at %zu", slot, i);
        for (size_t g = g0; g < g0 + (n + A - 1) / A; g++)
                s->owner[g] = -1;
        sortd__hostpool_free(p, b, n);
        /* The last slot moves into the freed one: its granules and its fill say so. */
        if (slot != last) {
                s->live[slot] = s->live[last];
                g0 = off_of(p, s->live[slot].buf) / A;
                for (size_t g = g0; g < g0 + (s->live[slot].n + A - 1) / A; g++)
                        s->owner[g] = (int)slot;
                memset(s->live[slot].buf, (int)(slot + 1), s->live[slot].n);
        }
        s->nlive--;
}

/* The free list is the shadow's runs of free granules, each one extent. */
static void shadow_check(const shadow *s, const sortd__hostpool *p)
{
        size_t runs = 0, used = 0;

        for (size_t g = 0; g < GRANULES; g++) {
                if (s->owner[g] >= 0) {
                        used++;
                        continue;
                }
                if (g > 0 && s->owner[g - 1] < 0)
                        continue;
                EXPECT(runs < p->nfree && p->free[runs].off == g * A,
                       "free run %zu at granule %zu is not an extent", runs, g);
                runs++;
        }
        EXPECT(runs == p->nfree, "%zu free runs, %zu extents", runs, p->nfree);
        EXPECT(used * A == p->used && s->nlive == p->live, "used %zu vs %zu", used * A, p->used);
}

START_TEST(random_rounds)
{
        uint8_t *arena = xmalloc(SHADOW_BYTES);
        shadow *s = calloc(1, sizeof(*s));
        sortd__hostpool p;

        ck_assert_ptr_nonnull(s);
        s->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(_i + 1);
        memset(s->owner, -1, sizeof(s->owner));
        pool_over(&p, arena, SHADOW_BYTES);
        for (int step = 0; step < 20000; step++) {
                /* Fills up to MAX_LIVE, then empties: both full and fragmented arenas. */
                bool filling = (step / 2000) % 2 == 0;

                if (s->nlive && (s->nlive == MAX_LIVE || next_rand(s) % 100 < (filling ? 30 : 70)))
                        shadow_free(s, &p);
                else
                        shadow_alloc(s, &p);
                shadow_check(s, &p);
        }
        while (s->nlive)
                shadow_free(s, &p);
        expect_extents(&p, &(sortd__hostpool_extent){0, GRANULES * A}, 1);
        sortd__hostpool_close(&p);
        free(s);
        free(arena);
}
END_TEST

/* ---- the arena from the engine ---- */

static sortd_engine *cpu_engine(void)
{
        sortd_engine_config ec = {.capacity = 1024, .threads = 1};
        sortd_engine *e = NULL;
        char why[256];

        ck_assert_msg(sortd_engine_create("cpu", &ec, &e, why, sizeof(why)) == SORTD_OK, "%s", why);
        return e;
}

START_TEST(engine_arena)
{
        sortd_engine *e = cpu_engine();
        sortd__hostpool p;
        char why[256] = "";
        uint8_t *b;

        ck_assert_int_eq(sortd__hostpool_open(&p, e, 0, why, sizeof(why)), SORTD_OK);
        ck_assert(!sortd__hostpool_on(&p));
        sortd__hostpool_close(&p);
        ck_assert_msg(sortd__hostpool_open(&p, e, 4u << 20, why, sizeof(why)) == SORTD_OK, "%s",
                      why);
        ck_assert(sortd__hostpool_on(&p));
        ck_assert_uint_eq(p.bytes, 4u << 20);
        ck_assert_ptr_eq(p.engine, e);
        ck_assert_uint_eq((uintptr_t)p.base % 4096, 0);
        b = sortd__hostpool_alloc(&p, 4u << 20);
        ck_assert_ptr_eq(b, p.base);
        memset(b, 0xab, 4u << 20);
        sortd__hostpool_free(&p, b, 4u << 20);
        sortd__hostpool_close(&p);
        ck_assert_ptr_null(p.base);
        sortd_engine_destroy(e);
}
END_TEST

/* The engine's own error comes back, and the pool stays off. */
START_TEST(engine_arena_refused)
{
        sortd_engine *e = cpu_engine();
        sortd__hostpool p;
        char why[256] = "";

        ck_assert_int_eq(sortd__hostpool_open(&p, e, SIZE_MAX, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_ptr_nonnull(strstr(why, "out of range"));
        ck_assert(!sortd__hostpool_on(&p));
        sortd__hostpool_close(&p);
        sortd_engine_destroy(e);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("hostpool");
        TCase *alloc = tcase_create("allocator"), *engine = tcase_create("engine");

        tcase_add_test(alloc, aligned_and_disjoint);
        tcase_add_test(alloc, coalescing);
        tcase_add_test(alloc, first_fit_reuse);
        tcase_add_test(alloc, exhaustion);
        tcase_add_test(alloc, zero_and_huge);
        tcase_add_test(alloc, off_and_bad_arenas);
        tcase_add_loop_test(alloc, random_rounds, 0, 4);
        tcase_set_timeout(alloc, 60);
        suite_add_tcase(s, alloc);
        tcase_add_test(engine, engine_arena);
        tcase_add_test(engine, engine_arena_refused);
        suite_add_tcase(s, engine);
        return run_suite(s);
}
