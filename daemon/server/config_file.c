/*
 * Reading a sortd.conf (config.c's table, one setting a line): what kind of file it may be,
 * how long its lines may be, and where an error is (FILE:LINE).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "config.h"
#include "config_table.h"
#include "log.h"

static char *trim(char *s)
{
        char *e;

        while (isspace((unsigned char)*s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char)e[-1]))
                *--e = '\0';
        return s;
}

/* One line of a config file; where names it. */
static int load_line(sortd__config *cfg, char *line, const char *where)
{
        char *eq, *key, *s = trim(line);
        const sortd__config_option *o;

        if (*s == '#' || *s == '\0')
                return 0;
        eq = strchr(s, '=');
        if (!eq) {
                sortd__log(SORTD__LOG_ERR, "%s: expected 'name = value'", where);
                return -1;
        }
        *eq = '\0';
        key = trim(s);
        o = sortd__config_find_option(key, strlen(key));
        if (!o) {
                sortd__log(SORTD__LOG_ERR, "%s: unknown setting '%s'", where, key);
                return -1;
        }
        return sortd__config_set_option(cfg, o, trim(eq + 1), where);
}

/*
 * A config line longer than this is refused at its line, and the rest of it is never read:
 * "sortd --config /dev/zero", or a file of one endless line, used to grow memory until the
 * load failed. The longest value is an allow-uid or allow-gid list of 1023 bytes; 64 KiB leaves
 * a hand-written comment room to spare.
 */
#define LINE_MAX_BYTES (64u << 10)

enum { LINE_EOF = -1, LINE_TOO_LONG = -2, LINE_READ_ERROR = -3, LINE_NUL = -4 };

/* The next line of f, without its newline, into buf (LINE_MAX_BYTES + 1 bytes): its length,
   or one of the LINE_ values above. */
static long read_line(FILE *f, char *buf)
{
        size_t n = 0;
        int c;

        while ((c = getc(f)) != EOF && c != '\n') {
                if (n == LINE_MAX_BYTES)
                        return LINE_TOO_LONG;
                if (c == '\0') /* the line would end there unseen: "capacity = 1K\0junk" */
                        return LINE_NUL;
                buf[n++] = (char)c;
        }
        if (c == EOF && ferror(f))
                return LINE_READ_ERROR;
        if (c == EOF && n == 0)
                return LINE_EOF;
        buf[n] = '\0';
        return (long)n;
}

static const char *file_kind(mode_t mode)
{
        return S_ISDIR(mode)    ? "a directory"
               : S_ISFIFO(mode) ? "a FIFO or pipe"
               : S_ISCHR(mode)  ? "a character device"
               : S_ISBLK(mode)  ? "a block device"
               : S_ISSOCK(mode) ? "a socket"
                                : "of an unknown kind";
}

/* /dev/null reads as an empty file: "--config /dev/null" is the usual way to say "no file". */
static bool is_dev_null(const struct stat *st)
{
        return S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3);
}

/*
 * path opened for reading; NULL with errno set, or with *kind saying what path is when it is no
 * regular file (nor /dev/null). Only a regular file is read: a FIFO no one writes to held the start
 * (and systemd's start job) for ever, /dev/zero was read until memory ran out, and a directory
 * failed "after line 0". O_NONBLOCK lets a FIFO be opened, to be refused, without waiting for
 * a writer; on a regular file it changes nothing.
 */
static FILE *open_regular(const char *path, const char **kind)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), e;
        struct stat st;
        FILE *f = NULL;

        *kind = NULL;
        if (fd < 0)
                return NULL;
        if (fstat(fd, &st) == 0) {
                if (S_ISREG(st.st_mode) || is_dev_null(&st))
                        f = fdopen(fd, "r");
                else
                        *kind = file_kind(st.st_mode);
        }
        e = errno;
        if (!f)
                close(fd);
        errno = e;
        return f;
}

/* optional: a missing file is no error (--config-if-exists), so a package's example file may
   go. A value is taken or refused for its own length (set_option), at its own line. */
int sortd__config_file_load(sortd__config *cfg, const char *path, bool optional)
{
        const char *kind;
        FILE *f = open_regular(path, &kind);
        char *line, where[300];
        int lineno = 0, r = 0;
        long n = 0;

        if (kind) {
                sortd__log(SORTD__LOG_ERR, "config file %s is %s, not a regular file", path, kind);
                return -1;
        }
        if (!f && optional && errno == ENOENT) {
                sortd__log(SORTD__LOG_NOTICE, "no config file at %s: using the defaults", path);
                return 0;
        }
        if (!f) {
                sortd__log(SORTD__LOG_ERR, "cannot open config file %s: %s", path, strerror(errno));
                return -1;
        }
        line = malloc(LINE_MAX_BYTES + 1);
        if (!line) {
                sortd__log(SORTD__LOG_ERR, "cannot read config file %s: %s", path,
                           strerror(ENOMEM));
                fclose(f);
                return -1;
        }
        while (r == 0 && (n = read_line(f, line)) >= 0) {
                snprintf(where, sizeof(where), "%s:%d", path, ++lineno);
                r = load_line(cfg, line, where);
        }
        if (r == 0 && n == LINE_TOO_LONG) {
                sortd__log(SORTD__LOG_ERR, "%s:%d: line longer than %u bytes", path, lineno + 1,
                           LINE_MAX_BYTES);
                r = -1;
        }
        if (r == 0 && n == LINE_NUL) {
                sortd__log(SORTD__LOG_ERR, "%s:%d: a NUL byte: not a text file", path, lineno + 1);
                r = -1;
        }
        if (r == 0 && n == LINE_READ_ERROR) {
                sortd__log(SORTD__LOG_ERR, "cannot read config file %s after line %d: %s", path,
                           lineno, strerror(errno));
                r = -1;
        }
        free(line);
        fclose(f);
        return r;
}
