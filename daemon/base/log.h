/* The daemon's log (log.c): one line per event on stderr, at syslog's levels. */
#ifndef SORTD_DAEMON_LOG_H
#define SORTD_DAEMON_LOG_H

enum {
        SORTD__LOG_ERR = 3,
        SORTD__LOG_WARNING = 4,
        SORTD__LOG_NOTICE = 5,
        SORTD__LOG_INFO = 6,
        SORTD__LOG_DEBUG = 7
};

/* The most a line's text takes, its NUL included; the rest of a longer one is cut. */
#define SORTD__LOG_LINE_MAX 1024

void sortd__log_set_level(int level);
void sortd__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The levels' names, most severe first: [i] is level SORTD__LOG_ERR + i; NULL ends them. */
extern const char *const sortd__log_level_names[];

#endif
