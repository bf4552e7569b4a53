/* See atomic.h. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic.h"
#include "fail.h"
#include "sortctl.h"

#define BUFFER (1u << 20)

struct sc_out {
        char path[PATH_MAX], tmp[PATH_MAX + 32];
        int fd, slot;
        bool direct; /* not a regular file (a terminal, pipe or device): written in place */
        size_t used;
        char *buf;
        char note[2 * PATH_MAX]; /* "; A was": in-place outputs written before this one */
};

static void written(sc_out **o, int n, const sc_out *skip, char *note, size_t cap);

/* The temporary files a signal must remove. The handler only reads the paths, which are
   written before the slot is published. */
#define SLOTS SC_MAX_OUTPUTS
static char *volatile pending[SLOTS];

static void on_signal(int sig)
{
        for (int i = 0; i < SLOTS; i++)
                if (pending[i])
                        unlink(pending[i]);
        signal(sig, SIG_DFL);
        raise(sig);
}

/* The signals whose handler removes the temporary files: the user's, and those a write
   raises (a pipe whose reader has gone, the file size limit), which kill as they would any
   tool once the files are gone. */
static const int REMOVAL_SIGNALS[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ};

#define N_REMOVAL_SIGNALS ((int)(sizeof(REMOVAL_SIGNALS) / sizeof(REMOVAL_SIGNALS[0])))

static void install_handler(void)
{
        static int installed;

        if (!installed) {
                struct sigaction sa = {.sa_handler = on_signal}, was;

                sigemptyset(&sa.sa_mask);
                /* A signal ignored on entry stays ignored: nohup ignores SIGHUP, and a shell
                   SIGINT for a background job, so that they run on. */
                for (int i = 0; i < N_REMOVAL_SIGNALS; i++)
                        if (sigaction(REMOVAL_SIGNALS[i], NULL, &was) == 0 &&
                            was.sa_handler != SIG_IGN)
                                sigaction(REMOVAL_SIGNALS[i], &sa, NULL);
                installed = 1;
        }
}

/* The set of REMOVAL_SIGNALS, to hold them off. */
static void removal_signals(sigset_t *set)
{
        sigemptyset(set);
        for (int i = 0; i < N_REMOVAL_SIGNALS; i++)
                sigaddset(set, REMOVAL_SIGNALS[i]);
}

static int publish(char *tmp)
{
        for (int i = 0; i < SLOTS; i++) {
                if (!pending[i]) {
                        pending[i] = tmp;
                        return i;
                }
        }
        return -1;
}

static void unpublish(sc_out *o)
{
        if (o->slot >= 0)
                pending[o->slot] = NULL;
        o->slot = -1;
}

/* The mode a new file would get from open(path, O_CREAT, 0666), or the existing file's. */
static mode_t target_mode(const char *path)
{
        struct stat st;
        mode_t mask;

        if (stat(path, &st) == 0)
                return st.st_mode & 07777;
        mask = umask(0);
        umask(mask);
        return 0666 & ~mask;
}

/* The descriptor that /dev/stdout, /dev/stderr, /dev/fd/N or /proc/self/fd/N names; -1 for any
   other path. */
static int descriptor_of(const char *path)
{
        static const char *const dirs[] = {"/dev/fd/", "/proc/self/fd/"};

        if (strcmp(path, "/dev/stdout") == 0)
                return STDOUT_FILENO;
        if (strcmp(path, "/dev/stderr") == 0)
                return STDERR_FILENO;
        for (int i = 0; i < 2; i++) {
                size_t dl = strlen(dirs[i]), digits;

                if (strncmp(path, dirs[i], dl) != 0)
                        continue;
                /* The name the kernel gives: digits, no sign, space or leading zero. */
                path += dl;
                digits = strspn(path, "0123456789");
                if (!digits || path[digits] || digits > 9 || (path[0] == '0' && digits > 1))
                        return -1;
                return atoi(path);
        }
        return -1;
}

