/*
 * libFuzzer target for the .npy header parser: any bytes, as the start of a file of any size.
 * The first 8 bytes choose the file size the parser is told (so the data-length check is
 * fuzzed too); a header it accepts must describe data that lies inside that file, and a byte
 * order only for elements of more than one byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        uint64_t extra = 0;
        npy_header h;
        char why[256];
        uint8_t *copy;

        if (size >= 8) {
                memcpy(&extra, data, 8);
                data += 8;
                size -= 8;
        }
        /* A copy of exactly size bytes, so that ASan sees any read past them. */
        copy = malloc(size ? size : 1);
        if (!copy)
                return 0;
        memcpy(copy, data, size);
        if (npy_parse(copy, size, (uint64_t)size + extra % (1ull << 40), &h, why, sizeof(why)) ==
            0) {
                uint64_t file = (uint64_t)size + extra % (1ull << 40);

                if (h.data_offset > file || h.n * sortd_key_size(h.type) != file - h.data_offset ||
                    (h.big_endian && sortd_key_size(h.type) == 1))
                        abort();
        }
        free(copy);
        return 0;
}
