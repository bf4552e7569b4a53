/*
 * libFuzzer target for the engine: a request drawn from the input (n up to 16385, key type,
 * payload, order, bit range up to bit 135, whether n is past the capacity) and keys (1 to 16
 * bytes each) and values that are the input's bytes, sorted by the CPU engine and by the reference
 * (tests/support/reference.c), which must agree bit for bit; a request the engine refuses must be
 * one the reference refuses or one over the capacity, and must leave the buffers as they were. The
 * engine is made once per process, with 2 threads and a capacity of 16384 keys: sizes up to 8192
 * take its one-thread small sort, larger ones Onesweep's tiles.
 *
 * Bits 1-2 of the head's byte 7 pick the call: 0 and 1 a sort, 2 a segmented sort, 3 a top-k
 * (against ref_sort_segments and ref_topk). Their segments' lengths are the input's bytes (bit
 * 5: times 64, past the small sorts' classes), by u32 or u64 offsets (bit 3) or as uniform rows
 * (bit 4); a top-k's k is the first two bytes after the head, modulo n + 2.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "reference.h"

#define CAPACITY 16384

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sortd_engine *engine(void)
{
        static sortd_engine *e;
        sortd_engine_config cfg = {.capacity = CAPACITY, .threads = 2};
        char why[256];

        if (!e && sortd_engine_create("cpu", &cfg, &e, why, sizeof(why)) != SORTD_OK) {
                fprintf(stderr, "fuzz_engine: %s\n", why);
                abort();
        }
        return e;
}

/* Segments over n keys from the input's bytes, into *seg; the offsets (NULL for rows) to free. */
static void *segments_of(uint8_t how, const uint8_t *data, size_t size, size_t *n,
                         sortd_segments *seg)
{
        unsigned ob = how & 8 ? 8 : 4;
        uint8_t *offsets = malloc((*n + 2) * ob);
        uint64_t at = 0, count = 0;

        if (!offsets)
                abort();
        if (how & 16) {
                uint64_t row = (size ? data[0] : 1) % 97 + 1;

                *n -= *n % row;
                *seg = (sortd_segments){.count = *n / row, .row_len = row};
                free(offsets);
                return NULL;
        }
        while (at < *n || count == 0) {
                uint64_t len = size ? data[count % size] : 1;

                len = how & 32 ? len * 64 : len % 48;
                len = len < *n - at && count < *n ? len : *n - at; /* n + 1 offsets at most */
                if (ob == 4)
                        ((uint32_t *)(void *)offsets)[count] = (uint32_t)at;
                else
                        ((uint64_t *)(void *)offsets)[count] = at;
                at += len;
                count++;
        }
        if (ob == 4)
                ((uint32_t *)(void *)offsets)[count] = (uint32_t)at;
        else
                ((uint64_t *)(void *)offsets)[count] = at;
        *seg = (sortd_segments){.count = count, .offsets = offsets, .offset_bytes = ob};
        return offsets;
}

/* Whether the engine's refusal s is allowed although the reference sorts: n over the capacity. */
static int refusal_allowed(sortd_status s, size_t n)
{
        return s == SORTD_E_CAPACITY && n > CAPACITY;
}

/* A top-k of the keys and values at orig, by the engine and the reference. */
static void check_topk(const sortd_sort_desc *d, const sortd_segments *seg, uint64_t k,
                       const uint8_t *orig, size_t voff, size_t n, size_t len)
{
        uint64_t m = sortd_topk_results(seg, n, k);
        size_t out = m * (16 + 8) + 16; /* the widest keys (128-bit) and values */
        uint8_t *in = malloc(len + 1), *got = malloc(out), *want = malloc(out);
        size_t kb = sortd_key_size(d->key_type) ? sortd_key_size(d->key_type) : 8;
        size_t gv = (m * kb + 7) / 8 * 8;
        sortd_status s;
        int ref;

        if (!in || !got || !want)
                abort();
        memcpy(in, orig, len);
        memset(got, 0xa5, out);
        memset(want, 0xa5, out);
        ref = ref_topk(d, seg, k, in, in + voff, want, want + gv, n);
        s = sortd_engine_topk(engine(), d, seg, k, SORTD_MEMORY_HOST, in, in + voff, got, got + gv,
                              n);
        if (s == SORTD_OK && (ref != 0 || memcmp(got, want, out) != 0))
                abort();
        if (s != SORTD_OK && ref == 0 && !refusal_allowed(s, n))
                abort();
        if (memcmp(in, orig, len) != 0)
                abort(); /* the inputs are only read */
        free(in);
        free(got);
        free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        sortd_sort_desc d;
        size_t n, kb, voff, len;
        uint8_t *orig, *got, *want;
        int ref;
        sortd_status s;
        uint8_t how;
        sortd_segments seg;
        void *offsets = NULL;

        if (size < 8)
                return 0;
        how = data[7];
        /* Out-of-range enums and bit ranges included: both sides must refuse them. */
        d = (sortd_sort_desc){.key_type = (sortd_key_type)(data[0] % (SORTD_KEY_TYPE_COUNT + 1)),
                              .payload = (sortd_payload)(data[1] % (SORTD_PAYLOAD_COUNT + 1)),
                              .order = (sortd_order)(data[2] % (SORTD_ORDER_COUNT + 1)),
                              .begin_bit = data[3] % 136u,
                              .end_bit = data[4] % 136u};
        n = ((size_t)data[5] | (size_t)data[6] << 8) % (CAPACITY + 2);
        if (data[7] & 1)
                n %= 512; /* most runs small: far more of them per second */
        data += 8;
        size -= 8;
        kb = n * (sortd_key_size(d.key_type) ? sortd_key_size(d.key_type) : 8);
        voff = (kb + 7) / 8 * 8; /* values aligned for either width */
        len = voff + n * 8;
        orig = malloc(len + 1);
        got = malloc(len + 1);
        want = malloc(len + 1);
        if (!orig || !got || !want)
                abort();
        for (size_t i = 0; i < len; i++)
                orig[i] = size ? data[i % size] : (uint8_t)i;
        if ((how >> 1 & 3) >= 2)
                offsets = segments_of(how, data, size, &n, &seg);
        if ((how >> 1 & 3) == 3) {
                uint64_t k = size >= 2 ? ((uint64_t)data[0] | (uint64_t)data[1] << 8) : n;

                check_topk(&d, &seg, k % (n + 2), orig, voff, n, len);
                free(offsets);
                free(orig);
                free(got);
                free(want);
                return 0;
        }
        memcpy(got, orig, len);
        memcpy(want, orig, len);
        if ((how >> 1 & 3) == 2) {
                ref = ref_sort_segments(&d, &seg, want, want + voff, n);
                s = sortd_engine_sort_segments(engine(), &d, &seg, SORTD_MEMORY_HOST, got,
                                               got + voff, n);
        } else {
                ref = ref_sort(&d, want, want + voff, n);
                s = sortd_engine_sort(engine(), &d, got, got + voff, n);
        }
        if (s == SORTD_OK && (ref != 0 || memcmp(got, want, len) != 0))
                abort();
        if (s != SORTD_OK && ref == 0 && !refusal_allowed(s, n))
                abort();
        if (s != SORTD_OK && memcmp(got, orig, len) != 0)
                abort(); /* a refused request changes nothing */
        free(offsets);
        free(orig);
        free(got);
        free(want);
        return 0;
}
