/*
 * The self-check: an engine against the CPU engine on a fixed sample (see
 * selfcheck.h and sortd_engine_selfcheck() in engine.h).
 *
 * The oracle is the CPU engine because CI tests it on every commit; on the
 * first real GPU the previous oracle, CUB behind our wrapper, had never run,
 * was wrong, and turned a correct engine off.
 */
#include "selfcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_impl.h"

#define SMALL_SIZES 3
#define LARGE_N ((size_t)3000 * 4096 + 1234)

static const size_t small_sizes[SMALL_SIZES] = {2, 1001, 30011};

/* A window that ends in a short digit, one that starts mid-key, a single bit... */
static const struct {
        sortd_key_type t;
        sortd_payload p;
        sortd_order o;
        unsigned begin, end;
} windows[] = {
        {SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 3, 17},
        {SORTD_KEY_F32, SORTD_PAYLOAD_ARGSORT32, SORTD_DESCENDING, 20, 32},
        {SORTD_KEY_U64, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 5, 64},
        {SORTD_KEY_I64, SORTD_PAYLOAD_ARGSORT64, SORTD_DESCENDING, 31, 45},
        {SORTD_KEY_I16, SORTD_PAYLOAD_VALUES64, SORTD_ASCENDING, 4, 12},
        {SORTD_KEY_U8, SORTD_PAYLOAD_ARGSORT32, SORTD_DESCENDING, 7, 8},
        {SORTD_KEY_F64, SORTD_PAYLOAD_VALUES32, SORTD_DESCENDING, 0, 13},
        {SORTD_KEY_F16, SORTD_PAYLOAD_ARGSORT32, SORTD_DESCENDING, 2, 16},
        {SORTD_KEY_U128, SORTD_PAYLOAD_VALUES64, SORTD_ASCENDING, 40, 100}, /* across bit 64 */
};

