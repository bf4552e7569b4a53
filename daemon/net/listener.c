/*
 * The listening socket: claimed before the engine is made, adopted from systemd (socket
 * activation) or bound at the configured path, a stale socket file replaced and a live one
 * refused; then served on the loop, and every connection taken off it, one the daemon has no
 * memory for closed at once.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include <stdarg.h>

#include "listener.h"
#include "log.h"

/* Clients waiting to be accepted, the engine's start included. uv_listen sets it again on
   the socket it adopts, systemd's too, as it did before sockets were claimed first. */
#define BACKLOG 128

/* Keeps the first failure's line and exit status for the server to report (sortd(8)). */
__attribute__((format(printf, 3, 4))) static void fail(sortd__listener *l, int status,
                                                       const char *fmt, ...)
{
        va_list ap;

        if (l->exit_status)
                return;
        l->exit_status = status;
        va_start(ap, fmt);
        vsnprintf(l->failure, sizeof(l->failure), fmt, ap);
        va_end(ap);
}

/*
 * A connection the daemon has no memory for is still taken off the listener, and closed at
 * once: libuv stops watching a listener whose connection is left unaccepted, and the daemon
 * would never accept again. A handle of the server's own takes it, as no memory may be had;
 * another such connection in the same loop turn waits for that handle's close (the listener
 * pauses until then).
 */
static void drop_connection(sortd__listener *l);

static void on_dropped(uv_handle_t *h)
{
        sortd__listener *l = h->data;

        l->dropping = false;
        if (l->drop_waiting) {
                l->drop_waiting = false;
                drop_connection(l);
        }
}

static void drop_connection(sortd__listener *l)
{
        if (l->dropping) {
                l->drop_waiting = true;
                return;
        }
        uv_pipe_init(l->loop, &l->dropped, 0);
        l->dropped.data = l;
        l->dropping = true;
        /* Fails only when the listener has closed meanwhile (a drain), with the connection. */
        if (uv_accept((uv_stream_t *)&l->handle, (uv_stream_t *)&l->dropped) == 0) {
                l->stats->connections_refused++;
                sortd__log(SORTD__LOG_ERR, "out of memory accepting a connection: closed it");
        }
        uv_close((uv_handle_t *)&l->dropped, on_dropped);
}

static void on_connection(uv_stream_t *listener, int status)
{
        sortd__listener *l = listener->data;

        if (status < 0) {
                sortd__log(SORTD__LOG_WARNING, "listen error: %s", uv_strerror(status));
                return;
        }
        if (l->accept(l->accept_arg, listener) < 0)
                drop_connection(l);
}

/* A socket file is stale when nobody accepts on it; 1 = stale, 0 = live, <0 = error. */
static int socket_is_stale(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd, r;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        strcpy(sa.sun_path, path);
        r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
        r = r == 0 ? 0 : errno == ECONNREFUSED ? 1 : -errno;
        close(fd);
        return r;
}

/* Whether the directory path's socket would go in does not exist. */
static bool directory_missing(const char *path)
{
        char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
        char *slash;
        struct stat st;

        snprintf(dir, sizeof(dir), "%s", path);
        slash = strrchr(dir, '/');
        if (!slash)
                return false;
        slash[slash == dir] = '\0';
        return stat(dir, &st) < 0 && errno == ENOENT;
}

/* What is at path already: nothing, or a stale socket (removed) lets a bind go ahead (0). */
static int check_path(sortd__listener *l)
{
        const char *path = l->path;
        struct stat st;
        int r;

        if (lstat(path, &st) < 0)
                return 0;
        if (!S_ISSOCK(st.st_mode)) {
                fail(l, 2,
                     "%s exists and is not a socket: move it away, or set socket to "
                     "another path",
                     path);
                return -EEXIST;
        }
        r = socket_is_stale(path);
        if (r == 0) {
                fail(l, 1,
                     "another daemon is listening on %s: stop it, or set socket to "
                     "another path",
                     path);
                return -EADDRINUSE;
        }
        if (r == 1) {
                sortd__log(SORTD__LOG_NOTICE, "removing stale socket %s", path);
                unlink(path);
        }
        return 0;
}

