/* The refusal of the checks in common/ and proto/: SORTD_E_INVAL, its message in why (when
   why_len > 0). */
#ifndef SORTD_COMMON_INVALID_H
#define SORTD_COMMON_INVALID_H

#include <stddef.h>

#include "sortd_types.h"

sortd_status sortd__invalid(char *why, size_t why_len, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

#endif
