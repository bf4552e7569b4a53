/* The subcommands that ask the daemon about itself: status, ping, hello. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "atomic.h"
#include "connect.h"
#include "devices.h"
#include "fail.h"
#include "json.h"
#include "metrics.h"
#include "sortctl.h"

static const char STATUS_HELP[] =
        "usage: sortctl status [--format text|json|prometheus] [--json] [--output FILE]\n"
        "                      [--socket PATH] [--timeout MS]\n"
        "\n"
        "Prints the daemon's engine (and why it was chosen), its capacity, uptime and every\n"
        "counter, one per line, then a row for each device it serves or was asked to serve\n"
        "(GPUs; none on the cpu engine): ordinal, name, UUID, PCI bus id, NUMA node, capacity,\n"
        "state (serving, failed, lost), sorts, bytes, busy seconds, queued sorts and the\n"
        "reason for its state. With --format json (or --json), one JSON object with the same\n"
        "fields, the devices as an array; with --format prometheus, Prometheus' text format\n"
        "(counters as sortd_NAME_total, each device's as sortd_device_NAME with labels device,\n"
        "name and pci_bus_id), for node_exporter's textfile collector. --output FILE writes\n"
        "it to FILE, which a reader sees whole or not at all (a temporary file renamed over\n"
        "it), rather than to the standard output.\n";

static const char PING_HELP[] =
        "usage: sortctl ping [--count N] [--socket PATH] [--timeout MS]\n"
        "\n"
        "Sends N pings (default 1), prints each round trip's time, and the minimum, mean and\n"
        "maximum when N > 1.\n";

static const char HELLO_HELP[] =
        "usage: sortctl hello [--socket PATH] [--timeout MS]\n"
        "\n"
        "Prints the daemon's version, protocol, engine, device, capacity and limits.\n";

enum status_format { STATUS_TEXT, STATUS_JSON, STATUS_PROMETHEUS };

typedef struct status_options {
        enum status_format format;
        const char *output; /* NULL: the standard output */
} status_options;

/* --json, --format NAME, --output FILE. */
static int status_option(sc_args *a, const char *name, const char *pos, void *ctx)
{
        static const char *const names[] = {"text", "json", "prometheus"};
        status_options *o = ctx;
        const char *v;

        if (name && strcmp(name, "json") == 0) {
                o->format = STATUS_JSON;
                return 1;
        }
        if (!name || (strcmp(name, "format") != 0 && strcmp(name, "output") != 0))
                return 0;
        if (!(v = sc_args_value(a, name)))
                return -1;
        if (strcmp(name, "output") == 0) {
                o->output = v;
                return 1;
        }
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                if (strcmp(v, names[i]) == 0) {
                        o->format = (enum status_format)i;
                        return 1;
                }
        }
        return sc_fail(SC_FAIL, "--format %s: give text, json or prometheus", v), -1;
}

/* The widest label of the listing, so that every value starts in one column. */
static int label_width(void)
{
        size_t w = strlen("engine chosen");

#define WIDEST(name, field, wire_type, label)                                                      \
        if (strlen(label) > w)                                                                     \
                w = strlen(label);
        SORTD_STATUS_COUNTERS(WIDEST)
#undef WIDEST
        return (int)w;
}

