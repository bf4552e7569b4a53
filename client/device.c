/*
 * The devices a daemon lists in Hello and Status, and the device a sort asks for. Below call.c
 * (every sort's checks use it) and client.c (Hello and Status), on transport.c.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "device.h"

const char *sortd_device_state_name(sortd_device_state s)
{
        switch (s) {
        case SORTD_DEVICE_SERVING:
                return "serving";
        case SORTD_DEVICE_FAILED:
                return "failed";
        case SORTD_DEVICE_LOST:
                return "lost";
        default:
                return "unknown";
        }
}

static sortd_device_state state_from(Sortd__Wire__DeviceState s)
{
        switch (s) {
        case SORTD__WIRE__DEVICE_STATE__DEVICE_SERVING:
                return SORTD_DEVICE_SERVING;
        case SORTD__WIRE__DEVICE_STATE__DEVICE_FAILED:
                return SORTD_DEVICE_FAILED;
        case SORTD__WIRE__DEVICE_STATE__DEVICE_LOST:
                return SORTD_DEVICE_LOST;
        default:
                return SORTD_DEVICE_UNKNOWN;
        }
}

static void row(const Sortd__Wire__Device *w, sortd_device *d)
{
        *d = (sortd_device){
                .ordinal = w->ordinal,
                .numa_node = w->numa_node,
                .state = state_from(w->state),
                .streams = w->streams,
                .capacity = w->capacity,
                .sorts = w->sorts,
                .bytes = w->bytes,
                .busy_ns = w->busy_ns,
                .queued = w->queued,
        };
        /* A uuid of another length names no device this library could ask for: left zero. */
        if (w->uuid.len == SORTD_DEVICE_UUID_BYTES)
                memcpy(d->uuid, w->uuid.data, SORTD_DEVICE_UUID_BYTES);
        snprintf(d->name, sizeof(d->name), "%s", w->name);
        snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%s", w->pci_bus_id);
        snprintf(d->reason, sizeof(d->reason), "%s", w->reason);
}

void sortd__device_rows(Sortd__Wire__Device *const *rows, size_t n, unsigned *count,
                        sortd_device *out)
{
        size_t keep = n < SORTD_MAX_DEVICES ? n : SORTD_MAX_DEVICES;

        for (size_t i = 0; i < keep; i++)
                row(rows[i], &out[i]);
        *count = n < UINT32_MAX ? (unsigned)n : UINT32_MAX;
}

bool sortd__device_hinted(const uint8_t uuid[SORTD_DEVICE_UUID_BYTES])
{
        static const uint8_t none[SORTD_DEVICE_UUID_BYTES];

        return memcmp(uuid, none, sizeof(none)) != 0;
}

/* The uuids of info's serving devices, for a refusal's message. */
static void list_serving(const sortd_info *info, char *out, size_t len)
{
        size_t used = 0;
        unsigned listed = 0;

        out[0] = '\0';
        for (unsigned i = 0; i < info->device_count && i < SORTD_MAX_DEVICES; i++) {
                char text[SORTD_DEVICE_UUID_TEXT];

                if (info->devices[i].state != SORTD_DEVICE_SERVING)
                        continue;
                sortd_device_uuid_format(info->devices[i].uuid, text);
                used += (size_t)snprintf(out + used, used < len ? len - used : 0, "%s%s",
                                         listed++ ? ", " : "", text);
                if (used >= len)
                        return;
        }
        if (!listed)
                snprintf(out, len, "none (engine %s)", info->engine);
}

/* The row of uuid among the last Hello's; NULL when it is not one of them. */
static const sortd_device *find(const sortd_info *info, const uint8_t uuid[SORTD_DEVICE_UUID_BYTES])
{
        for (unsigned i = 0; i < info->device_count && i < SORTD_MAX_DEVICES; i++)
                if (memcmp(info->devices[i].uuid, uuid, SORTD_DEVICE_UUID_BYTES) == 0)
                        return &info->devices[i];
        return NULL;
}

sortd_status sortd__device_check_hint(sortd_conn *c, const uint8_t uuid[SORTD_DEVICE_UUID_BYTES])
{
        const sortd_device *d;
        char text[SORTD_DEVICE_UUID_TEXT], serving[160];

        if (!sortd__device_hinted(uuid))
                return SORTD_OK;
        d = find(&c->info, uuid);
        if (d ? d->state == SORTD_DEVICE_SERVING : c->info.device_count > SORTD_MAX_DEVICES)
                return SORTD_OK;
        sortd_device_uuid_format(uuid, text);
        list_serving(&c->info, serving, sizeof(serving));
        if (d)
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "device %s is %s (%.60s); sortd serves %s", text,
                                             sortd_device_state_name(d->state), d->reason, serving);
        return sortd__transport_fail(
                c, SORTD_E_INVAL, "device %s is not one sortd serves; it serves %s", text, serving);
}
