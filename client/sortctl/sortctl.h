/*
 * What sortctl's files share: exit codes, the options every subcommand takes, and the
 * subcommands themselves, which main.c runs. Nothing here is part of libsortd.
 */
#ifndef SORTCTL_H
#define SORTCTL_H

#include "sortd.h"

/* Exit codes, as `sortctl --help` documents them. */
enum {
        SC_OK = 0,
        SC_FAIL = 1,        /* the sort failed, the daemon refused, or the command line is wrong */
        SC_UNREACHABLE = 2, /* no daemon at the socket, or the connection to it was lost */
};

/* The options before or after a subcommand that every subcommand takes (args.h). */
typedef struct sc_common {
        const char *socket; /* NULL: $SORTD_SOCKET or the default */
        int timeout_ms;     /* 0: libsortd's default */
} sc_common;

int sc_cmd_sort(sc_common *c, int argc, char **argv);
int sc_cmd_topk(sc_common *c, int argc, char **argv);
int sc_cmd_bench(sc_common *c, int argc, char **argv);
int sc_cmd_status(sc_common *c, int argc, char **argv);
int sc_cmd_ping(sc_common *c, int argc, char **argv);
int sc_cmd_hello(sc_common *c, int argc, char **argv);

#endif
