/*
 * sortctl's one failure message: the first failure of a run, recorded wherever it happens, and
 * what to do about a status libsortd returned. Below every other file of sortctl; it calls none.
 */
#include <stdarg.h>
#include <stdio.h>

#include "fail.h"
#include "sortctl.h"

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

const char *sc_fail_advice(sortd_status s)
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
        const char *a = sc_fail_advice(s);
        int lost = s == SORTD_E_IO || s == SORTD_E_TIMEOUT;

        return sc_fail(lost ? SC_UNREACHABLE : SC_FAIL, "%s: %s%s%s", what, sortd_error_message(c),
                       a ? ": " : "", a ? a : "");
}

const char *sc_fail_message(void)
{
        return failure;
}
