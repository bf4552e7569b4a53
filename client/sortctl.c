/*
 * sortctl: talks to sortd from the shell.
 *
 *   sortctl [--socket PATH] [--timeout MS] hello | ping | status | sort TYPE N [PAYLOAD] [desc]
 *   sortctl --version
 *
 * `sort` generates N random keys of TYPE (u8 .. f64), sorts them through the daemon with the
 * payload (none, v32, v64, argsort32, argsort64) and prints the timings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sortd.h"
#include "sortd_version.h"

static int usage(void)
{
        fprintf(stderr, "usage: sortctl [--socket PATH] [--timeout MS] hello | ping | status | "
                        "sort TYPE N [PAYLOAD] [desc]\n       sortctl --version\n");
        return 2;
}

static int print_status(sortd_conn *c)
{
        sortd_server_status st;

        if (sortd_query_status(c, &st) != SORTD_OK)
                return -1;
        printf("engine             %s (%s)\nengine chosen      %s\ncapacity           %llu\n"
               "uptime             %.1f s\n",
               st.engine, st.device, st.engine_reason, (unsigned long long)st.capacity,
               st.uptime_ms / 1e3);
#define PRINT(name, wire_type, label) printf("%-18s %llu\n", label, (unsigned long long)st.name);
        SORTD_STATUS_COUNTERS(PRINT)
#undef PRINT
        return 0;
}

static int print_hello(sortd_conn *c)
{
        sortd_info i;

        if (sortd_hello(c, &i) != SORTD_OK)
                return -1;
        printf("sortd %s, protocol %u\nengine %s (%s), capacity %llu\nlimits: message %u B, "
               "request %llu B, in flight %llu B, connections %u\n",
               i.server_version, i.protocol_version, i.engine, i.device,
               (unsigned long long)i.capacity, i.max_message_bytes,
               (unsigned long long)i.max_request_bytes, (unsigned long long)i.max_inflight_bytes,
               i.max_connections);
        return 0;
}

/* Random bytes as keys (and values), sorted through the daemon; timings printed. */
static int sort_random(sortd_conn *c, int argc, char **argv)
{
        int t = argc > 0 ? sortd_key_type_parse(argv[0]) : -1;
        int p = argc > 2 ? sortd_payload_parse(argv[2]) : SORTD_PAYLOAD_NONE;
        size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 0;
        sortd_sort_options o = {.order = argc > 3 && strcmp(argv[3], "desc") == 0
                                                 ? SORTD_DESCENDING
                                                 : SORTD_ASCENDING};
        size_t ks = t >= 0 ? sortd_key_size((sortd_key_type)t) : 0;
        size_t vs = p >= 0 ? sortd_payload_size((sortd_payload)p) : 0;
        uint8_t *keys, *vals;
        sortd_request r;
        struct timespec t0, t1;

        if (t < 0 || p < 0 || argc < 2)
                return usage();
        keys = malloc(n * ks + 8);
        vals = malloc(n * vs + 8);
        if (!keys || !vals)
                return 1;
        srand(1);
        for (size_t i = 0; i < n * ks; i++)
                keys[i] = (uint8_t)rand();
        r = (sortd_request){.keys = keys,
                            .vals = vs ? vals : NULL,
                            .n = n,
                            .key_type = (sortd_key_type)t,
                            .payload = (sortd_payload)p,
                            .opts = o};
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (sortd_submit(c, &r) != SORTD_OK || sortd_receive(c, &r) != SORTD_OK)
                return -1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("sorted %zu %s keys (%s) in %.3f ms: transfer %.3f ms, queued %.3f ms, sort %.3f "
               "ms\n",
               n, argv[0], sortd_payload_name((sortd_payload)p),
               (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
               r.timings.transfer_ns / 1e6, r.timings.queued_ns / 1e6, r.timings.sort_ns / 1e6);
        free(keys);
        free(vals);
        return 0;
}

int main(int argc, char **argv)
{
        sortd_connect_options opts = {.client_name = "sortctl"};
        const char *path = NULL;
        sortd_conn *c;
        char err[256];
        int i = 1, r;

        if (argc == 2 && strcmp(argv[1], "--version") == 0) {
                printf("sortctl %s\n", SORTD_VERSION_STRING);
                return 0;
        }
        for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
                if (i + 1 >= argc)
                        return usage();
                if (strcmp(argv[i], "--socket") == 0)
                        path = argv[i + 1];
                else if (strcmp(argv[i], "--timeout") == 0)
                        opts.timeout_ms = atoi(argv[i + 1]);
                else
                        return usage();
        }
        if (i >= argc)
                return usage();
        if (sortd_connect(path, &opts, &c, err, sizeof(err)) != SORTD_OK) {
                fprintf(stderr, "sortctl: %s\n", err);
                return 1;
        }
        if (strcmp(argv[i], "hello") == 0)
                r = print_hello(c);
        else if (strcmp(argv[i], "ping") == 0)
                r = sortd_ping(c) == SORTD_OK ? (puts("pong"), 0) : -1;
        else if (strcmp(argv[i], "status") == 0)
                r = print_status(c);
        else if (strcmp(argv[i], "sort") == 0)
                r = sort_random(c, argc - i - 1, argv + i + 1);
        else
                r = usage();
        if (r < 0)
                fprintf(stderr, "sortctl: %s\n", sortd_error_message(c));
        sortd_close(c);
        return r < 0 ? 1 : r;
}
