/*
 * Loading the settings: the table's defaults (config_table.c), then every config file
 * (config_file.c: name = value lines, '#' comments), then the command line (--name VALUE or
 * --name=VALUE), which wins; and what else the command line asks for: --help, --version and
 * --print-config (config_doc.c prints the table), --check-config. The top of the configuration:
 * it calls the table, the file reader and the docs, and none of them calls it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "devices.h"
#include "config_doc.h"
#include "config_file.h"
#include "config_table.h"
#include "log.h"
#include "sortd_version.h"
#include "wire.h"

/* Splits "--name=value" or "--name value"; returns the option or NULL (reported). */
static const sortd__config_option *cli_option(int argc, char **argv, int *i, const char **value)
{
        const char *arg = argv[*i] + 2, *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        const sortd__config_option *o = sortd__config_table_find(arg, len);

        if (!o) {
                sortd__log(SORTD__LOG_ERR, "unknown option '%s' (see --help)", argv[*i]);
                return NULL;
        }
        if (eq) {
                *value = eq + 1;
        } else if (*i + 1 < argc) {
                *value = argv[++*i];
        } else {
                sortd__log(SORTD__LOG_ERR, "%s needs a value", argv[*i]);
                return NULL;
        }
        return o;
}

/* The checks across settings, and the default socket: 0, -EINVAL or -ENAMETOOLONG (logged). */
static int check(sortd__config *cfg)
{
        char why[256];

        if (sortd__devices_check(cfg->devices, why, sizeof(why)) < 0) {
                sortd__log(SORTD__LOG_ERR, "%s", why);
                return -EINVAL;
        }
        if (strcmp(cfg->engine, "cpu") == 0 && !sortd__devices_auto(cfg->devices)) {
                sortd__log(SORTD__LOG_ERR,
                           "devices = '%s' with engine cpu: the cpu engine "
                           "serves no device",
                           cfg->devices);
                return -EINVAL;
        }
        if (cfg->max_request_bytes > cfg->max_inflight_bytes) {
                sortd__log(SORTD__LOG_ERR,
                           "max-request-bytes (%llu) must not exceed "
                           "max-inflight-bytes (%llu)",
                           (unsigned long long)cfg->max_request_bytes,
                           (unsigned long long)cfg->max_inflight_bytes);
                return -EINVAL;
        }
        if (!*cfg->socket) {
                char path[4096];

                sortd__wire_default_socket(path, sizeof(path));
                if (strlen(path) >= sizeof(cfg->socket)) {
                        sortd__log(SORTD__LOG_ERR,
                                   "the default socket %s is too long (at most %zu bytes): "
                                   "set socket, or a shorter $SORTD_SOCKET or $XDG_RUNTIME_DIR",
                                   path, sizeof(cfg->socket) - 1);
                        return -ENAMETOOLONG;
                }
                strcpy(cfg->socket, path);
        }
        return 0;
}

/* The length of arg's config-file option (--config or --config-if-exists), or 0. */
static size_t config_option(const char *arg)
{
        static const char *const names[] = {"--config", "--config-if-exists"};

        for (size_t k = 0; k < 2; k++) {
                size_t n = strlen(names[k]);

                if (strncmp(arg, names[k], n) == 0 && (arg[n] == '\0' || arg[n] == '='))
                        return n;
        }
        return 0;
}

static bool is_check(const char *arg)
{
        return strcmp(arg, "--check-config") == 0 || strcmp(arg, "-t") == 0;
}

/* Whether arg takes the next argument as its value (--config FILE, --NAME VALUE), as the
   passes below read it: "--socket --version" names a socket, it asks for no version. */
static bool takes_next(const char *arg)
{
        size_t n = config_option(arg);

        if (n)
                return arg[n] == '\0';
        return strncmp(arg, "--", 2) == 0 && !strchr(arg, '=') &&
               sortd__config_table_find(arg + 2, strlen(arg + 2));
}

