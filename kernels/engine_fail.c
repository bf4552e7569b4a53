/* The message of an engine's failed call, for every file of the engines (engine_impl.h). */
#include <stdarg.h>
#include <stdio.h>

#include "engine_impl.h"

sortd_status sortd__engine_fail(sortd_engine *e, sortd_status s, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(e->why, sizeof(e->why), fmt, ap);
        va_end(ap);
        return s;
}
