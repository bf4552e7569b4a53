/*
 * sortctl: sortd from the shell. main() takes the options every subcommand shares, runs the
 * subcommand, and prints the one line that says why a run failed (sc_fail) and what to do.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sortctl.h"
#include "sortd_version.h"
#include "wire.h"

static const char USAGE[] =
        "usage: sortctl [--socket PATH] [--timeout MS] COMMAND [ARGS]\n"
        "       sortctl --version | --help\n"
        "\n"
        "Commands (sortctl COMMAND --help says more):\n"
        "  sort IN -o OUT   sort a .npy, text or raw file through sortd\n"
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

static char failure[1024];

int sc_fail(int code, const char *fmt, ...)
{
        va_list ap;

        if (!failure[0]) {
                va_start(ap, fmt);
                vsnprintf(failure, sizeof(failure), fmt, ap);
                va_end(ap);
        }
        return code;
}

/* What to do about a status the daemon or libsortd returned. */
static const char *advice(sortd_status s)
{
        switch (s) {
        case SORTD_E_CAPACITY:
                return "sort less data, or raise sortd's capacity or max-request-bytes";
        case SORTD_E_BUSY:
                return "retry later, or raise the sortd limit it names";
        case SORTD_E_NOMEM:
                return "sort less data, or free memory on the daemon's machine";
        case SORTD_E_TIMEOUT:
                return "raise --timeout, or check that sortd is not stuck";
        case SORTD_E_DENIED:
                return "ask its administrator to add your user or group to allow-uid or "
                       "allow-gid in sortd.conf";
        case SORTD_E_IO:
        case SORTD_E_PROTOCOL:
                return "check sortd's log (journalctl -u sortd)";
        case SORTD_E_DEVICE:
        case SORTD_E_SELFCHECK:
        case SORTD_E_NODEV:
                return "check sortd's log and its device (sortctl status)";
        default:
                return NULL;
        }
}

int sc_fail_conn(sortd_conn *c, sortd_status s, const char *what)
{
        const char *a = advice(s);
        int lost = s == SORTD_E_IO || s == SORTD_E_TIMEOUT;

        return sc_fail(lost ? SC_UNREACHABLE : SC_FAIL, "%s: %s%s%s", what, sortd_error_message(c),
                       a ? ": " : "", a ? a : "");
}

/* Why connecting to path failed, from what is at path. */
static int unreachable(const char *path, sortd_status s, const char *err)
{
        struct stat st;

        if (s == SORTD_E_IO && stat(path, &st) < 0 && errno == ENOENT)
                return sc_fail(SC_UNREACHABLE,
                               "sortd is not running at %s: start it with systemctl start "
                               "sortd.socket (or sortd --socket %s), or point --socket or "
                               "SORTD_SOCKET at the right socket",
                               path, path);
        if (s == SORTD_E_IO && access(path, W_OK) < 0 && errno == EACCES)
                return sc_fail(SC_UNREACHABLE,
                               "no permission to connect to %s: join its group (usermod -aG "
                               "sortd $USER, then log in again)",
                               path);
        if (s == SORTD_E_IO && strstr(err, "refused"))
                return sc_fail(SC_UNREACHABLE,
                               "nothing listens on %s (sortd stopped and left its socket): start "
                               "it with systemctl start sortd.socket",
                               path);
        if (s == SORTD_E_DENIED)
                return sc_fail(SC_UNREACHABLE, "%s: %s", err, advice(s));
        return sc_fail(s == SORTD_E_INVAL ? SC_FAIL : SC_UNREACHABLE,
                       "cannot reach sortd at %s: %s%s%s", path, err, advice(s) ? ": " : "",
                       advice(s) ? advice(s) : "");
}

int sc_connect(const sc_common *c, sortd_conn **out)
{
        sortd_connect_options o = {.client_name = "sortctl", .timeout_ms = c->timeout_ms};
        char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 64], err[256];
        sortd_status s;

        if (c->socket)
                snprintf(path, sizeof(path), "%s", c->socket);
        else
                sortd__wire_default_socket(path, sizeof(path));
        s = sortd_connect(path, &o, out, err, sizeof(err));
        return s == SORTD_OK ? SC_OK : unreachable(path, s, err);
}

const char *sc_args_next(sc_args *a, const char **positional)
{
        const char *arg, *eq;
        static char name[64];

        *positional = NULL;
        a->inline_value = NULL;
        if (a->i >= a->argc)
                return NULL;
        arg = a->argv[a->i++];
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
                if (strcmp(arg, "--") == 0 && a->i < a->argc)
                        arg = a->argv[a->i++]; /* "--" quotes a path that starts with '-' */
                *positional = arg;
                return NULL;
        }
        eq = strchr(arg, '=');
        snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg - 2) : (int)strlen(arg + 2),
                 arg + 2);
        a->inline_value = eq ? eq + 1 : NULL;
        return name;
}

const char *sc_args_value(sc_args *a, const char *name)
{
        if (a->inline_value)
                return a->inline_value;
        if (a->i >= a->argc) {
                sc_fail(SC_FAIL, "--%s needs a value: see sortctl --help", name);
                return NULL;
        }
        return a->argv[a->i++];
}

