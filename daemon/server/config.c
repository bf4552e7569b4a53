/*
 * The one configuration table: every setting's name, type, default, bounds and unit. The
 * command line (--name VALUE or --name=VALUE) and the config file (config_file.c: name = value
 * lines, '#' comments) both go through it; the command line wins. config_doc.c prints the same
 * table as --help and as the documentation.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access.h"
#include "config.h"
#include "config_table.h"
#include "log.h"
#include "recovery.h"
#include "sortd_version.h"
#include "wire.h"

/* auto is server.c's; the rest are engine.c's kinds, whatever this build has: a kind it lacks
   is refused when the engine is created (exit 1), as a GPU that is absent is. */
static const char *const engine_names[] = {"auto", "cpu", "cuda", "cub", NULL};

const sortd__config_option sortd__config_options[] = {
#define FIELD(f) (((sortd__config *)0)->f)
#define STR(t, f) t, offsetof(sortd__config, f), sizeof(FIELD(f)), NULL
#define NUM(t, f) t, offsetof(sortd__config, f), 0, NULL
/* A choice kept as its name (in a char array, sized for it) or as a number (in an int). */
#define NAME_SIZE(f) _Generic(FIELD(f), char * : sizeof(FIELD(f)), int : 0)
#define CHOICE(f, names) OPT_CHOICE, offsetof(sortd__config, f), NAME_SIZE(f), names
        {"socket", STR(OPT_STRING, socket), NULL, 0, 0, "path",
         "listening socket when systemd passes none (default: $SORTD_SOCKET, "
         "/run/sortd/sortd.sock as root or without $XDG_RUNTIME_DIR, else "
         "$XDG_RUNTIME_DIR/sortd.sock)"},
        {"engine", CHOICE(engine, engine_names), "auto", 0, 0, "name",
         "what sorts: auto = cuda where it can serve (a GPU, and its self-check passes), else "
         "cpu; cuda = our kernels on the GPU; cub = CUB's radix sort on the GPU"},
        {"on-device-loss", CHOICE(on_device_loss, sortd__recovery_policy_names), "recreate", 0, 0,
         "policy",
         "when the engine's device fails for good (a sticky CUDA error): recreate = a new "
         "engine of the same kind, or the cpu engine if that cannot serve; cpu = the cpu "
         "engine"},
        {"allow-uid", STR(OPT_USERS, allow_uid), "", 0, 0, "users",
         "comma-separated user names or uids the daemon serves (checked when a client "
         "connects); with allow-gid empty too, everyone who can open the socket"},
        {"allow-gid", STR(OPT_GROUPS, allow_gid), "", 0, 0, "groups",
         "comma-separated group names or gids whose members (by primary or supplementary "
         "group) the daemon serves"},
        {"capacity", NUM(OPT_SIZE, capacity), "16M", 1, 1ull << 40, "keys",
         "largest n one sort may have"},
        {"threads", NUM(OPT_COUNT, threads), "0", 0, 1024, "threads",
         "engine threads: the cpu engine's workers, a GPU engine's host copy threads (16 at most); "
         "0 = online CPUs"},
        {"max-request-bytes", NUM(OPT_SIZE, max_request_bytes), "256M", 64, 1ull << 44, "bytes",
         "largest sort (keys + values or indices)"},
        {"max-inflight-bytes", NUM(OPT_SIZE, max_inflight_bytes), "1G", 64, 1ull << 46, "bytes",
         "request and reply buffers held across all connections"},
        {"host-pool", NUM(OPT_SIZE_AUTO, host_pool), "auto", 0, 1ull << 46, "bytes",
         "engine host memory (pinned on GPUs) that requests are received into, taken at "
         "start-up; 0 = off, auto = min(max-inflight-bytes, 4G) on GPU engines, off on cpu; "
         "never more than max-inflight-bytes"},
        {"max-connections", NUM(OPT_COUNT, max_connections), "256", 1, 65536, "connections",
         "open client connections"},
        {"max-pipeline", NUM(OPT_COUNT, max_pipeline), "64", 1, 65536, "requests",
         "requests one connection may have unanswered before reads stop"},
        {"batch-member-keys", NUM(OPT_SIZE, batch_member_keys), "64K", 0, 1ull << 40, "keys",
         "sorts of up to this many keys that are queued together go to the engine as one "
         "batch; 0 = no batches"},
        {"batch-max-keys", NUM(OPT_SIZE, batch_max_keys), "1M", 1, 1ull << 40, "keys",
         "keys of all the sorts in one batch"},
        {"batch-max-bytes", NUM(OPT_SIZE, batch_max_bytes), "16M", 1, 1ull << 44, "bytes",
         "keys and values (or indices) of all the sorts in one batch"},
        {"cpu-path-keys", NUM(OPT_SIZE_AUTO, cpu_path_keys), "auto", 0, 1ull << 24, "keys",
         "sorts of up to this many keys go to a CPU engine of their own, on a thread of its "
         "own, so that they wait neither for a device round trip nor behind large sorts; 0 = "
         "none, auto = measured at start-up against a GPU engine, none on cpu"},
        {"loop-sort-keys", NUM(OPT_SIZE, loop_sort_keys), "8K", 0, 1ull << 20, "keys",
         "a sort in host memory of up to this many keys that finds a CPU engine idle and "
         "nothing queued is sorted by the thread that read it, with no hand-off to the engine "
         "thread and back; 0 = never"},
        {"max-write-queue", NUM(OPT_SIZE, max_write_queue), "16M", 4096, 1ull << 40, "bytes",
         "reply bytes queued to one slow reader before its reads stop"},
        {"max-drain-bytes", NUM(OPT_SIZE, max_drain_bytes), "64M", 0, 1ull << 44, "bytes",
         "a refused request's payload up to this is read and dropped; a larger one closes"},
        {"max-regions", NUM(OPT_COUNT, max_regions), "64", 0, 65536, "regions",
         "shared-memory regions one connection may register"},
        {"max-region-bytes", NUM(OPT_SIZE, max_region_bytes), "64G", 0, 1ull << 50, "bytes",
         "bytes of shared-memory regions mapped for all connections together"},
        {"drain-timeout-ms", NUM(OPT_COUNT, drain_timeout_ms), "30000", 0, 86400000, "ms",
         "on SIGTERM, how long queued work may take before connections are closed; 0 = no "
         "limit"},
        {"frame-timeout-ms", NUM(OPT_COUNT, frame_timeout_ms), "30000", 0, 86400000, "ms",
         "a client that stops sending in the middle of a request for this long is "
         "disconnected; 0 = never"},
        {"idle-timeout-ms", NUM(OPT_COUNT, idle_timeout_ms), "0", 0, 86400000, "ms",
         "a connection with no request in progress or unanswered for this long (counted from "
         "its last reply) is closed; 0 = never"},
        {"write-timeout-ms", NUM(OPT_COUNT, write_timeout_ms), "30000", 0, 86400000, "ms",
         "a client that takes none of the reply bytes queued to it for this long is "
         "disconnected, its sorts cancelled and the memory its replies hold freed for others; "
         "0 = never"},
        {"log-level", CHOICE(log_level, sortd__log_level_names), "info", SORTD__LOG_ERR, 0, "level",
         "the least severe messages logged"},
#undef FIELD
#undef STR
#undef NUM
#undef NAME_SIZE
#undef CHOICE
};

