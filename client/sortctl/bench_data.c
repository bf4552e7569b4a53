/* See bench_data.h. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bench_data.h"

static const char *const DIST[BENCH_DIST_COUNT] = {"uniform", "sorted", "reversed", "few"};

int bench_dist_parse(const char *name)
{
        for (int d = 0; d < BENCH_DIST_COUNT; d++)
                if (strcmp(name, DIST[d]) == 0)
                        return d;
        return -1;
}

const char *bench_dist_name(bench_dist d)
{
        return DIST[d];
}

static uint64_t splitmix64(uint64_t *s)
{
        uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
}

static bool is_signed(sortd_key_type t)
{
        return t == SORTD_KEY_I8 || t == SORTD_KEY_I16 || t == SORTD_KEY_I32 || t == SORTD_KEY_I64;
}

static bool is_float(sortd_key_type t)
{
        return t == SORTD_KEY_F16 || t == SORTD_KEY_BF16 || t == SORTD_KEY_F32 ||
               t == SORTD_KEY_F64;
}

int bench_type_parse(const char *name)
{
        int t = sortd_key_type_parse(name);

        return t >= 0 && sortd_key_size((sortd_key_type)t) <= 8 ? t : -1;
}

/* The order-preserving unsigned image of a key (sortd_types.h): what the sort orders by. */
static uint64_t key_image(const uint8_t *k, sortd_key_type t)
{
        size_t ks = sortd_key_size(t);
        uint64_t u = 0, sign = 1ull << (ks * 8 - 1), all = sign | (sign - 1);

        memcpy(&u, k, ks); /* little-endian, as the wire and the engines */
        if (is_signed(t))
                return u ^ sign;
        if (is_float(t))
                return u & sign ? ~u & all : u | sign;
        return u;
}

/* key_image's inverse. */
static void from_image(uint64_t u, sortd_key_type t, uint8_t *k)
{
        size_t ks = sortd_key_size(t);
        uint64_t sign = 1ull << (ks * 8 - 1), all = sign | (sign - 1);

        if (is_signed(t))
                u ^= sign;
        else if (is_float(t))
                u = u & sign ? u & ~sign : ~u & all;
        memcpy(k, &u, ks);
}

void bench_generate(uint8_t *keys, size_t n, sortd_key_type t, bench_dist d, uint64_t seed)
{
        size_t ks = sortd_key_size(t);
        unsigned bits = (unsigned)ks * 8;
        uint64_t few[16];

        for (int i = 0; i < 16; i++)
                few[i] = splitmix64(&seed);
        for (size_t i = 0; i < n; i++) {
                /* i spread over the image's range: i * 2^bits / n, in 128 bits. */
                uint64_t spread = (uint64_t)(((unsigned __int128)i << bits) / n), u;

                switch (d) {
                case BENCH_SORTED:
                        u = spread;
                        break;
                case BENCH_REVERSED:
                        u = ~spread;
                        break;
                case BENCH_FEW:
                        u = few[splitmix64(&seed) & 15];
                        break;
                default:
                        u = splitmix64(&seed);
                        break;
                }
                from_image(u, t, keys + i * ks);
        }
}

static uint64_t mix(uint64_t x)
{
        return splitmix64(&x);
}

/* Keys as a multiset: two sums that a lost or duplicated key changes. */
static void multiset_hash(const uint8_t *keys, size_t n, sortd_key_type t, uint64_t h[2])
{
        size_t ks = sortd_key_size(t);

        h[0] = h[1] = 0;
        for (size_t i = 0; i < n; i++) {
                uint64_t u = key_image(keys + i * ks, t);

                h[0] += mix(u);
                h[1] += mix(u ^ 0x5bd1e9955bd1e995ull) * (u | 1);
        }
}

/* The payload: each index (or value, which was its index) leads back to its key, once. */
static const char *check_payload(const uint8_t *input, const uint8_t *out, const uint8_t *vals,
                                 size_t vs, size_t n, size_t ks, size_t *at)
{
        uint8_t *seen = calloc(n / 8 + 1, 1);
        const char *bad = seen ? NULL : "out of memory for the check";

        for (size_t i = 0; i < n && !bad; i++) {
                uint64_t idx = 0;

                memcpy(&idx, vals + i * vs, vs);
                *at = i;
                if (idx >= n || seen[idx / 8] & (1u << (idx % 8)))
                        bad = "an index (or value) is out of range or repeated";
                else if (memcmp(out + i * ks, input + idx * ks, ks) != 0)
                        bad = "an index (or value) does not lead back to its key";
                else
                        seen[idx / 8] |= (uint8_t)(1u << (idx % 8));
        }
        free(seen);
        return bad;
}

const char *bench_verify(const uint8_t *input, const uint8_t *out, const uint8_t *vals, size_t vs,
                         size_t n, sortd_key_type t, sortd_order order, size_t *at)
{
        size_t ks = sortd_key_size(t);
        uint64_t h_in[2], h_out[2], prev = 0, prev_idx = 0;
        const char *bad;

        *at = 0;
        for (size_t i = 0; i < n; i++) {
                uint64_t k = key_image(out + i * ks, t), idx = 0;

                *at = i;
                if (vals)
                        memcpy(&idx, vals + i * vs, vs);
                if (i > 0 && (order == SORTD_ASCENDING ? k < prev : k > prev))
                        return "keys out of order";
                if (i > 0 && vals && k == prev && idx <= prev_idx)
                        return "equal keys out of input order (not stable)";
                prev = k;
                prev_idx = idx;
        }
        if (vals)
                return (bad = check_payload(input, out, vals, vs, n, ks, at)) ? bad : NULL;
        multiset_hash(input, n, t, h_in);
        multiset_hash(out, n, t, h_out);
        return memcmp(h_in, h_out, sizeof(h_in)) ? "the keys are not the input's keys" : NULL;
}
