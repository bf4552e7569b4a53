/*
 * The floor under sortd-bench's small-request rows: what a minimal server costs on this
 * machine, measured beside them. A child process serves the clients' sockets from one thread
 * and epoll: it reads each request whole (a 1,024-key request's bytes), optionally sorts its
 * keys with a one-thread cpu engine, and writes a reply of the same size back. No protocol, no
 * queue, no second thread: the echo bounds what the clients' own calls allow here.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datagen.h"
#include "engine.h"
#include "sortd_bench.h"

#define MAX_CLIENTS 64
/* A 1,024-key u32 sort's frame each way, near enough: header, message, keys. */
#define HEAD_BYTES 40
#define MSG_BYTES (HEAD_BYTES + 4096)

/* The child: serves fds[0..n) until every one has closed. */
static int serve(const int *fds, int n, bool sort)
{
        sortd_engine_config ec = {.capacity = 1024, .threads = 1};
        sortd_sort_desc d = {.key_type = SORTD_KEY_U32};
        struct epoll_event ev[MAX_CLIENTS];
        _Alignas(8) uint8_t buf[MSG_BYTES];
        sortd_engine *e = NULL;
        int ep = epoll_create1(0), open = n;
        char why[256];

        if (ep < 0 || (sort && sortd_engine_create("cpu", &ec, &e, why, sizeof(why)) != SORTD_OK))
                return 1;
        for (int i = 0; i < n; i++) {
                struct epoll_event want = {.events = EPOLLIN, .data.fd = fds[i]};

                if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &want) < 0)
                        return 1;
        }
        while (open > 0) {
                int k = epoll_wait(ep, ev, MAX_CLIENTS, -1);

                for (int i = 0; i < k; i++) {
                        int fd = ev[i].data.fd;

                        if (bench_transfer(fd, buf, MSG_BYTES, false) < 0) {
                                epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                                close(fd);
                                open--;
                                continue;
                        }
                        if (e)
                                sortd_engine_sort(e, &d, buf + HEAD_BYTES, NULL, 1024);
                        if (bench_transfer(fd, buf, MSG_BYTES, true) < 0)
                                return 1;
                }
        }
        sortd_engine_destroy(e);
        return 0;
}

typedef struct floor_client {
        pthread_t th;
        int fd;
        double deadline, *lat;
        size_t count, cap;
        bool failed;
} floor_client;

static void *client_main(void *arg)
{
        floor_client *fc = arg;
        _Alignas(8) uint8_t req[MSG_BYTES], rep[MSG_BYTES];

        datagen_fill(req + HEAD_BYTES, 1024, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, (uint64_t)fc->fd);
        while (bench_now() < fc->deadline) {
                double t0 = bench_now();

                if (bench_transfer(fc->fd, req, MSG_BYTES, true) < 0 ||
                    bench_transfer(fc->fd, rep, MSG_BYTES, false) < 0) {
                        fc->failed = true;
                        break;
                }
                if (fc->count == fc->cap) {
                        fc->cap = fc->cap ? fc->cap * 2 : 4096;
                        fc->lat = realloc(fc->lat, fc->cap * sizeof(double));
                }
                fc->lat[fc->count++] = bench_now() - t0;
        }
        close(fc->fd);
        return NULL;
}

int bench_small_floor(int clients, bool sort, double seconds, bench_rate *out)
{
        floor_client fc[MAX_CLIENTS] = {{0}};
        double *lat[MAX_CLIENTS];
        size_t counts[MAX_CLIENTS];
        int theirs[MAX_CLIENTS], status = 1;
        double t0, deadline = bench_now() + seconds;
        bool failed = false;
        pid_t pid;

        if (clients < 1 || clients > MAX_CLIENTS)
                return -1;
        for (int i = 0; i < clients; i++) {
                int sv[2];

                if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
                        while (i-- > 0) {
                                close(fc[i].fd);
                                close(theirs[i]);
                        }
                        return -1;
                }
                fc[i] = (floor_client){.fd = sv[0], .deadline = deadline};
                theirs[i] = sv[1];
        }
        pid = fork();
        if (pid == 0) {
                for (int i = 0; i < clients; i++)
                        close(fc[i].fd);
                _exit(serve(theirs, clients, sort));
        }
        for (int i = 0; i < clients; i++)
                close(theirs[i]);
        t0 = bench_now();
        for (int i = 0; i < clients && pid > 0; i++)
                pthread_create(&fc[i].th, NULL, client_main, &fc[i]);
        for (int i = 0; i < clients && pid > 0; i++)
                pthread_join(fc[i].th, NULL);
        if (pid > 0)
                waitpid(pid, &status, 0);
        else
                for (int i = 0; i < clients; i++)
                        close(fc[i].fd);
        for (int i = 0; i < clients; i++) {
                failed |= fc[i].failed;
                lat[i] = fc[i].lat;
                counts[i] = fc[i].count;
        }
        bench_rate_of(lat, counts, clients, bench_now() - t0, out);
        for (int i = 0; i < clients; i++)
                free(fc[i].lat);
        return failed || pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ? -1 : 0;
}