const size_t sortd__config_n_options =
        sizeof(sortd__config_options) / sizeof(sortd__config_options[0]);

/* A number; with suffixes, also K, M, G or T (powers of 1024). */
static int parse_size(const char *s, bool suffixes, uint64_t *out)
{
        char *end;
        unsigned long long v;
        unsigned shift = 0;

        if (!isdigit((unsigned char)*s))
                return -1;
        errno = 0;
        v = strtoull(s, &end, 0);
        if (errno)
                return -1;
        if (*end && !suffixes)
                return -1;
        switch (*end) {
        case 'k':
        case 'K':
                shift = 10;
                break;
        case 'm':
        case 'M':
                shift = 20;
                break;
        case 'g':
        case 'G':
                shift = 30;
                break;
        case 't':
        case 'T':
                shift = 40;
                break;
        case '\0':
                break;
        default:
                return -1;
        }
        if (shift && *++end)
                return -1;
        if (shift && v > (UINT64_MAX >> shift))
                return -1;
        *out = (uint64_t)v << shift;
        return 0;
}

/* A size or count within o's bounds (or auto, where o takes it) into *out. */
static int parse_number(const sortd__config_option *o, const char *value, const char *where,
                        uint64_t *out)
{
        uint64_t v;

        if (o->type == OPT_SIZE_AUTO && strcmp(value, "auto") == 0) {
                *out = SORTD__CONFIG_AUTO;
                return 0;
        }
        /* Counts take no suffix: "drain-timeout-ms = 30K" would be 30720 ms. */
        if (parse_size(value, o->type != OPT_COUNT, &v) < 0 || v < o->min || v > o->max) {
                sortd__log(SORTD__LOG_ERR, "%s: %s = '%s' is not a number of %s in [%llu, %llu]%s",
                           where, o->name, value, o->unit, (unsigned long long)o->min,
                           (unsigned long long)o->max, o->type == OPT_SIZE_AUTO ? " nor auto" : "");
                return -1;
        }
        *out = v;
        return 0;
}

