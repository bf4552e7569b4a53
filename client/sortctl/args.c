/*
 * Subcommands' arguments: the small getopt every subcommand parses with, the options they all
 * take (sc_common), --help, and counts. It reports through fail.c and calls nothing else of
 * sortctl's.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "fail.h"
#include "sortctl.h"

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

int sc_args_parse(sc_common *c, int argc, char **argv, const char *cmd, const char *help,
                  sc_args_option_fn own, void *ctx, bool *helped)
{
        sc_args a = {.argc = argc, .argv = argv};
        const char *name, *pos;
        int r;

        *helped = false;
        while ((name = sc_args_next(&a, &pos)) || pos) {
                if (name && strcmp(name, "help") == 0) {
                        *helped = true;
                        return sc_args_help(help);
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

int sc_args_parse_count(const char *s, uint64_t *out)
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

int sc_args_help(const char *text)
{
        fputs(text, stdout);
        return SC_OK;
}
