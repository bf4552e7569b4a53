/* Subcommands' arguments (args.c): the options every subcommand takes, --help, and counts. */
#ifndef SORTCTL_ARGS_H
#define SORTCTL_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "sortctl.h"

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
typedef int (*sc_args_option_fn)(sc_args *a, const char *name, const char *positional, void *ctx);
int sc_args_parse(sc_common *c, int argc, char **argv, const char *cmd, const char *help,
                  sc_args_option_fn own, void *ctx, bool *helped);

/* Parses a count: decimal, 1e6, 2^20, or 16K / 16M / 16G (binary). -1 if malformed. */
int sc_args_parse_count(const char *s, uint64_t *out);

/* Prints a subcommand's help to stdout for --help, and returns 0. */
int sc_args_help(const char *text);

#endif
