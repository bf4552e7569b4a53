/*
 * Prometheus' text format, version 0.0.4: each family a "# HELP" line, a "# TYPE" line, then
 * its samples. Counters end in _total, as the format's conventions ask, and so are never
 * mistaken for gauges by a rate(); the names come from sortd_counters.h, so a counter added
 * there appears here with nothing else to change. Each device's series (sortd_device_*) carry
 * its UUID, name and PCI bus id as labels, and their families are printed, empty, even where
 * there are no devices, so that a dashboard's queries name families that exist.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "devices.h"
#include "metrics.h"

/* A label value: backslash, double quote and newline escaped, as the format requires. */
static void label_value(FILE *f, const char *s)
{
        for (; *s; s++) {
                if (*s == '\\' || *s == '"')
                        fprintf(f, "\\%c", *s);
                else if (*s == '\n')
                        fputs("\\n", f);
                else
                        putc(*s, f);
        }
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name, or name_total for a counter whose name does not end in _total already. */
static void metric_name(char *out, size_t len, const char *name, int counter)
{
        size_t n = strlen(name);
        int has_total = n >= 6 && strcmp(name + n - 6, "_total") == 0;

        snprintf(out, len, "sortd_%s%s", name, counter && !has_total ? "_total" : "");
}

static void sample(FILE *f, const char *name, int counter, const char *help, unsigned long long v)
{
        char full[96];

        metric_name(full, sizeof(full), name, counter);
        family(f, full, counter ? "counter" : "gauge", help);
        fprintf(f, "%s %llu\n", full, v);
}

/* The labels that name device d: its ordinal in the daemon, as nvidia-smi counts GPUs and
   DCGM's exporter labels them, its UUID as nvidia-smi -L prints it (which survives a
   renumbering), name, PCI bus id. */
static void device_labels(FILE *f, const sortd_device *d)
{
        char uuid[SORTD_DEVICE_UUID_TEXT];

        sortd_device_uuid_format(d->uuid, uuid);
        fprintf(f, "device=\"%u\",uuid=\"%s\",name=\"", (unsigned)d->ordinal, uuid);
        label_value(f, d->name);
        fputs("\",pci_bus_id=\"", f);
        label_value(f, d->pci_bus_id);
        putc('"', f);
}

/* A device's numbers, each a uint64_t of sortd_device; nanoseconds go out as seconds, the
   format's base unit, to the digit. */
static const struct device_metric {
        const char *name, *type, *help;
        size_t offset;
        bool ns;
} DEVICE_METRICS[] = {
        {"sortd_device_capacity_keys", "gauge", "The most keys one sort on the device may have.",
         offsetof(sortd_device, capacity), false},
        {"sortd_device_sorts_total", "counter", "Sorts the device ran, successful or not.",
         offsetof(sortd_device, sorts), false},
        {"sortd_device_bytes_total", "counter",
         "Bytes of keys and values (or indices) the device sorted.", offsetof(sortd_device, bytes),
         false},
        {"sortd_device_busy_seconds_total", "counter",
         "Seconds the device spent sorting (two sorts at once count twice).",
         offsetof(sortd_device, busy_ns), true},
        {"sortd_device_queued", "gauge", "Sorts waiting for the device now.",
         offsetof(sortd_device, queued), false},
};

static void device_metrics(FILE *f, const sortd_server_status *st)
{
        unsigned n = sc_devices_shown(st);

        family(f, "sortd_device_up", "gauge",
               "1 while the device serves; 0 when it failed its start or was lost (see state).");
        for (unsigned i = 0; i < n; i++) {
                fputs("sortd_device_up{", f);
                device_labels(f, &st->devices[i]);
                fprintf(f, ",state=\"%s\"} %d\n", sortd_device_state_name(st->devices[i].state),
                        st->devices[i].state == SORTD_DEVICE_SERVING);
        }
        for (size_t m = 0; m < sizeof(DEVICE_METRICS) / sizeof(DEVICE_METRICS[0]); m++) {
                const struct device_metric *dm = &DEVICE_METRICS[m];

                family(f, dm->name, dm->type, dm->help);
                for (unsigned i = 0; i < n; i++) {
                        uint64_t v;

                        memcpy(&v, (const char *)&st->devices[i] + dm->offset, sizeof(v));
                        fprintf(f, "%s{", dm->name);
                        device_labels(f, &st->devices[i]);
                        if (dm->ns)
                                fprintf(f, "} %llu.%09llu\n", (unsigned long long)(v / 1000000000),
                                        (unsigned long long)(v % 1000000000));
                        else
                                fprintf(f, "} %llu\n", (unsigned long long)v);
                }
        }
}

void sc_metrics_print(FILE *f, const sortd_server_status *st)
{
        family(f, "sortd_info", "gauge", "The engine serving and its device; always 1.");
        fputs("sortd_info{engine=\"", f);
        label_value(f, st->engine);
        fputs("\",device=\"", f);
        label_value(f, st->device);
        fputs("\"} 1\n", f);
        sample(f, "capacity_keys", 0, "The most keys one sort may have.",
               (unsigned long long)st->capacity);
        family(f, "sortd_uptime_seconds", "gauge", "Seconds since the daemon started.");
        fprintf(f, "sortd_uptime_seconds %.3f\n", st->uptime_ms / 1e3);
#define COUNTER 1
#define GAUGE 0
#define SAMPLE(name, kind, help) sample(f, #name, kind, help, (unsigned long long)st->name);
        SORTD_STATUS_COUNTER_KINDS(SAMPLE)
#undef SAMPLE
#undef GAUGE
#undef COUNTER
        device_metrics(f, st);
}