void sortd__config_format_choices(const sortd__config_option *o, char *buf, size_t len)
{
        size_t used = 0;

        buf[0] = '\0';
        for (size_t i = 0; o->choices[i] && used < len; i++)
                used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                         i == 0              ? ""
                                         : o->choices[i + 1] ? ", "
                                                             : " or ",
                                         o->choices[i]);
}

static int set_choice(char *field, const sortd__config_option *o, const char *value,
                      const char *where)
{
        char names[96];

        for (size_t i = 0; o->choices[i]; i++) {
                if (strcmp(value, o->choices[i]) != 0)
                        continue;
                if (o->size) /* a string field, longer than any of its names */
                        strcpy(field, value);
                else
                        *(int *)field = (int)(o->min + i);
                return 0;
        }
        sortd__config_format_choices(o, names, sizeof(names));
        sortd__log(SORTD__LOG_ERR, "%s: %s = '%s' is none of %s", where, o->name, value, names);
        return -1;
}

/* A string setting, or a list of users or groups, which must name some that exist: resolved
   into cfg->access here, once, and served with as resolved. */
static int set_string(sortd__config *cfg, char *field, const sortd__config_option *o,
                      const char *value, const char *where)
{
        char why[256];

        if (strlen(value) >= o->size) {
                sortd__log(SORTD__LOG_ERR, "%s: %s is too long (at most %zu bytes)", where, o->name,
                           o->size - 1);
                return -1;
        }
        if (o->type != OPT_STRING &&
            sortd__access_set(&cfg->access, o->type == OPT_GROUPS, value, why, sizeof(why)) < 0) {
                sortd__log(SORTD__LOG_ERR, "%s: %s", where, why);
                return -1;
        }
        strcpy(field, value);
        return 0;
}

int sortd__config_set_option(sortd__config *cfg, const sortd__config_option *o, const char *value,
                             const char *where)
{
        char *field = (char *)cfg + o->offset;

        switch (o->type) {
        case OPT_STRING:
        case OPT_USERS:
        case OPT_GROUPS:
                return set_string(cfg, field, o, value, where);
        case OPT_CHOICE:
                return set_choice(field, o, value, where);
        case OPT_SIZE:
        case OPT_SIZE_AUTO:
        case OPT_COUNT:
                return parse_number(o, value, where, (uint64_t *)field);
        }
        return -1;
}

