/* A device UUID's text form, the one nvidia-smi -L prints, both ways. */
#include <string.h>

#include "sortd_types.h"

/* The dashes of 8-4-4-4-12 come before these bytes. */
static int dash_before(unsigned i)
{
        return i == 4 || i == 6 || i == 8 || i == 10;
}

void sortd_device_uuid_format(const uint8_t uuid[SORTD_DEVICE_UUID_BYTES],
                              char out[SORTD_DEVICE_UUID_TEXT])
{
        static const char hex[] = "0123456789abcdef";
        char *p = out + 4;

        memcpy(out, "GPU-", 4);
        for (unsigned i = 0; i < SORTD_DEVICE_UUID_BYTES; i++) {
                if (dash_before(i))
                        *p++ = '-';
                *p++ = hex[uuid[i] >> 4];
                *p++ = hex[uuid[i] & 15];
        }
        *p = '\0';
}

static int hex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int sortd_device_uuid_parse(const char *text, uint8_t uuid[SORTD_DEVICE_UUID_BYTES])
{
        uint8_t got[SORTD_DEVICE_UUID_BYTES];
        const char *p = text;

        if (!p)
                return -1;
        if (strncmp(p, "GPU-", 4) == 0 || strncmp(p, "MIG-", 4) == 0)
                p += 4;
        for (unsigned i = 0; i < SORTD_DEVICE_UUID_BYTES; i++) {
                int hi, lo;

                if (dash_before(i) && *p++ != '-')
                        return -1;
                hi = hex_digit(p[0]);
                lo = hi < 0 ? -1 : hex_digit(p[1]);
                if (lo < 0)
                        return -1;
                got[i] = (uint8_t)(hi << 4 | lo);
                p += 2;
        }
        if (*p)
                return -1;
        memcpy(uuid, got, sizeof(got));
        return 0;
}