/* What the command line asks for besides settings, wherever it stands. */
struct request {
        bool help, version, check;
        const char *print; /* --print-config's format, or NULL */
};

static struct request scan_request(int argc, char **argv)
{
        struct request q = {0};

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
                        q.help = true;
                else if (strcmp(argv[i], "--version") == 0)
                        q.version = true;
                else if (strcmp(argv[i], "--print-config") == 0)
                        q.print = "conf";
                else if (strncmp(argv[i], "--print-config=", 15) == 0)
                        q.print = argv[i] + 15;
                else if (is_check(argv[i]))
                        q.check = true;
                else if (takes_next(argv[i]))
                        i++;
        }
        return q;
}

/* Every --config and --config-if-exists in order, so the command line overrides them all
   wherever they stand. */
static int load_files(sortd__config *cfg, int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                size_t n = config_option(argv[i]);
                const char *path;
                int r;

                if (!n) {
                        i += takes_next(argv[i]);
                        continue;
                }
                path = argv[i][n] ? argv[i] + n + 1 : argv[i + 1];
                if (!path) {
                        sortd__log(SORTD__LOG_ERR, "%.*s needs a file", (int)n, argv[i]);
                        return -EINVAL;
                }
                r = sortd__config_file_load(cfg, path, n > strlen("--config"));
                if (r < 0)
                        return r;
                i += argv[i][n] == '\0';
        }
        return 0;
}

static int load_command_line(sortd__config *cfg, int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                const sortd__config_option *o;
                const char *value;
                int r;

                if (config_option(argv[i])) {
                        i += takes_next(argv[i]);
                        continue;
                }
                if (is_check(argv[i]) || strcmp(argv[i], "--print-config=effective") == 0)
                        continue;
                if (strncmp(argv[i], "--", 2) != 0) {
                        sortd__log(SORTD__LOG_ERR, "unexpected argument '%s'", argv[i]);
                        return -EINVAL;
                }
                o = cli_option(argc, argv, &i, &value);
                if (!o)
                        return -EINVAL;
                r = sortd__config_table_set(cfg, o, value, "command line");
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every setting at its default, or computed later (check()) where it has none. */
static int load_defaults(sortd__config *cfg)
{
        *cfg = (sortd__config){0};
        for (size_t i = 0; i < sortd__config_table_n_options; i++) {
                const sortd__config_option *o = &sortd__config_table_options[i];
                int r = o->def ? sortd__config_table_set(cfg, o, o->def, "default") : 0;

                if (r < 0)
                        return r;
        }
        return 0;
}

int sortd__config_load(sortd__config *cfg, int argc, char **argv)
{
        struct request q = scan_request(argc, argv);
        bool effective;
        int r;

        /* These read no file: --version answers even with a broken one. */
        if (q.help) {
                sortd__config_doc_usage();
                return SORTD__CONFIG_EXIT;
        }
        if (q.version) {
                printf("sortd %s (protocol %d)\n", SORTD_VERSION_STRING, SORTD__WIRE_VERSION);
                return SORTD__CONFIG_EXIT;
        }
        /* effective: printed once the files and the command line are read and checked. */
        effective = q.print && strcmp(q.print, "effective") == 0;
        if (q.print && !effective) {
                r = sortd__config_doc_print(q.print);
                return r < 0 ? r : SORTD__CONFIG_EXIT;
        }
        r = load_defaults(cfg);
        if (r == 0)
                r = load_files(cfg, argc, argv);
        if (r == 0)
                r = load_command_line(cfg, argc, argv);
        if (r == 0)
                r = check(cfg);
        if (r < 0)
                return r;
        if (effective) {
                sortd__config_doc_print_effective(cfg);
                return SORTD__CONFIG_EXIT;
        }
        return q.check ? SORTD__CONFIG_CHECK : SORTD__CONFIG_SERVE;
}
