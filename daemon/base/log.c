/*
 * One line per event on stderr. When stderr is the journal's stream (JOURNAL_STREAM names its
 * device and inode) each line starts with the sd-daemon level prefix "<N>" so the journal
 * files it at that priority.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static int max_level = SORTD__LOG_INFO;

const char *const sortd__log_level_names[] = {"error", "warning", "notice", "info", "debug", NULL};

void sortd__log_set_level(int level)
{
        max_level = level;
}

/*
 * Whether stderr is the stream systemd connected to the journal. The variable alone is not
 * enough (systemd.exec(5)): it is inherited, so a shell started from a unit has it, and so
 * does a sortd started there with stderr on a terminal or in a file.
 */
static bool to_journal(void)
{
        const char *env = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        return env && sscanf(env, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
               st.st_dev == dev && st.st_ino == ino;
}

void sortd__log(int level, const char *fmt, ...)
{
        char line[SORTD__LOG_LINE_MAX];
        va_list ap;

        if (level > max_level)
                return;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        if (to_journal())
                fprintf(stderr, "<%d>%s\n", level, line);
        else
                fprintf(stderr, "sortd: %s: %s\n", sortd__log_level_names[level - SORTD__LOG_ERR],
                        line);
}
