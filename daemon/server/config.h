/* The daemon's settings (config.c): one table (config_table.h) feeds the defaults, the files and
   the command line. */
#ifndef SORTD_DAEMON_CONFIG_H
#define SORTD_DAEMON_CONFIG_H

#include <stdint.h>
#include <sys/un.h>

#include "access.h"

/* A size that says "auto": the server picks it once it knows the engine. */
#define SORTD__CONFIG_AUTO UINT64_MAX

typedef struct sortd__config {
        char socket[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* a longer path cannot bind */
        char allow_uid[1024]; /* comma-separated users served; "" and allow_gid "": everyone */
        char allow_gid[1024];
        sortd__access access; /* allow-uid and allow-gid, resolved as they were read */
        char engine[16];
        char devices[1024];      /* devices.h */
        uint64_t device_streams; /* sorts in flight on one device */
        uint64_t capacity;
        uint64_t threads;
        uint64_t max_request_bytes;
        uint64_t max_inflight_bytes;
        uint64_t host_pool; /* engine host memory requests are received into, or auto */
        uint64_t max_connections;
        uint64_t max_pipeline;      /* requests read but not yet answered, per connection */
        uint64_t batch_member_keys; /* a sort of up to this n joins batches; 0: no batches */
        uint64_t batch_max_keys;    /* keys in one batch */
        uint64_t batch_max_bytes;   /* keys and values (or indices) in one batch */
        uint64_t cpu_path_keys;     /* sorts up to this n go to the CPU path; or auto */
        uint64_t loop_sort_keys;    /* sorts up to this n may run on the loop thread; 0: none */
        uint64_t max_write_queue;   /* reply bytes queued to one connection before reads stop */
        uint64_t max_drain_bytes;   /* a refused payload up to this size is read and dropped */
        uint64_t max_regions;       /* shared-memory regions per connection */
        uint64_t max_region_bytes;  /* mapped by all connections together */
        uint64_t drain_timeout_ms;
        uint64_t frame_timeout_ms; /* a frame in progress may go this long without a byte */
        uint64_t idle_timeout_ms;  /* a connection with nothing in progress; 0: for ever */
        uint64_t write_timeout_ms; /* queued reply bytes may go this long untaken; 0: for ever */
        int on_device_loss;        /* enum sortd__recovery_policy (recovery.h) */
        int log_level;             /* SORTD__LOG_ERR.. (log.h) */
} sortd__config;

/* What the command line asks the daemon to do once its settings are read. */
enum sortd__config_action {
        SORTD__CONFIG_SERVE, /* start */
        SORTD__CONFIG_EXIT,  /* --help, --version or --print-config: printed, exit 0 */
        SORTD__CONFIG_CHECK, /* --check-config: run start-up's checks, say so, exit */
};

/*
 * Fills cfg from the defaults, then every --config FILE, then the command line. Returns an
 * action, or a negative errno (already reported on stderr): -EINVAL for a command line it does
 * not take or settings that contradict each other, -ENAMETOOLONG for a default socket path too
 * long to bind, or the error of a file (config_file.h) or of a value (config_table.h).
 * --help, --version and --print-config win wherever they stand, and read no file; but
 * --print-config=effective reads them all, as --check-config does, and prints the result.
 */
int sortd__config_load(sortd__config *cfg, int argc, char **argv);

#endif
