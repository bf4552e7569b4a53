/*
 * The devices a daemon serves: a table and a JSON array of their rows for sortctl status, and
 * the device sortctl sort --device names, a UUID or an ordinal looked up in the last Hello.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "fail.h"
#include "json.h"
#include "sortctl.h"

enum { COLS = 11, CELL = 128 };

/* The reason comes last, after these, as it is: free text of any length. */
static const char *const HEADINGS[COLS] = {"#",     "name",     "uuid",  "pci bus id",
                                           "numa",  "capacity", "state", "sorts",
                                           "bytes", "busy s",   "queued"};

unsigned sc_devices_shown(const sortd_server_status *st)
{
        return st->device_count < SORTD_MAX_DEVICES ? st->device_count : SORTD_MAX_DEVICES;
}

/* Column col of row d, as HEADINGS names it. */
static void cell(const sortd_device *d, int col, char out[CELL])
{
        unsigned long long v = col == 5   ? d->capacity
                               : col == 7 ? d->sorts
                               : col == 8 ? d->bytes
                                          : d->queued;

        if (col == 0)
                snprintf(out, CELL, "%u", d->ordinal);
        else if (col == 1 || col == 3)
                snprintf(out, CELL, "%s", col == 1 ? d->name : d->pci_bus_id);
        else if (col == 2)
                sortd_device_uuid_format(d->uuid, out);
        else if (col == 4 && d->numa_node >= 0)
                snprintf(out, CELL, "%d", d->numa_node);
        else if (col == 4)
                snprintf(out, CELL, "-");
        else if (col == 6)
                snprintf(out, CELL, "%s", sortd_device_state_name(d->state));
        else if (col == 9)
                snprintf(out, CELL, "%.3f", (double)d->busy_ns / 1e9);
        else
                snprintf(out, CELL, "%llu", v);
        if (!out[0])
                snprintf(out, CELL, "-");
}

void sc_devices_text(FILE *f, const sortd_server_status *st)
{
        unsigned n = sc_devices_shown(st);
        int width[COLS];
        char c[CELL];

        if (!n)
                return;
        for (int col = 0; col < COLS; col++) {
                width[col] = (int)strlen(HEADINGS[col]);
                for (unsigned i = 0; i < n; i++) {
                        cell(&st->devices[i], col, c);
                        width[col] = (int)strlen(c) > width[col] ? (int)strlen(c) : width[col];
                }
        }
        for (int col = 0; col < COLS; col++)
                fprintf(f, "%-*s  ", width[col], HEADINGS[col]);
        fprintf(f, "reason\n");
        for (unsigned i = 0; i < n; i++) {
                for (int col = 0; col < COLS; col++) {
                        cell(&st->devices[i], col, c);
                        fprintf(f, "%-*s  ", width[col], c);
                }
                fprintf(f, "%s\n", st->devices[i].reason[0] ? st->devices[i].reason : "-");
        }
}

static void json_field(FILE *f, const char *name, const char *value, bool last)
{
        fprintf(f, "\"%s\": \"", name);
        sc_json_str(f, value);
        fprintf(f, "\"%s", last ? "" : ", ");
}

static void json_row(FILE *f, const sortd_device *d)
{
        char uuid[SORTD_DEVICE_UUID_TEXT];

        sortd_device_uuid_format(d->uuid, uuid);
        fprintf(f, "{\"ordinal\": %u, ", d->ordinal);
        json_field(f, "uuid", uuid, false);
        json_field(f, "name", d->name, false);
        json_field(f, "pci_bus_id", d->pci_bus_id, false);
        fprintf(f, "\"numa_node\": %d, \"capacity\": %llu, ", d->numa_node,
                (unsigned long long)d->capacity);
        json_field(f, "state", sortd_device_state_name(d->state), false);
        json_field(f, "reason", d->reason, false);
        fprintf(f,
                "\"streams\": %u, \"sorts\": %llu, \"bytes\": %llu, \"busy_ns\": %llu, "
                "\"queued\": %llu}",
                d->streams, (unsigned long long)d->sorts, (unsigned long long)d->bytes,
                (unsigned long long)d->busy_ns, (unsigned long long)d->queued);
}

void sc_devices_json(FILE *f, const sortd_server_status *st)
{
        putc('[', f);
        for (unsigned i = 0; i < sc_devices_shown(st); i++) {
                fputs(i ? ", " : "", f);
                json_row(f, &st->devices[i]);
        }
        putc(']', f);
}

/* Decimal digits only, few enough for an unsigned: no sign, space or hex. */
static bool is_ordinal(const char *s)
{
        size_t n = strspn(s, "0123456789");

        return n > 0 && n <= 9 && !s[n];
}

int sc_device_check_arg(const char *arg)
{
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES];

        if (sortd_device_uuid_parse(arg, uuid) == 0 || is_ordinal(arg))
                return 0;
        return sc_fail(SC_FAIL,
                       "--device %s: give a device's UUID "
                       "(GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as sortctl status prints it) "
                       "or its ordinal",
                       arg),
               -1;
}

/* The ordinals of info's devices, for a message: "0, 1, 2", or why there are none. */
static void list_ordinals(const sortd_info *info, char *out, size_t len)
{
        size_t used = 0;

        snprintf(out, len, "it serves none (engine %s)", info->engine);
        for (unsigned i = 0; i < info->device_count && i < SORTD_MAX_DEVICES && used < len; i++)
                used += (size_t)snprintf(out + used, len - used, "%s%u",
                                         i ? ", " : "its devices are ", info->devices[i].ordinal);
}

int sc_device_resolve(const sortd_conn *c, const char *arg, uint8_t uuid[SORTD_DEVICE_UUID_BYTES])
{
        sortd_info *info;
        char known[160];
        unsigned long ordinal;

        if (sortd_device_uuid_parse(arg, uuid) == 0)
                return SC_OK;
        if (sc_device_check_arg(arg) < 0)
                return SC_FAIL;
        info = malloc(sizeof(*info)); /* 32 KiB of rows */
        if (!info)
                return sc_fail(SC_FAIL, "out of memory");
        sortd_get_info(c, info);
        ordinal = strtoul(arg, NULL, 10);
        for (unsigned i = 0; i < info->device_count && i < SORTD_MAX_DEVICES; i++) {
                if (info->devices[i].ordinal == ordinal) {
                        memcpy(uuid, info->devices[i].uuid, SORTD_DEVICE_UUID_BYTES);
                        free(info);
                        return SC_OK;
                }
        }
        list_ordinals(info, known, sizeof(known));
        free(info);
        return sc_fail(SC_FAIL, "--device %s: sortd has no device of that ordinal; %s", arg, known);
}
