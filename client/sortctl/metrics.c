/*
 * Prometheus' text format, version 0.0.4: each family a "# HELP" line, a "# TYPE" line, then
 * its samples. Counters end in _total, as the format's conventions ask, and so are never
 * mistaken for gauges by a rate(); the names come from sortd_counters.h, so a counter added
 * there appears here with nothing else to change.
 */
#include <stdio.h>
#include <string.h>

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
}
