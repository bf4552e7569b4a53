/*
 * sortctl: sortd from the shell. main() takes the options every subcommand shares, runs the
 * subcommand, and prints the one line that says why a run failed (fail.c) and what to do. The
 * top of sortctl: it calls the subcommands and what they share, and nothing calls it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "fail.h"
#include "sortctl.h"
#include "sortd_version.h"

static const char USAGE[] =
        "usage: sortctl [--socket PATH] [--timeout MS] COMMAND [ARGS]\n"
        "       sortctl --version | --help\n"
        "\n"
        "Commands (sortctl COMMAND --help says more):\n"
        "  sort IN -o OUT   sort a .npy, text or raw file through sortd (or each of its rows)\n"
        "  topk -k K IN -o OUT\n"
        "                   the K smallest or largest keys of a file, or of each of its rows\n"
        "  bench            sort generated data, verify it, and report throughput\n"
        "  status           the daemon's engine and counters\n"
        "  ping             round trips to the daemon\n"
        "  hello            the daemon's version, engine and limits\n"
        "\n"
        "Options (before or after COMMAND):\n"
        "  --socket PATH    the daemon's socket (default: $SORTD_SOCKET, else\n"
        "                   /run/sortd/sortd.sock as root, else $XDG_RUNTIME_DIR/sortd.sock)\n"
        "  --timeout MS     how long one call may wait for the daemon (default 60000; -1: no\n"
        "                   limit)\n"
        "\n"
        "Exit status: 0 success; 1 the sort failed, the daemon refused it, or the command line\n"
        "is wrong; 2 the daemon could not be reached or the connection to it was lost.\n"
        "A failure prints one line on stderr that says what to do.\n";

static const struct {
        const char *name;
        int (*run)(sc_common *c, int argc, char **argv);
} COMMANDS[] = {
        {"sort", sc_cmd_sort},     {"topk", sc_cmd_topk}, {"bench", sc_cmd_bench},
        {"status", sc_cmd_status}, {"ping", sc_cmd_ping}, {"hello", sc_cmd_hello},
};

static int run(int argc, char **argv)
{
        sc_common c = {0};
        sc_args a = {.argc = argc, .argv = argv, .i = 1};
        const char *name, *pos;

        while ((name = sc_args_next(&a, &pos))) {
                int r = sc_args_common(&a, name, &c);

                if (r < 0)
                        return SC_FAIL;
                if (r > 0)
                        continue;
                if (strcmp(name, "version") == 0) {
                        printf("sortctl %s\n", SORTD_VERSION_STRING);
                        return SC_OK;
                }
                if (strcmp(name, "help") == 0)
                        return sc_args_help(USAGE);
                return sc_fail(SC_FAIL, "unknown option --%s: see sortctl --help", name);
        }
        if (!pos)
                return sc_fail(SC_FAIL, "no command given: see sortctl --help");
        if (strcmp(pos, "help") == 0)
                return sc_args_help(USAGE);
        for (size_t i = 0; i < sizeof(COMMANDS) / sizeof(COMMANDS[0]); i++)
                if (strcmp(pos, COMMANDS[i].name) == 0)
                        return COMMANDS[i].run(&c, argc - a.i, argv + a.i);
        return sc_fail(SC_FAIL, "unknown command '%s': see sortctl --help", pos);
}

int main(int argc, char **argv)
{
        int r = run(argc, argv);
        const char *why = sc_fail_message();

        /* What a command prints is its result: one that never reached stdout (a full disk, a
           closed descriptor) is a failure, not a silent success. */
        errno = 0;
        if ((fflush(stdout) != 0 || ferror(stdout)) && r == SC_OK)
                r = sc_fail(SC_FAIL, "writing to standard output: %s: check where it goes",
                            errno ? strerror(errno) : "an earlier write failed");
        if (r != SC_OK)
                fprintf(stderr, "sortctl: %s\n", *why ? why : "failed");
        return r;
}
