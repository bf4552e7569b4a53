#include "invalid.h"

#include <stdarg.h>
#include <stdio.h>

sortd_status sortd__invalid(char *why, size_t why_len, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        if (why_len)
                vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
        return SORTD_E_INVAL;
}