/* A socket of the daemon's own at l->path, mode 0660 (docs/operations.md: who may sort). */
static int bind_path(sortd__listener *l)
{
        const char *path = l->path;
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int r = 0;

        /* config.c refuses a longer path where it is set: it fits sun_path. */
        _Static_assert(sizeof(l->path) <= sizeof(sa.sun_path), "the socket setting fits sun_path");
        strcpy(sa.sun_path, path);
        l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (l->fd < 0 || bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                r = -errno;
        /* bind says ENOENT too where the directory is there but its file system makes no
           sockets (/proc): this user cannot create one there, as with EACCES. */
        if (r == -ENOENT && !directory_missing(path))
                r = -EACCES;
        if (r == 0) {
                l->bound = true;
                if (chmod(path, 0660) < 0)
                        r = -errno;
        }
        /* A missing or closed directory stays so across restarts: a wrong setting. */
        if (r == -ENOENT || r == -EACCES)
                fail(l, 2,
                     "cannot bind %s: %s; set socket to a path in a directory that "
                     "exists and that this user may write",
                     path, uv_strerror(r));
        else if (r < 0)
                fail(l, 1, "cannot bind %s: %s", path, uv_strerror(r));
        return r;
}

/* The socket systemd passed, when it passed one: checked, and l's (1); 0 when none. */
static int claim_passed(sortd__listener *l)
{
        int n = sd_listen_fds(1);

        if (n > 1) {
                fail(l, 2,
                     "systemd passed %d sockets; expected one: give sortd.socket one "
                     "ListenStream= and no other Listen line",
                     n);
                return -EINVAL;
        }
        if (n < 1)
                return 0;
        if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) <= 0) {
                fail(l, 2,
                     "the passed fd is not a listening Unix stream socket: "
                     "sortd.socket needs ListenStream= with a path");
                return -EINVAL;
        }
        l->fd = SD_LISTEN_FDS_START;
        l->activated = true;
        return 1;
}

void sortd__listener_init(sortd__listener *l, const char *path, sortd__stats *stats)
{
        *l = (sortd__listener){.fd = -1, .stats = stats};
        snprintf(l->path, sizeof(l->path), "%s", path);
}

/*
 * Plain system calls, as the loop comes only after the engine. A client that connects
 * between here and the loop's first turn waits in the backlog, as it does under socket
 * activation while the engine starts.
 */
int sortd__listener_claim(sortd__listener *l)
{
        int r = claim_passed(l);

        if (r != 0)
                return r < 0 ? r : 0;
        r = check_path(l);
        if (r == 0)
                r = bind_path(l);
        if (r == 0 && listen(l->fd, BACKLOG) < 0) {
                r = -errno;
                fail(l, 1, "cannot listen: %s", uv_strerror(r));
        }
        return r;
}

int sortd__listener_open(sortd__listener *l, uv_loop_t *loop, sortd__listener_accept_fn accept,
                         void *arg)
{
        int r;

        l->loop = loop;
        l->accept = accept;
        l->accept_arg = arg;
        r = uv_pipe_init(l->loop, &l->handle, 0);
        l->listening = r == 0; /* from here on finish() closes it */
        if (r == 0)
                r = uv_pipe_open(&l->handle, l->fd);
        if (r < 0) {
                if (l->activated)
                        fail(l, 1, "cannot adopt the passed socket: %s", uv_strerror(r));
                else
                        fail(l, 1, "cannot adopt %s: %s", l->path, uv_strerror(r));
                return r;
        }
        l->fd = -1; /* the handle's now: closing it closes the socket */
        l->handle.data = l;
        r = uv_listen((uv_stream_t *)&l->handle, BACKLOG, on_connection);
        if (r < 0)
                fail(l, 1, "cannot listen: %s", uv_strerror(r));
        return r;
}

/*
 * Only a file this daemon bound is removed (systemd's stays systemd's: sortd.socket), and
 * before the close: a daemon started meanwhile then finds no file, rather than one it takes
 * as stale and binds anew, which an unlink after the close would remove.
 */
void sortd__listener_close(sortd__listener *l)
{
        if (l->bound) {
                unlink(l->path);
                l->bound = false;
        }
        if (l->listening) {
                if (!uv_is_closing((uv_handle_t *)&l->handle))
                        uv_close((uv_handle_t *)&l->handle, NULL);
                l->listening = false;
        }
        if (l->fd >= 0) {
                close(l->fd);
                l->fd = -1;
        }
}
