/*
 * What sortctl's files share: exit codes, the one failure message a run prints, the options
 * every subcommand takes, and the subcommands themselves. Nothing here is part of libsortd.
 */
#ifndef SORTCTL_H
#define SORTCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sortd.h"

/* Exit codes, as `sortctl --help` documents them. */
enum {
        SC_OK = 0,
        SC_FAIL = 1,        /* the sort failed, the daemon refused, or the command line is wrong */
        SC_UNREACHABLE = 2, /* no daemon at the socket, or the connection to it was lost */
};

/*
 * Records why the run fails and returns code. Only the first call's message is kept, and
 * main() prints it as sortctl's one line on stderr after every subcommand has cleaned up (so
 * that it never lands in the middle of the progress display).
 */
int sc_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A library call's failure: its message, and exit code 2 when the daemon is gone. */
int sc_fail_conn(sortd_conn *c, sortd_status s, const char *what);

/* The options before or after a subcommand that every subcommand takes. */
typedef struct sc_common {
        const char *socket; /* NULL: $SORTD_SOCKET or the default */
        int timeout_ms;     /* 0: libsortd's default */
} sc_common;

/* Connects as c says; on failure returns the exit code with the message recorded. */
int sc_connect(const sc_common *c, sortd_conn **out);

/*
 * A small getopt for subcommands: "--name VALUE" and "--name=VALUE", flags, and positional
 * arguments in any order. sc_args_next returns the next option's name (without "--"), or NULL
 * at a positional (then *positional is set) or at the end (then both are NULL).
 */
typedef struct sc_args {
        int argc, i;
        char **argv;
        const char *inline_value; /* the part after '=' of the current option */
} sc_args;

const char *sc_args_next(sc_args *a, const char **positional);
/* The current option's value; NULL (with the failure recorded) when it has none. */
const char *sc_args_value(sc_args *a, const char *name);
/* Takes --socket, --timeout; 1 if name was one of them, 0 if not, -1 on a bad value. */
int sc_args_common(sc_args *a, const char *name, sc_common *c);

/*
 * Parses a subcommand's arguments: --help (prints help, sets *helped), the common options into
 * c, and the rest through own(a, name, NULL, ctx) for an option or own(a, NULL, positional,
 * ctx) for a positional, which returns 1 when it took it, 0 when it is not the subcommand's,
 * -1 on a bad value (failure recorded). own may be NULL.
 */
typedef int (*sc_option_fn)(sc_args *a, const char *name, const char *positional, void *ctx);
int sc_parse_command(sc_common *c, int argc, char **argv, const char *cmd, const char *help,
                     sc_option_fn own, void *ctx, bool *helped);

/* Parses a count: decimal, 1e6, 2^20, or 16K / 16M / 16G (binary). -1 if malformed. */
int sc_parse_count(const char *s, uint64_t *out);

int sc_cmd_sort(sc_common *c, int argc, char **argv);
int sc_cmd_bench(sc_common *c, int argc, char **argv);
int sc_cmd_status(sc_common *c, int argc, char **argv);
int sc_cmd_ping(sc_common *c, int argc, char **argv);
int sc_cmd_hello(sc_common *c, int argc, char **argv);

/* Prints a subcommand's help to stdout for --help, and returns 0. */
int sc_help(const char *text);

#endif
