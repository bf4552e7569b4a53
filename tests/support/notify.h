/*
 * A fake NOTIFY_SOCKET, as systemd's, in a fresh directory: a daemon started with its path in
 * NOTIFY_SOCKET (daemon_proc.notify_socket) sends its sd_notify datagrams here.
 */
#ifndef SORTD_TESTS_NOTIFY_H
#define SORTD_TESTS_NOTIFY_H

#include <stddef.h>

typedef struct notify_sock {
        char dir[32], path[64];
        int fd;
} notify_sock;

/* Binds it; aborts the test on failure. */
void notify_open(notify_sock *n);
/* Every datagram already sent, joined by '|', into buf (cut to len - 1 bytes). */
void notify_read(notify_sock *n, char *buf, size_t len);
/* Reads datagrams until one contains want (2 s at most): 1 with it in last, or 0. */
int notify_wait(notify_sock *n, const char *want, char *last, size_t len);
/* Closes it and removes its file and directory. */
void notify_close(notify_sock *n);

#endif
