/* See notify.h. */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

void notify_open(notify_sock *n)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};

        strcpy(n->dir, "/tmp/sortd-notify-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(n->dir));
        snprintf(n->path, sizeof(n->path), "%s/notify", n->dir);
        strcpy(sa.sun_path, n->path);
        n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ck_assert_int_eq(bind(n->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
}

void notify_read(notify_sock *n, char *buf, size_t len)
{
        size_t got = 0;
        struct pollfd p = {.fd = n->fd, .events = POLLIN};

        buf[0] = '\0';
        while (got + 2 < len && poll(&p, 1, 0) == 1) {
                ssize_t r = recv(n->fd, buf + got, len - got - 2, 0);

                if (r <= 0)
                        break;
                got += (size_t)r;
                buf[got++] = '|';
                buf[got] = '\0';
        }
}

int notify_wait(notify_sock *n, const char *want, char *last, size_t len)
{
        for (;;) {
                struct pollfd p = {.fd = n->fd, .events = POLLIN};
                ssize_t r;

                if (poll(&p, 1, 2000) != 1)
                        return 0;
                r = recv(n->fd, last, len - 1, 0);
                if (r < 0)
                        return 0;
                last[r] = '\0';
                if (strstr(last, want))
                        return 1;
        }
}

void notify_close(notify_sock *n)
{
        close(n->fd);
        unlink(n->path);
        rmdir(n->dir);
}
