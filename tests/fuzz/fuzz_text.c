/*
 * libFuzzer target for the text parser: the first byte chooses the key type, the rest is the
 * file (every key type, the 16-bit floats and 128-bit integers included). Every line parsed
 * must land inside the buffer text_count_lines sized (the count text_parse returns no more
 * than it), and what parses must format and parse back to the same value (NaN payloads aside,
 * which text does not keep).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(sortd_key_type t, const uint8_t *a, const uint8_t *b)
{
        size_t ks = sortd_key_size(t);
        double x, y;
        float f, g;
        uint16_t h, k;

        if (t == SORTD_KEY_F32) {
                memcpy(&f, a, 4);
                memcpy(&g, b, 4);
                return isnan(f) ? isnan(g) && signbit(f) == signbit(g) : memcmp(a, b, 4) == 0;
        }
        if (t == SORTD_KEY_F64) {
                memcpy(&x, a, 8);
                memcpy(&y, b, 8);
                return isnan(x) ? isnan(y) && signbit(x) == signbit(y) : memcmp(a, b, 8) == 0;
        }
        if (t == SORTD_KEY_F16 || t == SORTD_KEY_BF16) {
                /* A NaN: all ones in the exponent (5 bits, or 8), something in the mantissa. */
                uint16_t exp = t == SORTD_KEY_F16 ? 0x7c00 : 0x7f80;

                memcpy(&h, a, 2);
                memcpy(&k, b, 2);
                if ((h & exp) == exp && (h & ~exp & 0x7fff))
                        return (k & exp) == exp && (k & ~exp & 0x7fff) && (h >> 15) == (k >> 15);
        }
        return memcmp(a, b, ks) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        sortd_key_type t;
        size_t ks;
        uint64_t n, parsed = 0, one = 0;
        char *text, line[TEXT_MAX_FORMATTED];
        uint8_t *out, back[16];
        text_error err;

        if (size < 1)
                return 0;
        t = (sortd_key_type)(data[0] % SORTD_KEY_TYPE_COUNT);
        ks = sortd_key_size(t);
        text = malloc(size - 1 ? size - 1 : 1);
        if (!text)
                return 0;
        memcpy(text, data + 1, size - 1);
        n = text_count_lines(text, size - 1);
        out = malloc(n ? n * ks : 1);
        if (out && text_parse(text, size - 1, t, out, &parsed, &err) == 0) {
                if (parsed > n)
                        abort();
                for (uint64_t i = 0; i < parsed; i++) {
                        size_t len = text_format(t, out + i * ks, line);

                        if (len == 0 || len > TEXT_MAX_FORMATTED || line[len - 1] != '\n')
                                abort();
                        if (text_parse(line, len, t, back, &one, &err) != 0 || one != 1 ||
                            !same(t, out + i * ks, back))
                                abort();
                }
        } else if (out &&
                   (err.line == 0 || err.line > n || !memchr(err.what, '\0', sizeof(err.what)))) {
                abort();
        }
        free(out);
        free(text);
        return 0;
}
