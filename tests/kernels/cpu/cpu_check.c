#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_check.h"
#include "reference.h"

const struct dist all_dists[] = {
        {DATAGEN_UNIFORM, 0},  {DATAGEN_ENTROPY, 2},  {DATAGEN_ENTROPY, 4}, {DATAGEN_ENTROPY, 8},
        {DATAGEN_ENTROPY, 16}, {DATAGEN_EQUAL, 0},    {DATAGEN_SORTED, 0},  {DATAGEN_REVERSE, 0},
        {DATAGEN_FEW, 16},     {DATAGEN_NEGATIVE, 0}, {DATAGEN_SPECIAL, 0},
};
const size_t n_dists = sizeof(all_dists) / sizeof(all_dists[0]);

static uint64_t base_seed = 0x5047d5eed2024ull;

void cpu_check_seed_from_env(void)
{
        const char *seed = getenv("SORTD_TEST_SEED");

        if (seed && *seed)
                base_seed = strtoull(seed, NULL, 0);
}

uint64_t mix(uint64_t z)
{
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
}

uint64_t case_seed(uint64_t a, uint64_t b, uint64_t c)
{
        return mix(base_seed ^ mix(a ^ mix(b ^ mix(c))));
}

bool is_argsort(sortd_payload p)
{
        return p == SORTD_PAYLOAD_ARGSORT32 || p == SORTD_PAYLOAD_ARGSORT64;
}

const char *describe(const struct sort_case *c, char *buf, size_t len)
{
        char dname[32], threads[16] = "default";
        unsigned width = 8 * (unsigned)sortd_key_size(c->desc.key_type);

        if (c->threads)
                snprintf(threads, sizeof(threads), "%u", c->threads);
        snprintf(buf, len, "%s %s %s bits [%u,%u)%s dist %s n=%zu seed=0x%" PRIx64 " threads=%s",
                 sortd_key_type_name(c->desc.key_type), sortd_payload_name(c->desc.payload),
                 c->desc.order == SORTD_ASCENDING ? "ascending" : "descending", c->desc.begin_bit,
                 c->desc.end_bit ? c->desc.end_bit : width, c->desc.end_bit ? "" : " (end_bit 0)",
                 datagen_name(c->dist.dist, c->dist.param, dname, sizeof(dname)), c->n, c->seed,
                 threads);
        return buf;
}

sortd_engine *engine_new(size_t capacity, unsigned threads)
{
        sortd_engine_config cfg = {.capacity = capacity, .threads = threads};
        sortd_engine *e = NULL;
        char why[256] = "";
        sortd_status s = sortd_engine_create("cpu", &cfg, &e, why, sizeof(why));

        ck_assert_msg(s == SORTD_OK, "sortd_engine_create(cpu, capacity %zu, threads %u): %s: %s",
                      capacity, threads, sortd_strerror(s), why);
        ck_assert_ptr_nonnull(e);
        return e;
}

void guarded_alloc(struct guarded *g, size_t bytes)
{
        g->bytes = bytes;
        g->mem = malloc(bytes + 2 * GUARD + (bytes == 0));
        ck_assert_ptr_nonnull(g->mem);
        g->p = g->mem + GUARD;
#if GUARD
        memset(g->mem, GUARD_BYTE, GUARD);
        memset(g->mem + GUARD + bytes, GUARD_BYTE, GUARD);
#endif
}

void guarded_check_free(struct guarded *g, const char *what, const char *name)
{
#if GUARD
        for (size_t i = 0; i < GUARD; i++)
                if (g->mem[i] != GUARD_BYTE || g->mem[GUARD + g->bytes + i] != GUARD_BYTE)
                        ck_abort_msg("%s: the engine wrote outside %s (guard byte %zu)", name, what,
                                     i);
#endif
        free(g->mem);
        g->mem = g->p = NULL;
}

static size_t first_diff(const void *a, const void *b, size_t n, size_t elem)
{
        if (memcmp(a, b, n * elem) == 0)
                return n;
        for (size_t i = 0; i < n; i++)
                if (memcmp((const char *)a + i * elem, (const char *)b + i * elem, elem) != 0)
                        return i;
        return n;
}

uint64_t elem_at(const void *base, size_t i, size_t elem)
{
        uint64_t v = 0;

        memcpy(&v, (const char *)base + i * elem, elem); /* little-endian: the low bytes */
        return v;
}

/* Fails with the first index where got differs from want. */
void expect_same(const char *name, const char *what, const void *got, const void *want, size_t n,
                 size_t elem)
{
        size_t i = first_diff(got, want, n, elem);

        if (i < n)
                ck_abort_msg("%s: %s differ first at index %zu of %zu: got 0x%" PRIx64
                             ", want 0x%" PRIx64,
                             name, what, i, n, elem_at(got, i, elem), elem_at(want, i, elem));
}

