/*
 * The one configuration table: every setting's name, type, default, bounds and unit, and the
 * code that finds a setting by name and sets it from its text. The loader (config.c), the file
 * reader (config_file.c) and the documentation (config_doc.c) all sit on it, so none of them can
 * drift from the others.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "config.h"
#include "config_table.h"
#include "log.h"
#include "recovery.h"

/* auto is server.c's; the rest are engine.c's kinds, whatever this build has: a kind it lacks
   is refused when the engine is created (exit 1), as a GPU that is absent is. */
static const char *const engine_names[] = {"auto", "cpu", "cuda", "cub", NULL};

const sortd__config_option sortd__config_table_options[] = {
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
        {"devices", STR(OPT_STRING, devices), "auto", 0, 0, "list",
         "the GPUs a GPU engine serves: auto = every CUDA device this process sees (after "
         "CUDA_VISIBLE_DEVICES) whose engine passes its self-check, or a comma-separated list of "
         "CUDA ordinals and UUIDs as nvidia-smi -L prints them (GPU-..., MIG-...)"},
        {"device-streams", NUM(OPT_COUNT, device_streams), "2", 1, 4, "sorts",
         "sorts one device runs at once, each with an engine of its own (its stream and its "
         "temporary storage), so that one's copies overlap another's kernels"},
        {"on-device-loss", CHOICE(on_device_loss, sortd__recovery_policy_names), "recreate", 0, 0,
         "policy",
         "when the engine's device fails for good (a sticky CUDA error): recreate = a new "
         "engine of the same kind, or the cpu engine if that cannot serve; cpu = the cpu "
         "engine. With several devices a device that cannot be made again is dropped, and the "
         "others serve"},
        {"allow-uid", STR(OPT_USERS, allow_uid), "", 0, 0, "users",
         "comma-separated user names or uids the daemon serves (checked when a client "
         "connects); with allow-gid empty too, everyone who can open the socket"},
        {"allow-gid", STR(OPT_GROUPS, allow_gid), "", 0, 0, "groups",
         "comma-separated group names or gids whose members (by primary or supplementary "
         "group) the daemon serves"},
        {"capacity", NUM(OPT_SIZE_AUTO, capacity), "16M", 1, 1ull << 40, "keys",
         "largest n one sort may have; auto = each GPU's from its free memory at start-up (half "
         "of it, shared by its device-streams engines, at most what max-request-bytes lets one "
         "sort have), 16M on cpu"},
        {"threads", NUM(OPT_COUNT, threads), "0", 0, 1024, "threads",
         "engine threads: the cpu engine's workers, a GPU engine's host copy threads (16 at most); "
         "0 = online CPUs"},
        {"max-request-bytes", NUM(OPT_SIZE, max_request_bytes), "256M", 64, 1ull << 44, "bytes",
         "largest sort (keys + values or indices, plus a segmented sort's offsets and an inline "
         "top-k's results; a region sort counts its offsets only)"},
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

const size_t sortd__config_table_n_options =
        sizeof(sortd__config_table_options) / sizeof(sortd__config_table_options[0]);

/* A number; with suffixes, also K, M, G or T (powers of 1024). 0, -EINVAL when s is none,
   -ERANGE when it does not fit 64 bits. */
static int parse_size(const char *s, bool suffixes, uint64_t *out)
{
        char *end;
        unsigned long long v;
        unsigned shift = 0;

        if (!isdigit((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 0);
        if (errno) /* ERANGE: the only error strtoull has for digits */
                return -ERANGE;
        if (*end && !suffixes)
                return -EINVAL;
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
                return -EINVAL;
        }
        if (shift && *++end)
                return -EINVAL;
        if (shift && v > (UINT64_MAX >> shift))
                return -ERANGE;
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
                return -EINVAL;
        }
        *out = v;
        return 0;
}

void sortd__config_table_format_choices(const sortd__config_option *o, char *buf, size_t len)
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
        sortd__config_table_format_choices(o, names, sizeof(names));
        sortd__log(SORTD__LOG_ERR, "%s: %s = '%s' is none of %s", where, o->name, value, names);
        return -EINVAL;
}

/* A string setting, or a list of users or groups, which must name some that exist: resolved
   into cfg->access here, once, and served with as resolved. */
static int set_string(sortd__config *cfg, char *field, const sortd__config_option *o,
                      const char *value, const char *where)
{
        char why[256];
        int r;

        if (strlen(value) >= o->size) {
                sortd__log(SORTD__LOG_ERR, "%s: %s is too long (at most %zu bytes)", where, o->name,
                           o->size - 1);
                return -ENAMETOOLONG;
        }
        if (o->type != OPT_STRING) {
                r = sortd__access_set(&cfg->access, o->type == OPT_GROUPS, value, why, sizeof(why));
                if (r < 0) {
                        sortd__log(SORTD__LOG_ERR, "%s: %s", where, why);
                        return r;
                }
        }
        strcpy(field, value);
        return 0;
}

int sortd__config_table_set(sortd__config *cfg, const sortd__config_option *o, const char *value,
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
        return -EINVAL;
}

const sortd__config_option *sortd__config_table_find(const char *name, size_t len)
{
        for (size_t i = 0; i < sortd__config_table_n_options; i++) {
                const sortd__config_option *o = &sortd__config_table_options[i];

                if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
                        return o;
        }
        return NULL;
}
