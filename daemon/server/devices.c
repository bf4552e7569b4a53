/* The devices setting (see devices.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "devices.h"
#include "region.h"

/* An entry's longest form: a UUID's text. */
#define ENTRY_MAX SORTD_DEVICE_UUID_TEXT

bool sortd__devices_auto(const char *spec)
{
        return strcmp(spec, "auto") == 0;
}

/* The next entry of *p into out, blanks around it dropped; false at the end of the list. */
static bool next_entry(const char **p, char *out, size_t len, size_t *entry_len)
{
        const char *s = *p, *end;

        if (!*s)
                return false;
        end = strchr(s, ',');
        if (!end)
                end = s + strlen(s);
        *p = *end ? end + 1 : end;
        while (s < end && isspace((unsigned char)*s))
                s++;
        while (end > s && isspace((unsigned char)end[-1]))
                end--;
        *entry_len = (size_t)(end - s);
        snprintf(out, len, "%.*s", (int)(end - s), s);
        return true;
}

static bool is_ordinal(const char *e)
{
        if (!*e || strlen(e) > 3)
                return false;
        for (; *e; e++)
                if (!isdigit((unsigned char)*e))
                        return false;
        return true;
}

/* GPU- or MIG-, then hex digits and dashes. */
static bool is_uuid(const char *e)
{
        if (strncasecmp(e, "GPU-", 4) != 0 && strncasecmp(e, "MIG-", 4) != 0)
                return false;
        if (!e[4])
                return false;
        for (e += 4; *e; e++)
                if (!isxdigit((unsigned char)*e) && *e != '-')
                        return false;
        return true;
}

int sortd__devices_check(const char *spec, char *why, size_t why_len)
{
        char seen[SORTD__DEVICES_MAX][ENTRY_MAX + 1], e[ENTRY_MAX + 1];
        const char *p = spec;
        size_t n = 0, len;

        if (sortd__devices_auto(spec))
                return 0;
        while (next_entry(&p, e, sizeof(e), &len)) {
                if (len == 0) {
                        snprintf(why, why_len, "devices = '%s' has an empty entry", spec);
                        return -EINVAL;
                }
                if (len >= ENTRY_MAX || (!is_ordinal(e) && !is_uuid(e))) {
                        snprintf(why, why_len,
                                 "devices: '%.64s' is neither a CUDA ordinal nor a device UUID "
                                 "(GPU-... or MIG-..., as nvidia-smi -L prints them)",
                                 e);
                        return -EINVAL;
                }
                for (size_t i = 0; i < n; i++) {
                        if (strcasecmp(seen[i], e) == 0) {
                                snprintf(why, why_len, "devices: '%s' is named twice", e);
                                return -EINVAL;
                        }
                }
                if (n == SORTD__DEVICES_MAX) {
                        snprintf(why, why_len, "devices: more than %d entries", SORTD__DEVICES_MAX);
                        return -EINVAL;
                }
                snprintf(seen[n++], sizeof(seen[0]), "%s", e);
        }
        if (n == 0) {
                snprintf(why, why_len, "devices is empty: name at least one device, or auto");
                return -EINVAL;
        }
        return 0;
}

/* Whether the UUID entry e names d: the UUID's digits start with e's (after GPU- or MIG-). */
static bool names(const char *e, const sortd_device_info *d)
{
        char text[SORTD_DEVICE_UUID_TEXT];

        sortd_device_uuid_format(d->uuid, text);
        return strncasecmp(text + 4, e + 4, strlen(e + 4)) == 0;
}

/* The index in list of the one device entry e names, or -EINVAL with why. */
static int find(const char *e, const sortd_device_info *list, size_t count, char *why,
                size_t why_len)
{
        int found = -1;

        if (is_ordinal(e)) {
                int ord = atoi(e);

                for (size_t i = 0; i < count; i++)
                        if (list[i].ordinal == ord)
                                return (int)i;
                snprintf(why, why_len, "devices: no CUDA device %s (%zu visible%s)", e, count,
                         getenv("CUDA_VISIBLE_DEVICES") ? ", after CUDA_VISIBLE_DEVICES" : "");
                return -EINVAL;
        }
        for (size_t i = 0; i < count; i++) {
                if (!names(e, &list[i]))
                        continue;
                if (found >= 0) {
                        snprintf(why, why_len, "devices: '%s' names more than one device", e);
                        return -EINVAL;
                }
                found = (int)i;
        }
        if (found < 0)
                snprintf(why, why_len, "devices: no visible CUDA device is %s", e);
        return found >= 0 ? found : -EINVAL;
}

int sortd__devices_resolve(const char *spec, const sortd_device_info *list, size_t count,
                           unsigned out[SORTD__DEVICES_MAX], char *why, size_t why_len)
{
        char e[ENTRY_MAX + 1], first[SORTD__DEVICES_MAX][ENTRY_MAX + 1];
        const char *p = spec;
        size_t len;
        int n = 0, r = sortd__devices_check(spec, why, why_len);

        if (r < 0)
                return r;
        if (sortd__devices_auto(spec)) {
                for (; (size_t)n < count && n < SORTD__DEVICES_MAX; n++)
                        out[n] = (unsigned)n;
                return n;
        }
        while (next_entry(&p, e, sizeof(e), &len)) {
                int i = find(e, list, count, why, why_len);

                if (i < 0)
                        return i;
                for (int k = 0; k < n; k++) {
                        if (out[k] == (unsigned)i) {
                                snprintf(why, why_len,
                                         "devices: '%s' and '%s' name the same device", first[k],
                                         e);
                                return -EINVAL;
                        }
                }
                snprintf(first[n], sizeof(first[n]), "%s", e);
                out[n++] = (unsigned)i;
        }
        return n;
}

uint64_t sortd__devices_auto_capacity(uint64_t free_bytes, unsigned streams,
                                      uint64_t max_request_bytes)
{
        uint64_t n = free_bytes / 2 / SORTD__DEVICES_BYTES_PER_KEY / (streams ? streams : 1);

        if (n > max_request_bytes)
                n = max_request_bytes;
        return n < (1ull << 40) ? n : 1ull << 40;
}