void input_make(const struct sort_case *c, struct input *in)
{
        in->kb = sortd_key_size(c->desc.key_type);
        in->vb = sortd_payload_size(c->desc.payload);
        in->keys = malloc(c->n * in->kb + 1);
        in->vals = malloc(c->n * in->vb + 1);
        ck_assert(in->keys && in->vals);
        datagen_fill(in->keys, c->n, c->desc.key_type, c->dist.dist, c->dist.param, c->seed);
        if (is_argsort(c->desc.payload))
                memset(in->vals, ARGSORT_FILL, c->n * in->vb);
        else if (in->vb)
                datagen_fill_values(in->vals, c->n, (unsigned)in->vb, ~c->seed);
}

void input_free(struct input *in)
{
        free(in->keys);
        free(in->vals);
}

/* The reference's answer, in fresh buffers. */
void reference_sort(const struct sort_case *c, const struct input *in, void **keys, void **vals)
{
        *keys = malloc(c->n * in->kb + 1);
        *vals = malloc(c->n * in->vb + 1);
        ck_assert(*keys && *vals);
        memcpy(*keys, in->keys, c->n * in->kb);
        memcpy(*vals, in->vals, c->n * in->vb);
        ck_assert_int_eq(ref_sort(&c->desc, *keys, in->vb ? *vals : NULL, c->n), 0);
}

/* Sorts a copy of the input with e and checks the result against want_keys and want_vals. */
/* The sort of shared keys reads them once, by another path: it must sort as the other does. */
static void engine_check_as(sortd_engine *e, const struct sort_case *c, const struct input *in,
                            const void *want_keys, const void *want_vals, bool shared)
{
        char name[256];
        struct guarded k, v;
        sortd_status s;

        describe(c, name, sizeof(name));
        if (shared)
                strncat(name, ", shared", sizeof(name) - strlen(name) - 1);
        guarded_alloc(&k, c->n * in->kb);
        guarded_alloc(&v, c->n * in->vb);
        memcpy(k.p, in->keys, c->n * in->kb);
        memcpy(v.p, in->vals, c->n * in->vb);

        s = (shared ? sortd_engine_sort_shared : sortd_engine_sort)(e, &c->desc, k.p,
                                                                    in->vb ? v.p : NULL, c->n);
        ck_assert_msg(s == SORTD_OK, "%s: %s: %s", name, sortd_strerror(s), sortd_engine_error(e));
        ck_assert_msg(strcmp(sortd_engine_error(e), "") == 0, "%s: message '%s' after success",
                      name, sortd_engine_error(e));
        expect_same(name, "keys", k.p, want_keys, c->n, in->kb);
        expect_same(name, "vals", v.p, want_vals, c->n, in->vb);
        guarded_check_free(&k, "keys", name);
        guarded_check_free(&v, "vals", name);
}

void engine_check(sortd_engine *e, const struct sort_case *c, const struct input *in,
                  const void *want_keys, const void *want_vals)
{
        engine_check_as(e, c, in, want_keys, want_vals, false);
        engine_check_as(e, c, in, want_keys, want_vals, true);
}

/* One case: the engine's output against the reference's. */
void check_case(sortd_engine *e, struct sort_case *c, struct tally *t)
{
        struct input in;
        void *want_keys, *want_vals;

        c->threads = 0;
        input_make(c, &in);
        reference_sort(c, &in, &want_keys, &want_vals);
        engine_check(e, c, &in, want_keys, want_vals);
        t->cases++;
        if (memcmp(want_keys, in.keys, c->n * in.kb) != 0 ||
            memcmp(want_vals, in.vals, c->n * in.vb) != 0)
                t->moved++;
        free(want_keys);
        free(want_vals);
        input_free(&in);
}

struct sort_case make_case(sortd_key_type t, sortd_payload p, sortd_order o, struct dist d,
                           size_t n)
{
        return (struct sort_case){
                .desc = {.key_type = t, .payload = p, .order = o},
                .dist = d,
                .n = n,
                .seed = case_seed(((uint64_t)t << 16) | ((uint64_t)p << 8) | o,
                                  ((uint64_t)d.dist << 8) | d.param, n),
        };
}

bool variant_taken(size_t v, size_t count, size_t cell)
{
        return !SORTD_TEST_ONE_VARIANT || v == cell % count;
}

size_t variants_per_cell(size_t count)
{
        return SORTD_TEST_ONE_VARIANT ? 1 : count;
}

/* Every case ran, and most of them had something to sort. */
void expect_tally(const struct tally *t, size_t cases)
{
        ck_assert_uint_eq(t->cases, cases);
        ck_assert_msg(t->moved * 2 >= t->cases, "only %zu of %zu cases moved any data", t->moved,
                      t->cases);
}