static void print_status(FILE *out, const sortd_server_status *st, enum status_format f)
{
        if (f == STATUS_PROMETHEUS) {
                sc_metrics_print(out, st);
                return;
        }
        if (f == STATUS_JSON) {
                fprintf(out, "{\"engine\": \"");
                sc_json_str(out, st->engine);
                fprintf(out, "\", \"device\": \"");
                sc_json_str(out, st->device);
                fprintf(out, "\", \"engine_reason\": \"");
                sc_json_str(out, st->engine_reason);
                fprintf(out, "\", \"capacity\": %llu, \"uptime_ms\": %llu",
                        (unsigned long long)st->capacity, (unsigned long long)st->uptime_ms);
#define JSON(name, field, wire_type, label)                                                        \
        fprintf(out, ", \"%s\": %llu", #name, (unsigned long long)st->name);
                SORTD_STATUS_COUNTERS(JSON)
#undef JSON
                fprintf(out, ", \"devices\": ");
                sc_devices_json(out, st);
                fprintf(out, "}\n");
                return;
        }
        int w = label_width();

        fprintf(out, "%-*s %s (%s)\n%-*s %s\n%-*s %llu\n%-*s %.1f s\n", w, "engine", st->engine,
                st->device, w, "engine chosen", st->engine_reason, w, "capacity",
                (unsigned long long)st->capacity, w, "uptime", st->uptime_ms / 1e3);
#define PRINT(name, field, wire_type, label)                                                       \
        fprintf(out, "%-*s %llu\n", w, label, (unsigned long long)st->name);
        SORTD_STATUS_COUNTERS(PRINT)
#undef PRINT
        fprintf(out, "%-*s %u", w, "devices", st->device_count);
        if (st->device_count > sc_devices_shown(st))
                fprintf(out, " (the first %u below)", sc_devices_shown(st));
        fputc('\n', out);
        sc_devices_text(out, st);
}

/* The listing into path, whole or not at all (atomic.h). */
static int write_status(const sortd_server_status *st, enum status_format f, const char *path)
{
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        sc_out *out = NULL;
        int r;

        if (!mem)
                return sc_fail(SC_FAIL, "out of memory");
        print_status(mem, st, f);
        if (fclose(mem) != 0) {
                free(text);
                return sc_fail(SC_FAIL, "out of memory");
        }
        r = sc_out_open(path, &out);
        if (r == SC_OK)
                r = sc_out_write(out, text, len);
        if (r == SC_OK)
                r = sc_out_finish(out);
        if (r == SC_OK)
                r = sc_out_commit_all(&out, 1);
        else
                sc_out_discard(out);
        free(text);
        return r;
}

int sc_cmd_status(sc_common *c, int argc, char **argv)
{
        sortd_server_status st;
        sortd_conn *conn;
        status_options o = {.format = STATUS_TEXT};
        bool helped;
        sortd_status s;
        int r = sc_args_parse(c, argc, argv, "status", STATUS_HELP, status_option, &o, &helped);

        if (r != SC_OK || helped || (r = sc_connect(c, &conn)) != SC_OK)
                return r;
        s = sortd_query_status(conn, &st);
        if (s != SORTD_OK)
                r = sc_fail_conn(conn, s, "status");
        else if (o.output)
                r = write_status(&st, o.format, o.output);
        else
                print_status(stdout, &st, o.format);
        sortd_close(conn);
        return r;
}

static int count_option(sc_args *a, const char *name, const char *pos, void *ctx)
{
        const char *v;

        if (!name || strcmp(name, "count") != 0)
                return 0;
        if (!(v = sc_args_value(a, name)))
                return -1;
        if (sc_args_parse_count(v, ctx) < 0 || *(uint64_t *)ctx == 0)
                return sc_fail(SC_FAIL, "--count %s: give a positive number", v), -1;
        return 1;
}

static double now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int sc_cmd_ping(sc_common *c, int argc, char **argv)
{
        uint64_t count = 1;
        double lo = 0, hi = 0, sum = 0;
        sortd_conn *conn;
        bool helped;
        int r = sc_args_parse(c, argc, argv, "ping", PING_HELP, count_option, &count, &helped);

        if (r != SC_OK || helped || (r = sc_connect(c, &conn)) != SC_OK)
                return r;
        for (uint64_t i = 0; i < count; i++) {
                double t0 = now_ms(), dt;
                sortd_status s = sortd_ping(conn);

                if (s != SORTD_OK) {
                        r = sc_fail_conn(conn, s, "ping");
                        break;
                }
                dt = now_ms() - t0;
                lo = i == 0 || dt < lo ? dt : lo;
                hi = dt > hi ? dt : hi;
                sum += dt;
                printf("pong %llu: %.3f ms\n", (unsigned long long)i + 1, dt);
        }
        if (r == SC_OK && count > 1)
                printf("%llu pings: min %.3f ms, mean %.3f ms, max %.3f ms\n",
                       (unsigned long long)count, lo, sum / (double)count, hi);
        sortd_close(conn);
        return r;
}

int sc_cmd_hello(sc_common *c, int argc, char **argv)
{
        sortd_conn *conn;
        sortd_info i;
        bool helped;
        sortd_status s;
        int r = sc_args_parse(c, argc, argv, "hello", HELLO_HELP, NULL, NULL, &helped);

        if (r != SC_OK || helped || (r = sc_connect(c, &conn)) != SC_OK)
                return r;
        s = sortd_hello(conn, &i);
        if (s == SORTD_OK)
                printf("sortd %s, protocol %u\nengine %s (%s), capacity %llu\nlimits: message "
                       "%u B, request %llu B, in flight %llu B, connections %u, regions %llu a "
                       "connection, region bytes %llu\n",
                       i.server_version, i.protocol_version, i.engine, i.device,
                       (unsigned long long)i.capacity, i.max_message_bytes,
                       (unsigned long long)i.max_request_bytes,
                       (unsigned long long)i.max_inflight_bytes, i.max_connections,
                       (unsigned long long)i.max_regions, (unsigned long long)i.max_region_bytes);
        else
                r = sc_fail_conn(conn, s, "hello");
        sortd_close(conn);
        return r;
}