/* Thousands of tiles, at most 12 bytes a key: a few hundred MiB for both engines. */
static const struct {
        sortd_key_type t;
        sortd_payload p;
        sortd_order o;
} large[] = {
        {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING},
        {SORTD_KEY_I32, SORTD_PAYLOAD_VALUES32, SORTD_DESCENDING},
        {SORTD_KEY_F64, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void add(sortd__selfcheck_case *out, size_t max, size_t *k, sortd_key_type t,
                sortd_payload p, sortd_order o, unsigned begin, unsigned end, size_t n,
                size_t capacity)
{
        if (*k < max)
                out[*k] =
                        (sortd__selfcheck_case){{t, p, o, begin, end}, n < capacity ? n : capacity};
        (*k)++;
}

size_t sortd__selfcheck_sample(size_t capacity, sortd__selfcheck_case *out, size_t max)
{
        size_t k = 0;

        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                                for (size_t z = 0; z < SMALL_SIZES; z++)
                                        add(out, max, &k, (sortd_key_type)t, (sortd_payload)p,
                                            (sortd_order)o, 0, 0, small_sizes[z], capacity);
        for (size_t i = 0; i < COUNT(windows); i++)
                for (size_t z = 1; z < SMALL_SIZES; z++)
                        add(out, max, &k, windows[i].t, windows[i].p, windows[i].o,
                            windows[i].begin, windows[i].end, small_sizes[z], capacity);
        for (size_t i = 0; i < COUNT(large); i++)
                add(out, max, &k, large[i].t, large[i].p, large[i].o, 0, 0, LARGE_N, capacity);
        return k;
}

static void describe(char *buf, size_t len, const sortd__selfcheck_case *c)
{
        const sortd_sort_desc *d = &c->desc;

        snprintf(buf, len, "%zu %s keys (%s, %s, bits [%u, %u))", c->n,
                 sortd_key_type_name(d->key_type), sortd_payload_name(d->payload),
                 d->order == SORTD_DESCENDING ? "descending" : "ascending", d->begin_bit,
                 d->end_bit ? d->end_bit : (unsigned)sortd_key_size(d->key_type) * 8);
}

/* The subject's buffers [0] and the oracle's [1]. */
struct buffers {
        void *keys[2], *vals[2];
};

static sortd_status run_case(sortd_engine *e[2], struct buffers *b, const sortd__selfcheck_case *c,
                             uint64_t seed, char *report, size_t len)
{
        size_t kb = sortd_key_size(c->desc.key_type), vb = sortd_payload_size(c->desc.payload);
        size_t at;
        char what[96];

        sortd__selfcheck_fill(b->keys[0], b->vals[0], c->n, (unsigned)kb, (unsigned)vb, seed);
        memcpy(b->keys[1], b->keys[0], c->n * kb);
        memcpy(b->vals[1], b->vals[0], c->n * vb);
        describe(what, sizeof(what), c);
        for (int i = 0; i < 2; i++) {
                sortd_status s = sortd_engine_sort(e[i], &c->desc, b->keys[i], b->vals[i], c->n);
                if (s != SORTD_OK)
                        return sortd__selfcheck_say(
                                report, len, s, "self-check: the %s engine failed sorting %s: %s",
                                sortd_engine_kind(e[i]), what, sortd_engine_error(e[i]));
        }
        at = sortd__selfcheck_first_difference(b->keys[0], b->keys[1], c->n, kb);
        if (at == c->n)
                at = vb ? sortd__selfcheck_first_difference(b->vals[0], b->vals[1], c->n, vb)
                        : c->n;
        if (at == c->n)
                return SORTD_OK;
        return sortd__selfcheck_say(
                report, len, SORTD_E_SELFCHECK,
                "self-check failed: %s and %s differ sorting %s, first at position %zu",
                sortd_engine_kind(e[0]), sortd_engine_kind(e[1]), what, at);
}

/*
 * Sorts of up to this many keys are run again as one batch (sortd_engine_sort_batch) by each
 * engine: an engine may sort a batch's small members on a path of their own (the cuda engine's
 * segmented kernel takes members of up to 4096 keys).
 */
#define BATCH_MAX_N 4096

static void free_items(sortd_engine_batch_item *items, size_t count)
{
        for (size_t i = 0; items && i < count; i++) {
                free(items[i].keys);
                free(items[i].vals);
        }
        free(items);
}

/* Items for the cases of up to BATCH_MAX_N keys, filled as run_case fills them, into *count;
   NULL when out of memory. */
static sortd_engine_batch_item *batch_items(const sortd__selfcheck_case *cases, size_t ncases,
                                            size_t *count)
{
        sortd_engine_batch_item *items = calloc(ncases, sizeof(*items));
        size_t m = 0;

        for (size_t i = 0; items && i < ncases; i++) {
                const sortd__selfcheck_case *c = &cases[i];
                size_t kb = sortd_key_size(c->desc.key_type);
                size_t vb = sortd_payload_size(c->desc.payload);
                sortd_engine_batch_item *it = &items[m];

                if (c->n > BATCH_MAX_N)
                        continue;
                *it = (sortd_engine_batch_item){.desc = c->desc, .n = c->n};
                it->keys = malloc(c->n * kb);
                it->vals = malloc(c->n * vb + 1);
                m++;
                if (!it->keys || !it->vals) {
                        free_items(items, m);
                        return NULL;
                }
                sortd__selfcheck_fill(it->keys, it->vals, c->n, (unsigned)kb, (unsigned)vb,
                                      ncases + i + 1);
        }
        *count = m;
        return items;
}

/* The small cases as one batch by each engine, from the same inputs, compared member by member.
 *members: how many. */
static sortd_status run_batch(sortd_engine *e[2], const sortd__selfcheck_case *cases, size_t ncases,
                              size_t *members, char *report, size_t len)
{
        sortd_engine_batch_item *items[2] = {batch_items(cases, ncases, members),
                                             batch_items(cases, ncases, members)};
        sortd_status s = SORTD_OK;

        if (!items[0] || !items[1])
                s = sortd__selfcheck_say(report, len, SORTD_E_NOMEM,
                                         "self-check: out of memory for a batch");
        for (int i = 0; i < 2 && s == SORTD_OK; i++)
                if ((s = sortd_engine_sort_batch(e[i], items[i], *members)) != SORTD_OK)
                        sortd__selfcheck_say(
                                report, len, s,
                                "self-check: the %s engine failed sorting a batch of %zu: %s",
                                sortd_engine_kind(e[i]), *members, sortd_engine_error(e[i]));
        for (size_t m = 0; m < *members && s == SORTD_OK; m++) {
                const sortd_engine_batch_item *a = &items[0][m], *b = &items[1][m];
                size_t kb = sortd_key_size(a->desc.key_type);
                size_t vb = sortd_payload_size(a->desc.payload);
                size_t at = sortd__selfcheck_first_difference(a->keys, b->keys, a->n, kb);
                sortd__selfcheck_case c = {a->desc, a->n};
                char what[96];

                if (at == a->n)
                        at = vb ? sortd__selfcheck_first_difference(a->vals, b->vals, a->n, vb)
                                : a->n;
                if (at == a->n)
                        continue;
                describe(what, sizeof(what), &c);
                s = sortd__selfcheck_say(
                        report, len, SORTD_E_SELFCHECK,
                        "self-check failed: %s and %s differ sorting %s in a batch of %zu, first "
                        "at position %zu",
                        sortd_engine_kind(e[0]), sortd_engine_kind(e[1]), what, *members, at);
        }
        free_items(items[0], *members);
        free_items(items[1], *members);
        return s;
}

static double now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* shape_cap: the shapes' largest n when thinned (0: the sample's), never above the sample's. */
static sortd_status run_all(sortd_engine *e[2], const sortd__selfcheck_case *cases, size_t count,
                            size_t shape_cap, char *report, size_t len)
{
        size_t key_bytes = 0, val_bytes = 0, max_n = 0, members = 0, shapes = 0;
        struct buffers b = {{NULL, NULL}, {NULL, NULL}};
        sortd_status s = SORTD_OK;
        double t0 = now_ms();

        for (size_t i = 0; i < count; i++) {
                size_t n = cases[i].n;
                size_t kb = n * sortd_key_size(cases[i].desc.key_type);
                size_t vb = n * sortd_payload_size(cases[i].desc.payload);
                key_bytes = kb > key_bytes ? kb : key_bytes;
                val_bytes = vb > val_bytes ? vb : val_bytes;
                max_n = n > max_n ? n : max_n;
        }
        for (int i = 0; i < 2 && s == SORTD_OK; i++)
                if (!(b.keys[i] = malloc(key_bytes)) || !(b.vals[i] = malloc(val_bytes + 1)))
                        s = sortd__selfcheck_say(
                                report, len, SORTD_E_NOMEM,
                                "self-check: cannot allocate %zu MiB of host buffers",
                                2 * (key_bytes + val_bytes) >> 20);
        for (size_t i = 0; i < count && s == SORTD_OK; i++)
                s = run_case(e, &b, &cases[i], i + 1, report, len);
        for (int i = 0; i < 2; i++) {
                free(b.keys[i]);
                free(b.vals[i]);
        }
        if (s == SORTD_OK)
                s = run_batch(e, cases, count, &members, report, len);
        if (s == SORTD_OK)
                s = sortd__selfcheck_shapes(e, shape_cap && shape_cap < max_n ? shape_cap : max_n,
                                            &shapes, report, len);
        if (s == SORTD_OK)
                sortd__selfcheck_say(
                        report, len, s,
                        "self-check passed: %zu sorts against the %s engine, n = 2..%zu, the %zu "
                        "of "
                        "up to %d keys again as a batch, %zu segmented sorts and top-k, in %.0f ms",
                        count, sortd_engine_kind(e[1]), max_n, members, BATCH_MAX_N, shapes,
                        now_ms() - t0);
        return s;
}

/*
 * SORTD_TEST_SELFCHECK_CASES=N, for tests only: every k-th case of the sample, N of them, so
 * that an emulated daemon of several devices starts in a second rather than in ten seconds a
 * device (the emulator runs a launch in milliseconds); the shapes then sort at most
 * THIN_SHAPE_N keys each. The whole sample is what a daemon
 * checks, and the tests of the self-check itself run it whole.
 */
#define THIN_SHAPE_N 4099

static size_t thin(sortd__selfcheck_case *cases, size_t count)
{
        const char *env = getenv("SORTD_TEST_SELFCHECK_CASES");
        long want = env ? strtol(env, NULL, 10) : 0;
        size_t stride;

        if (want <= 0 || (size_t)want >= count)
                return count;
        stride = count / (size_t)want;
        for (size_t i = 0; i < (size_t)want; i++)
                cases[i] = cases[i * stride];
        return (size_t)want;
}

sortd_status sortd__selfcheck_run(sortd_engine *subject, sortd_engine *oracle, char *report,
                                  size_t report_len)
{
        size_t cap = sortd_engine_capacity(subject), count, thinned;
        sortd_engine *e[2] = {subject, oracle};
        sortd__selfcheck_case *cases;
        sortd_status s;

        if (sortd_engine_capacity(oracle) < cap)
                cap = sortd_engine_capacity(oracle);
        if (cap < 2)
                return sortd__selfcheck_say(
                        report, report_len, SORTD_OK,
                        "self-check skipped: a capacity of %zu keys needs no sort", cap);
        count = sortd__selfcheck_sample(cap, NULL, 0);
        cases = calloc(count, sizeof(*cases));
        if (!cases)
                return sortd__selfcheck_say(report, report_len, SORTD_E_NOMEM,
                                            "self-check: out of memory");
        sortd__selfcheck_sample(cap, cases, count);
        thinned = thin(cases, count);
        /* thinned, the shapes stay under one tile: every block class, no Onesweep segment */
        s = run_all(e, cases, thinned, thinned < count ? THIN_SHAPE_N : 0, report, report_len);
        free(cases);
        return s;
}

sortd_status sortd__selfcheck_against_cpu(sortd_engine *e, char *report, size_t report_len)
{
        size_t cap = sortd_engine_capacity(e) < LARGE_N ? sortd_engine_capacity(e) : LARGE_N;
        sortd_engine_config cfg = {.capacity = cap, .threads = 0};
        sortd_engine *cpu = NULL;
        sortd_status s;
        char why[256];

        /* The cpu engine takes no capacity under 1, and under 2 there is nothing to compare. */
        if (cap < 2)
                return sortd__selfcheck_say(
                        report, report_len, SORTD_OK,
                        "self-check skipped: a capacity of %zu keys needs no sort", cap);
        /* The cpu engine's own create, not sortd_engine_create: that names every engine, the GPU
           engines that call this among them (engine_create.c), and would close a loop of calls.
           What it adds, the config's faults, the oracle has none of. */
        s = sortd__cpu_engine_ops.create(&cfg, &cpu, why, sizeof(why));
        if (s != SORTD_OK)
                return sortd__selfcheck_say(report, report_len, s,
                                            "self-check: cannot create the cpu engine: %s", why);
        s = sortd__selfcheck_run(e, cpu, report, report_len);
        sortd_engine_destroy(cpu);
        return s;
}
