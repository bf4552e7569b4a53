/*
 * One line per event on stderr. Under systemd (JOURNAL_STREAM set) each line starts with the
 * sd-daemon level prefix "<N>" so the journal files it at that priority.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static int max_level = SORTD__LOG_INFO;

static const char *const level_names[] = {
        [SORTD__LOG_ERR] = "error",     [SORTD__LOG_WARNING] = "warning",
        [SORTD__LOG_NOTICE] = "notice", [SORTD__LOG_INFO] = "info",
        [SORTD__LOG_DEBUG] = "debug",
};

void sortd__log_set_level(int level)
{
        max_level = level;
}

int sortd__log_level_parse(const char *name)
{
        for (int i = SORTD__LOG_ERR; i <= SORTD__LOG_DEBUG; i++)
                if (strcmp(name, level_names[i]) == 0)
                        return i;
        return -1;
}

void sortd__log(int level, const char *fmt, ...)
{
        char line[1024];
        va_list ap;

        if (level > max_level)
                return;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        if (getenv("JOURNAL_STREAM"))
                fprintf(stderr, "<%d>%s\n", level, line);
        else
                fprintf(stderr, "sortd: %s: %s\n", level_names[level], line);
}
