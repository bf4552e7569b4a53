/*
 * Taking a pending fd: uv_accept opens it into a scratch pipe handle (libuv checks nothing
 * of its kind), and the handle's close closes libuv's copy. A taken fd is duplicated first; a
 * dropped one is not, so that dropping never holds one more fd than came (a client piling fds
 * up is closed at the limit, and must not push the daemon past it). The handle is freed in its
 * close callback, as libuv requires.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fdpass.h"

static void free_handle(uv_handle_t *h)
{
        free(h);
}

/* The oldest fd pending on p, moved into a scratch handle; NULL with errno set when none is
   pending or it could not be moved. */
static uv_pipe_t *accept_pending(uv_pipe_t *p)
{
        uv_pipe_t *h;

        if (uv_pipe_pending_count(p) == 0) {
                errno = ENOENT;
                return NULL;
        }
        h = malloc(sizeof(*h));
        if (!h || uv_pipe_init(p->loop, h, 0) != 0) {
                free(h);
                errno = ENOMEM;
                return NULL;
        }
        if (uv_accept((uv_stream_t *)p, (uv_stream_t *)h) != 0) {
                uv_close((uv_handle_t *)h, free_handle);
                errno = EBADF;
                return NULL;
        }
        return h;
}

int sortd__fdpass_take(uv_pipe_t *p)
{
        uv_pipe_t *h = accept_pending(p);
        uv_os_fd_t fd;
        int mine = -1;

        if (!h)
                return -errno;
        if (uv_fileno((uv_handle_t *)h, &fd) != 0)
                mine = -EBADF;
        else if ((mine = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
                mine = -errno;
        uv_close((uv_handle_t *)h, free_handle);
        return mine;
}

unsigned sortd__fdpass_drop_all(uv_pipe_t *p)
{
        unsigned n = 0;
        uv_pipe_t *h;

        while ((h = accept_pending(p))) {
                uv_close((uv_handle_t *)h, free_handle); /* closes the fd now */
                n++;
        }
        return n;
}