int sc_out_check_descriptor(const char *path)
{
        int fd = descriptor_of(path), flags;

        if (fd < 0)
                return SC_OK;
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
                return sc_fail(SC_FAIL,
                               "%s: descriptor %d is %s: redirect it (%d>FILE) or give a file name",
                               path, fd, flags < 0 ? "not open" : "open for reading only", fd);
        return SC_OK;
}

/*
 * Where the data goes: a regular file is replaced whole, and through a symlink its target is,
 * so that the rename keeps the link. Anything else but a directory, and a descriptor named as
 * a path (/dev/stdout), is written in place, opened by the path as given: /dev/stdout on a
 * pipe links to /proc/self/fd/1, whose target ("pipe:[...]") is no path realpath could return.
 */
static int resolve(sc_out *o, const char *path)
{
        struct stat st;
        bool exists = stat(path, &st) == 0;

        /* Never replaced by a file: as root, one renamed over /dev/stdout breaks the machine. */
        if (sc_out_check_descriptor(path) != SC_OK)
                return SC_FAIL;
        if (exists && S_ISDIR(st.st_mode))
                return sc_fail(SC_FAIL, "%s is a directory: give a file name", path);
        /* Replaced, the link would be lost; written through, its target made where the link
           says (as GNU cp, which refuses too). */
        if (!exists && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
                return sc_fail(SC_FAIL,
                               "%s is a symlink to a file that does not exist: create its target "
                               "or remove the link",
                               path);
        if (exists && S_ISREG(st.st_mode) && descriptor_of(path) < 0) {
                if (!realpath(path, o->path))
                        return sc_fail(SC_FAIL, "%s: %s", path, strerror(errno));
                return SC_OK;
        }
        if (strlen(path) >= sizeof(o->path))
                return sc_fail(SC_FAIL, "%s: the path is too long", path);
        strcpy(o->path, path);
        /* A descriptor is written through even where no /dev/fd link names it (a chroot or
           container without them): a file renamed over /dev/stdout would take its place. */
        o->direct = exists || descriptor_of(path) >= 0;
        return SC_OK;
}

/* A descriptor named as a path is written through a copy of it, so that its offset and
   O_APPEND hold (sortctl sort ... -o /dev/stdout >> log appends); opening the path anew would
   write from the start of a redirected file. */
static int open_direct(sc_out *o)
{
        int fd = descriptor_of(o->path);

        o->fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3)
                        : open(o->path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (o->fd < 0)
                return sc_fail(SC_FAIL, "%s: cannot open it: %s", o->path, strerror(errno));
        return SC_OK;
}

static int open_temporary(sc_out *o)
{
        char dir[PATH_MAX], base[PATH_MAX];
        sigset_t held, old;

        strcpy(dir, o->path);
        strcpy(base, o->path);
        snprintf(o->tmp, sizeof(o->tmp), "%s/.%s.sortctl-XXXXXX", dirname(dir), basename(base));
        /* A signal between the file's creation and its slot would leave it behind: held until
           the handler knows the file (SIGTERM as soon as it appeared left one in 300 runs). */
        install_handler();
        removal_signals(&held);
        sigprocmask(SIG_BLOCK, &held, &old);
        o->fd = mkstemp(o->tmp);
        if (o->fd >= 0)
                o->slot = publish(o->tmp);
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (o->fd < 0) {
                int e = errno;

                o->tmp[0] = '\0';
                return sc_fail(SC_FAIL, "%s: cannot create a file in its directory (%s): %s",
                               o->path, strerror(e),
                               e == EACCES ? "write to a directory you may write to"
                                           : "check that the directory exists");
        }
        if (fchmod(o->fd, target_mode(o->path)) < 0)
                return sc_fail(SC_FAIL, "%s: chmod: %s", o->path, strerror(errno));
        return SC_OK;
}

int sc_out_open(const char *path, sc_out **out)
{
        sc_out *o = calloc(1, sizeof(*o));
        int r;

        if (!o || !(o->buf = malloc(BUFFER))) {
                free(o);
                return sc_fail(SC_FAIL, "out of memory");
        }
        o->fd = -1;
        o->slot = -1;
        r = resolve(o, path);
        if (r == SC_OK)
                r = o->direct ? open_direct(o) : open_temporary(o);
        if (r != SC_OK) {
                sc_out_discard(o);
                return r;
        }
        *out = o;
        return SC_OK;
}

static int flush(sc_out *o)
{
        for (size_t done = 0; done < o->used;) {
                ssize_t w = write(o->fd, o->buf + done, o->used - done);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return sc_fail(SC_FAIL, "%s: write: %s (%s%s)", o->path, strerror(errno),
                                       o->direct ? "it may hold part of the output"
                                                 : "nothing was written to it",
                                       o->note);
                done += (size_t)w;
        }
        o->used = 0;
        return SC_OK;
}

int sc_out_write(sc_out *o, const void *buf, size_t len)
{
        const char *p = buf;

        while (len > 0) {
                size_t n = BUFFER - o->used < len ? BUFFER - o->used : len;

                memcpy(o->buf + o->used, p, n);
                o->used += n;
                p += n;
                len -= n;
                if (o->used == BUFFER && flush(o) != SC_OK)
                        return SC_FAIL;
        }
        return SC_OK;
}

int sc_out_finish(sc_out *o)
{
        int r = flush(o);

        if (r == SC_OK && !o->direct && fsync(o->fd) < 0)
                r = sc_fail(SC_FAIL, "%s: fsync: %s (nothing was written to it)", o->path,
                            strerror(errno));
        if (close(o->fd) < 0 && r == SC_OK)
                r = sc_fail(SC_FAIL, "%s: close: %s (%s%s)", o->path, strerror(errno),
                            o->direct ? "it may hold part of the output"
                                      : "nothing was written to it",
                            o->note);
        o->fd = -1;
        return r;
}

bool sc_out_in_place(const sc_out *o)
{
        return o->direct;
}

/* "; A and B were": the outputs of o[n] other than skip that are already written, in place or
   renamed into place; "" if none. */
static void written(sc_out **o, int n, const sc_out *skip, char *note, size_t cap)
{
        int count = 0;
        size_t len = 0;

        note[0] = '\0';
        for (int i = 0; i < n; i++) {
                if (!o[i] || o[i] == skip || (!o[i]->direct && o[i]->tmp[0]))
                        continue;
                if (len >= cap)
                        break;
                len += (size_t)snprintf(note + len, cap - len, "%s%s", count ? " and " : "; ",
                                        o[i]->path);
                count++;
        }
        if (count && len < cap)
                snprintf(note + len, cap - len, count > 1 ? " were" : " was");
}

void sc_out_written_before(sc_out *o, sc_out **before, int n)
{
        written(before, n, o, o->note, sizeof(o->note));
}

/* Renames o's finished temporary file over its destination; o[n] are all the run's outputs,
   named in the message when the rename fails after some of them were written. */
static int rename_into_place(sc_out *o, sc_out **all, int n)
{
        char dir[PATH_MAX], note[2 * PATH_MAX];
        int dfd;

        if (rename(o->tmp, o->path) < 0) {
                int e = errno;

                written(all, n, o, note, sizeof(note));
                return sc_fail(SC_FAIL, "%s: rename: %s (nothing was written to it%s)", o->path,
                               strerror(e), note);
        }
        unpublish(o);
        o->tmp[0] = '\0';
        /* The rename itself is durable once the directory is synced. */
        strcpy(dir, o->path);
        dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
                fsync(dfd);
                close(dfd);
        }
        return SC_OK;
}

int sc_out_commit_all(sc_out **o, int n)
{
        sigset_t held, old;
        int r = SC_OK;

        removal_signals(&held);
        sigprocmask(SIG_BLOCK, &held, &old);
        for (int i = 0; i < n && r == SC_OK; i++)
                if (o[i] && !o[i]->direct)
                        r = rename_into_place(o[i], o, n);
        /* The temporary files not renamed are removed before a held signal can act. */
        for (int i = 0; i < n; i++)
                sc_out_discard(o[i]);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return r;
}

void sc_out_discard(sc_out *o)
{
        if (!o)
                return;
        if (o->fd >= 0)
                close(o->fd);
        if (o->tmp[0])
                unlink(o->tmp);
        unpublish(o);
        free(o->buf);
        free(o);
}
