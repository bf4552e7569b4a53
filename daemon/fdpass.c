/*
 * Taking a pending fd: uv_accept opens it into a scratch pipe handle (libuv checks nothing
 * of its kind), we duplicate it, and the handle's close closes libuv's copy. The handle is
 * freed in its close callback, as libuv requires.
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

int sortd__fd_take(uv_pipe_t *p)
{
        uv_pipe_t *h;
        uv_os_fd_t fd;
        int mine = -1, err = 0;

        if (uv_pipe_pending_count(p) == 0) {
                errno = ENOENT;
                return -1;
        }
        h = malloc(sizeof(*h));
        if (!h || uv_pipe_init(p->loop, h, 0) != 0) {
                free(h);
                errno = ENOMEM;
                return -1;
        }
        if (uv_accept((uv_stream_t *)p, (uv_stream_t *)h) != 0 ||
            uv_fileno((uv_handle_t *)h, &fd) != 0)
                err = EBADF;
        else if ((mine = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
                err = errno;
        uv_close((uv_handle_t *)h, free_handle);
        errno = err;
        return mine;
}

unsigned sortd__fd_drop_all(uv_pipe_t *p)
{
        unsigned n = 0;
        int fd;

        while (uv_pipe_pending_count(p) > 0) {
                fd = sortd__fd_take(p);
                if (fd < 0)
                        break;
                close(fd);
                n++;
        }
        return n;
}
