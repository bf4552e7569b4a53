/* The names of sortd_status codes. */
#include "sortd_types.h"

const char *sortd_strerror(sortd_status s)
{
        switch (s) {
        case SORTD_OK:
                return "success";
        case SORTD_E_INVAL:
                return "invalid argument";
        case SORTD_E_CAPACITY:
                return "request above capacity";
        case SORTD_E_NOMEM:
                return "out of memory";
        case SORTD_E_NODEV:
                return "no device";
        case SORTD_E_DEVICE:
                return "device error";
        case SORTD_E_SYSTEM:
                return "system error";
        case SORTD_E_UNSUPPORTED:
                return "not supported";
        case SORTD_E_PROTOCOL:
                return "protocol error";
        case SORTD_E_IO:
                return "I/O error";
        case SORTD_E_TIMEOUT:
                return "timed out";
        case SORTD_E_BUSY:
                return "busy";
        case SORTD_E_SELFCHECK:
                return "self-check failed";
        case SORTD_E_DENIED:
                return "permission denied";
        }
        return "unknown status";
}
