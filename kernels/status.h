/* Status codes shared by every sortd component: engines, daemon, client. */
#ifndef SORTD_STATUS_H
#define SORTD_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sortd_status {
        SORTD_OK = 0,
        SORTD_E_INVAL = 1,       /* a bad argument: NULL buffer, bad bit range, bad enum */
        SORTD_E_CAPACITY = 2,    /* n above the engine's capacity */
        SORTD_E_NOMEM = 3,       /* an allocation failed */
        SORTD_E_NODEV = 4,       /* the engine's device is absent (no CUDA device) */
        SORTD_E_DEVICE = 5,      /* the device reported an error */
        SORTD_E_SYSTEM = 6,      /* an OS call failed (threads, memory mapping) */
        SORTD_E_UNSUPPORTED = 7, /* valid request this engine cannot serve */
        SORTD_E_PROTOCOL = 8,    /* malformed or unexpected message */
        SORTD_E_IO = 9,          /* the connection failed or the peer went away */
        SORTD_E_TIMEOUT = 10,    /* no answer in time */
        SORTD_E_BUSY = 11,       /* a limit was reached; retry later */
        SORTD_E_SELFCHECK = 12,  /* the engine produced a wrong result */
} sortd_status;

/* A short static name of the code ("invalid argument"); never NULL. */
const char *sortd_strerror(sortd_status s);

#ifdef __cplusplus
}
#endif

#endif
