/*
 * Reading a sortd.conf (one setting of the table, config_table.c, a line): what kind of file it
 * may be, how long its lines may be, and where an error is (FILE:LINE).
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
#include "config_file.h"
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
                return -EINVAL;
        }
        *eq = '\0';
        key = trim(s);
        o = sortd__config_table_find(key, strlen(key));
        if (!o) {
                sortd__log(SORTD__LOG_ERR, "%s: unknown setting '%s'", where, key);
                return -EINVAL;
        }
        return sortd__config_table_set(cfg, o, trim(eq + 1), where);
}

/*
 * A config line longer than this is refused at its line, and the rest of it is never read:
 * "sortd --config /dev/zero", or a file of one endless line, would otherwise grow memory
 * until the load failed. The longest value is an allow-uid or allow-gid list of 1023 bytes; 64 KiB
 * leaves a hand-written comment room to spare.
 */
#define LINE_MAX_BYTES (64u << 10)

/* The next line of f, without its newline, into buf (LINE_MAX_BYTES + 1 bytes): 1, 0 at the end
   of the file, -EMSGSIZE for a line longer than LINE_MAX_BYTES, -EILSEQ for a NUL byte, or the
   error reading failed with. */
static int read_line(FILE *f, char *buf)
{
        size_t n = 0;
        int c;

        errno = 0;
        while ((c = getc(f)) != EOF && c != '\n') {
                if (n == LINE_MAX_BYTES)
                        return -EMSGSIZE;
                if (c == '\0') /* the line would end there unseen: "capacity = 1K\0junk" */
                        return -EILSEQ;
                buf[n++] = (char)c;
        }
        if (c == EOF && ferror(f))
                return errno ? -errno : -EIO;
        if (c == EOF && n == 0)
                return 0;
        buf[n] = '\0';
        return 1;
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

static void close_file(FILE **f)
{
        if (*f)
                fclose(*f);
}

static void free_line(char **line)
{
        free(*line);
}

/* Why the file stopped being read after line lineno (r from read_line), logged; r. */
static int read_error(const char *path, int lineno, int r)
{
        if (r == -EMSGSIZE)
                sortd__log(SORTD__LOG_ERR, "%s:%d: line longer than %u bytes", path, lineno + 1,
                           LINE_MAX_BYTES);
        else if (r == -EILSEQ)
                sortd__log(SORTD__LOG_ERR, "%s:%d: a NUL byte: not a text file", path, lineno + 1);
        else
                sortd__log(SORTD__LOG_ERR, "cannot read config file %s after line %d: %s", path,
                           lineno, strerror(-r));
        return r;
}

/* optional: a missing file is no error (--config-if-exists), so a package's example file may
   go. A value is taken or refused for its own length (config_table.c), at its own line. */
int sortd__config_file_load(sortd__config *cfg, const char *path, bool optional)
{
        const char *kind;
        FILE *f __attribute__((cleanup(close_file))) = open_regular(path, &kind);
        char *line __attribute__((cleanup(free_line))) = NULL;
        char where[300];
        int lineno = 0, r;

        if (kind) {
                sortd__log(SORTD__LOG_ERR, "config file %s is %s, not a regular file", path, kind);
                return -EINVAL;
        }
        if (!f && optional && errno == ENOENT) {
                sortd__log(SORTD__LOG_NOTICE, "no config file at %s: using the defaults", path);
                return 0;
        }
        if (!f) {
                r = -errno;
                sortd__log(SORTD__LOG_ERR, "cannot open config file %s: %s", path, strerror(-r));
                return r;
        }
        line = malloc(LINE_MAX_BYTES + 1);
        if (!line) {
                sortd__log(SORTD__LOG_ERR, "cannot read config file %s: %s", path,
                           strerror(ENOMEM));
                return -ENOMEM;
        }
        while ((r = read_line(f, line)) > 0) {
                snprintf(where, sizeof(where), "%s:%d", path, ++lineno);
                r = load_line(cfg, line, where);
                if (r < 0)
                        return r;
        }
        return r < 0 ? read_error(path, lineno, r) : 0;
}