int sc_args_common(sc_args *a, const char *name, sc_common *c)
{
        const char *v;
        char *end;
        long t;

        if (strcmp(name, "socket") != 0 && strcmp(name, "timeout") != 0)
                return 0;
        if (!(v = sc_args_value(a, name)))
                return -1;
        if (name[0] == 's') {
                c->socket = v;
                return 1;
        }
        errno = 0;
        t = strtol(v, &end, 10);
        /* strtol alone would take leading spaces and a '+'. */
        if (!*v || !strchr("-0123456789", *v) || *end || errno || t < -1 || t == 0 ||
            t > 24 * 3600 * 1000) {
                sc_fail(SC_FAIL,
                        "--timeout %s: give milliseconds (1 to 86400000), or -1 for no "
                        "limit",
                        v);
                return -1;
        }
        c->timeout_ms = (int)t;
        return 1;
}

int sc_parse_command(sc_common *c, int argc, char **argv, const char *cmd, const char *help,
                     sc_option_fn own, void *ctx, bool *helped)
{
        sc_args a = {.argc = argc, .argv = argv};
        const char *name, *pos;
        int r;

        *helped = false;
        while ((name = sc_args_next(&a, &pos)) || pos) {
                if (name && strcmp(name, "help") == 0) {
                        *helped = true;
                        return sc_help(help);
                }
                r = name ? sc_args_common(&a, name, c) : 0;
                if (r == 0 && own)
                        r = own(&a, name, pos, ctx);
                if (r < 0)
                        return SC_FAIL;
                if (r == 0 && pos)
                        return sc_fail(SC_FAIL,
                                       "sortctl %s: unexpected argument '%s': see "
                                       "sortctl %s --help",
                                       cmd, pos, cmd);
                if (r == 0)
                        return sc_fail(SC_FAIL,
                                       "sortctl %s has no option --%s: see sortctl %s "
                                       "--help",
                                       cmd, name, cmd);
        }
        return SC_OK;
}

#define DIGITS "0123456789"

/* 1e6 or 1.5e6, exact integers only; strtod alone would take hex, signs and spaces too. */
static int parse_exponent(const char *s, uint64_t *out)
{
        const char *p = s + strspn(s, DIGITS);
        char *end;
        double d;

        if (*p == '.')
                p += 1 + strspn(p + 1, DIGITS);
        if ((*p != 'e' && *p != 'E') || !strspn(p + 1, DIGITS) || p[1 + strspn(p + 1, DIGITS)])
                return -1;
        errno = 0;
        d = strtod(s, &end);
        if (*end || errno || d > 1e18 || d != floor(d))
                return -1;
        *out = (uint64_t)d;
        return 0;
}

int sc_parse_count(const char *s, uint64_t *out)
{
        size_t digits = strspn(s, DIGITS);
        unsigned long long v, e;
        char *end;

        if (!digits)
                return -1;
        if (strchr(".eE", s[digits]) && s[digits])
                return parse_exponent(s, out);
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno)
                return -1;
        if (*end == '^') { /* 2^20 */
                digits = strspn(end + 1, DIGITS);
                if (v != 2 || !digits || end[1 + digits] || digits > 2 ||
                    (e = strtoull(end + 1, NULL, 10)) > 62)
                        return -1;
                *out = 1ull << e;
                return 0;
        }
        e = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
        if ((e && end[1]) || (!e && *end) || v > (UINT64_MAX >> e))
                return -1;
        *out = v << e;
        return 0;
}

int sc_help(const char *text)
{
        fputs(text, stdout);
        return SC_OK;
}

static const struct {
        const char *name;
        int (*run)(sc_common *c, int argc, char **argv);
} COMMANDS[] = {
        {"sort", sc_cmd_sort}, {"bench", sc_cmd_bench}, {"status", sc_cmd_status},
        {"ping", sc_cmd_ping}, {"hello", sc_cmd_hello},
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
                        return sc_help(USAGE);
                return sc_fail(SC_FAIL, "unknown option --%s: see sortctl --help", name);
        }
        if (!pos)
                return sc_fail(SC_FAIL, "no command given: see sortctl --help");
        if (strcmp(pos, "help") == 0)
                return sc_help(USAGE);
        for (size_t i = 0; i < sizeof(COMMANDS) / sizeof(COMMANDS[0]); i++)
                if (strcmp(pos, COMMANDS[i].name) == 0)
                        return COMMANDS[i].run(&c, argc - a.i, argv + a.i);
        return sc_fail(SC_FAIL, "unknown command '%s': see sortctl --help", pos);
}

int main(int argc, char **argv)
{
        int r = run(argc, argv);

        /* What a command prints is its result: one that never reached stdout (a full disk, a
           closed descriptor) is a failure, not a silent success. */
        errno = 0;
        if ((fflush(stdout) != 0 || ferror(stdout)) && r == SC_OK)
                r = sc_fail(SC_FAIL, "writing to standard output: %s: check where it goes",
                            errno ? strerror(errno) : "an earlier write failed");
        if (r != SC_OK)
                fprintf(stderr, "sortctl: %s\n", failure[0] ? failure : "failed");
        return r;
}