const sortd__config_option *sortd__config_find_option(const char *name, size_t len)
{
        for (size_t i = 0; i < sortd__config_n_options; i++) {
                const sortd__config_option *o = &sortd__config_options[i];

                if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
                        return o;
        }
        return NULL;
}

/* Splits "--name=value" or "--name value"; returns the option or NULL (reported). */
static const sortd__config_option *cli_option(int argc, char **argv, int *i, const char **value)
{
        const char *arg = argv[*i] + 2, *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        const sortd__config_option *o = sortd__config_find_option(arg, len);

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

static int check(sortd__config *cfg)
{
        if (cfg->max_request_bytes > cfg->max_inflight_bytes) {
                sortd__log(SORTD__LOG_ERR,
                           "max-request-bytes (%llu) must not exceed "
                           "max-inflight-bytes (%llu)",
                           (unsigned long long)cfg->max_request_bytes,
                           (unsigned long long)cfg->max_inflight_bytes);
                return -1;
        }
        if (!*cfg->socket) {
                char path[4096];

                sortd__wire_default_socket(path, sizeof(path));
                if (strlen(path) >= sizeof(cfg->socket)) {
                        sortd__log(SORTD__LOG_ERR,
                                   "the default socket %s is too long (at most %zu bytes): "
                                   "set socket, or a shorter $SORTD_SOCKET or $XDG_RUNTIME_DIR",
                                   path, sizeof(cfg->socket) - 1);
                        return -1;
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
               sortd__config_find_option(arg + 2, strlen(arg + 2));
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

                if (!n) {
                        i += takes_next(argv[i]);
                        continue;
                }
                path = argv[i][n] ? argv[i] + n + 1 : argv[i + 1];
                if (!path) {
                        sortd__log(SORTD__LOG_ERR, "%.*s needs a file", (int)n, argv[i]);
                        return -1;
                }
                if (sortd__config_file_load(cfg, path, n > strlen("--config")) < 0)
                        return -1;
                i += argv[i][n] == '\0';
        }
        return 0;
}

static int load_command_line(sortd__config *cfg, int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                const sortd__config_option *o;
                const char *value;

                if (config_option(argv[i])) {
                        i += takes_next(argv[i]);
                        continue;
                }
                if (is_check(argv[i]) || strcmp(argv[i], "--print-config=effective") == 0)
                        continue;
                if (strncmp(argv[i], "--", 2) != 0) {
                        sortd__log(SORTD__LOG_ERR, "unexpected argument '%s'", argv[i]);
                        return -1;
                }
                o = cli_option(argc, argv, &i, &value);
                if (!o || sortd__config_set_option(cfg, o, value, "command line") < 0)
                        return -1;
        }
        return 0;
}

int sortd__config_load(sortd__config *cfg, int argc, char **argv)
{
        struct request q = scan_request(argc, argv);
        bool effective;

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
        if (q.print && !effective)
                return sortd__config_doc_print(q.print) < 0 ? -1 : SORTD__CONFIG_EXIT;
        *cfg = (sortd__config){0};
        for (size_t i = 0; i < sortd__config_n_options; i++) {
                const sortd__config_option *o = &sortd__config_options[i];

                if (o->def && sortd__config_set_option(cfg, o, o->def, "default") < 0)
                        return -1;
        }
        if (load_files(cfg, argc, argv) < 0 || load_command_line(cfg, argc, argv) < 0 ||
            check(cfg) < 0)
                return -1;
        if (effective) {
                sortd__config_doc_print_effective(cfg);
                return SORTD__CONFIG_EXIT;
        }
        return q.check ? SORTD__CONFIG_CHECK : SORTD__CONFIG_SERVE;
}
