/*
 * libFuzzer target for the .npy header parser: any bytes, as the start of a file of any size.
 * The first 8 bytes choose the file size the parser is told (their low 40 bits, so that the
 * data-length check is fuzzed too) and the key type the command line gives (the next byte:
 * none, or a type for npy_retype). A header it accepts must describe data that lies inside
 * that file, a byte order only for elements of more than one byte, and fields inside their
 * record; once retyped, its keys must fill the data exactly, and the header npy_format writes
 * for them must parse and retype back to the same keys.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The header's promises about the file's data_bytes: abort when one is broken. */
static void check(const npy_header *h, uint64_t data_bytes)
{
        uint64_t size = h->fields.count ? h->fields.itemsize : sortd_key_size(h->type);

        if (h->n * size != data_bytes ||
            (h->layout.big_endian && sortd_key_size(h->layout.dtype) == 1))
                abort();
        for (unsigned i = 0; i < h->fields.count; i++) {
                const npy_field *f = &h->fields.f[i];

                if (f->offset + f->type.size * f->count > h->fields.itemsize ||
                    !memchr(f->name, '\0', sizeof(f->name)))
                        abort();
        }
}

/* The keys of h written as npy_format writes them, read back. */
static void round_trip(const npy_header *h, int want)
{
        uint8_t buf[NPY_HEADER_OUT];
        size_t len = npy_format(&h->layout, h->ndim, h->shape, buf);
        uint64_t bytes = h->n * sortd_key_size(h->type);
        npy_header back;
        char why[256];

        if (len > NPY_HEADER_OUT || npy_parse(buf, len, len + bytes, &back, why, sizeof(why)) ||
            npy_retype(&back, want < 0 ? -1 : (int)h->type, "--type", why, sizeof(why)) ||
            back.type != h->type || back.n != h->n || back.ndim != h->ndim ||
            back.layout.pairs != h->layout.pairs || back.layout.dtype != h->layout.dtype)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        uint64_t extra = 0, file;
        npy_header h;
        char why[256];
        uint8_t *copy;
        int want;

        if (size >= 8) {
                memcpy(&extra, data, 8);
                data += 8;
                size -= 8;
        }
        file = (uint64_t)size + extra % (1ull << 40);
        want = (int)((extra >> 40 & 0xff) % (SORTD_KEY_TYPE_COUNT + 1)) - 1;
        /* A copy of exactly size bytes, so that ASan sees any read past them. */
        copy = malloc(size ? size : 1);
        if (!copy)
                return 0;
        memcpy(copy, data, size);
        if (npy_parse(copy, size, file, &h, why, sizeof(why)) == 0) {
                if (h.data_offset > file)
                        abort();
                check(&h, file - h.data_offset);
                if (npy_retype(&h, want, "--type", why, sizeof(why)) == 0) {
                        check(&h, file - h.data_offset);
                        if (!h.fields.count)
                                round_trip(&h, want);
                } else if (!memchr(why, '\0', sizeof(why))) {
                        abort();
                }
        }
        free(copy);
        return 0;
}
