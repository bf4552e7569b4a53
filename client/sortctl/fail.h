/*
 * sortctl's one failure message (fail.c). Every file of sortctl reports through it, and it
 * calls none of them.
 */
#ifndef SORTCTL_FAIL_H
#define SORTCTL_FAIL_H

#include "sortd.h"

/*
 * Records why the run fails and returns code. Only the first call's message is kept, and
 * main() prints it as sortctl's one line on stderr after every subcommand has cleaned up (so
 * that it never lands in the middle of the progress display).
 */
int sc_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A library call's failure: its message, and exit code 2 when the daemon is gone. */
int sc_fail_conn(sortd_conn *c, sortd_status s, const char *what);

/* What to do about a status the daemon or libsortd returned; NULL when there is no advice. */
const char *sc_fail_advice(sortd_status s);

/* The message the run's first failure recorded; "" while none has. */
const char *sc_fail_message(void);

#endif
