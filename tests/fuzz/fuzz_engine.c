/*
 * libFuzzer target for the engine: a request drawn from the input (n up to 16385, key type,
 * payload, order, bit range, whether n is past the capacity) and keys and values that are the
 * input's bytes, sorted by the CPU engine and by the reference (tests/support/reference.c),
 * which must agree bit for bit; a request the engine refuses must be one the reference refuses
 * or one over the capacity, and must leave the buffers as they were.
 * The engine is made once per process, with 2 threads and a capacity of 16384 keys: sizes up
 * to 8192 take its one-thread small sort, larger ones Onesweep's tiles.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        sortd_sort_desc d;
        size_t n, kb, voff, len;
        uint8_t *orig, *got, *want;
        int ref;
        sortd_status s;

        if (size < 8)
                return 0;
        /* Out-of-range enums and bit ranges included: both sides must refuse them. */
        d = (sortd_sort_desc){.key_type = (sortd_key_type)(data[0] % (SORTD_KEY_TYPE_COUNT + 1)),
                              .payload = (sortd_payload)(data[1] % (SORTD_PAYLOAD_COUNT + 1)),
                              .order = (sortd_order)(data[2] % (SORTD_ORDER_COUNT + 1)),
                              .begin_bit = data[3] % 72u,
                              .end_bit = data[4] % 72u};
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
        memcpy(got, orig, len);
        memcpy(want, orig, len);
        ref = ref_sort(&d, want, want + voff, n);
        s = sortd_engine_sort(engine(), &d, got, got + voff, n);
        if (s == SORTD_OK && (ref != 0 || memcmp(got, want, len) != 0))
                abort();
        if (s != SORTD_OK && ref == 0 && !(s == SORTD_E_CAPACITY && n > CAPACITY))
                abort();
        if (s != SORTD_OK && memcmp(got, orig, len) != 0)
                abort(); /* a refused request changes nothing */
        free(orig);
        free(got);
        free(want);
        return 0;
}
