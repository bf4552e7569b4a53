/* The cuda engine against CUB on a fixed sample: see selfcheck.h. */
#include "selfcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_MAX 100003u

static uint64_t next(uint64_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

/* Bit patterns that stress the key map: zeros, sign bits, all ones (NaNs
   and -1), the largest finite magnitudes, the smallest denormals. */
static uint64_t special(unsigned key_bytes, unsigned i)
{
        unsigned bits = key_bytes * 8;
        uint64_t sign = (uint64_t)1 << (bits - 1), all = sign | (sign - 1);
        const uint64_t p[] = {0, sign, all, sign - 1, 1, sign | 1, all ^ 1, sign >> 1};

        return p[i % (sizeof(p) / sizeof(p[0]))] & all;
}

/* Uniform, low-entropy and few-distinct stretches, with specials sprinkled. */
static void fill(void *keys, void *vals, size_t n, unsigned kb, unsigned vb, uint64_t seed)
{
        uint64_t s = seed * 0x9e3779b97f4a7c15ull | 1;

        for (size_t i = 0; i < n; i++) {
                uint64_t k = next(&s);
                switch (i / 1000 % 3) {
                case 1:
                        k &= next(&s) & next(&s);
                        break;
                case 2:
                        k = (k % 5) * 0x0101010101010101ull;
                        break;
                }
                if (i % 17 == 0)
                        k = special(kb, (unsigned)(i / 17));
                memcpy((char *)keys + i * kb, &k, kb); /* little-endian: the low bytes */
                if (vb) {
                        uint64_t v = next(&s);
                        memcpy((char *)vals + i * vb, &v, vb);
                }
        }
}

struct sample {
        void *keys, *vals, *k_ours, *v_ours, *k_ref, *v_ref;
};

static sortd_status run_case(sortd_engine *cuda, sortd_engine *cub, struct sample *b,
                             const sortd_sort_desc *d, size_t n, char *why, size_t why_len)
{
        size_t kb = sortd_key_size(d->key_type), vb = sortd_payload_size(d->payload);
        sortd_engine *engines[2] = {cuda, cub};
        void *k[2] = {b->k_ours, b->k_ref}, *v[2] = {b->v_ours, b->v_ref};

        for (int e = 0; e < 2; e++) {
                memcpy(k[e], b->keys, n * kb);
                memcpy(v[e], b->vals, n * vb);
                sortd_status s = sortd_engine_sort(engines[e], d, k[e], v[e], n);
                if (s != SORTD_OK) {
                        snprintf(why, why_len, "self-check: %s engine: %s",
                                 sortd_engine_kind(engines[e]), sortd_engine_error(engines[e]));
                        return s;
                }
        }
        if (memcmp(k[0], k[1], n * kb) == 0 && memcmp(v[0], v[1], n * vb) == 0)
                return SORTD_OK;
        snprintf(why, why_len,
                 "self-check: cuda and cub differ sorting %zu %s keys (%s, %s, bits [%u, %u))", n,
                 sortd_key_type_name(d->key_type), sortd_payload_name(d->payload),
                 d->order == SORTD_DESCENDING ? "descending" : "ascending", d->begin_bit,
                 d->end_bit);
        return SORTD_E_SELFCHECK;
}

static sortd_status run_all(sortd_engine *cuda, sortd_engine *cub, struct sample *b, size_t cap,
                            char *why, size_t why_len)
{
        /* around both production tiles (3072 and 4096 keys) */
        const size_t sizes[] = {2, 3071, 3073, 4095, 4097, SAMPLE_MAX};
        const sortd_payload payloads[] = {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_VALUES64,
                                          SORTD_PAYLOAD_ARGSORT32};
        uint64_t seed = 1;

        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (size_t p = 0; p < sizeof(payloads) / sizeof(payloads[0]); p++)
                        for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
                                size_t n = sizes[z] < cap ? sizes[z] : cap;
                                unsigned width = (unsigned)sortd_key_size((sortd_key_type)t) * 8;
                                sortd_sort_desc d = {(sortd_key_type)t, payloads[p],
                                                     (sortd_order)(z & 1), 0, 0};
                                if (z == 2) { /* a window that ends in a short digit */
                                        d.begin_bit = 1;
                                        d.end_bit = width - 2;
                                }
                                fill(b->keys, b->vals, n, width / 8,
                                     (unsigned)sortd_payload_size(payloads[p]), seed++);
                                sortd_status s = run_case(cuda, cub, b, &d, n, why, why_len);
                                if (s != SORTD_OK)
                                        return s;
                        }
        return SORTD_OK;
}

sortd_status sortd_cuda_selfcheck(sortd_engine *cuda, int device, char *why, size_t why_len)
{
        size_t cap =
                sortd_engine_capacity(cuda) < SAMPLE_MAX ? sortd_engine_capacity(cuda) : SAMPLE_MAX;
        sortd_engine_config cfg = {cap, 0, device};
        sortd_engine *cub = NULL;
        struct sample b;
        void **all[] = {&b.keys, &b.vals, &b.k_ours, &b.v_ours, &b.k_ref, &b.v_ref};
        sortd_status s;
        char buf[256];

        if (why_len == 0) {
                why = buf;
                why_len = sizeof(buf);
        }
        if (cap < 2)
                return SORTD_OK; /* nothing the engine may sort needs the kernels */
        s = sortd_engine_create("cub", &cfg, &cub, why, why_len);
        if (s != SORTD_OK)
                return s;
        s = SORTD_OK;
        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
                if (!(*all[i] = malloc(cap * 8)))
                        s = SORTD_E_NOMEM;
        if (s == SORTD_OK)
                s = run_all(cuda, cub, &b, cap, why, why_len);
        else
                snprintf(why, why_len, "self-check: out of memory");
        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
                free(*all[i]);
        sortd_engine_destroy(cub);
        if (s == SORTD_OK)
                why[0] = '\0';
        return s;
}
