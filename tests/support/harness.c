/* See harness.h. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *sortd_bin(void)
{
        const char *b = getenv("SORTD_BIN");

        ck_assert_msg(b && *b, "SORTD_BIN is not set (run under meson test)");
        return b;
}

/* SORTD_TEST_START_SECONDS, default 30: a GPU engine self-checks first, and an emulated one
   (tests/support/fake_cuda) under a sanitizer takes minutes. */
static int start_seconds(void)
{
        const char *v = getenv("SORTD_TEST_START_SECONDS");
        int s = v ? atoi(v) : 0;

        return s > 0 ? s : 30;
}

/*
 * A connection to d, with a ping sent on it; -1 while nothing listens. A connection alone is
 * no sign of a serving daemon: the socket listens from before the engine is made, and
 * clients wait in its backlog until the loop runs (as under socket activation).
 */
static int connect_and_ping(const daemon_proc *d)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Ping ping = SORTD__WIRE__PING__INIT;
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        uint8_t frame[64];
        size_t len;

        strcpy(sa.sun_path, d->sock);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                close(fd);
                return -1;
        }
        req.id = 1;
        req.body_case = SORTD__WIRE__REQUEST__BODY_PING;
        req.ping = &ping;
        len = raw_pack_request(&req, 0, frame, sizeof(frame));
        /* A daemon that died meanwhile is wait_ready's to report: no SIGPIPE, no check here. */
        (void)!send(fd, frame, len, MSG_NOSIGNAL);
        return fd;
}

/* Waits until d answers on its socket: a reply (a refusal, by allow-uid, too), or a close. */
static void wait_ready(daemon_proc *d)
{
        int fd = -1;

        for (int i = 0, end = start_seconds() * 100; i < end; i++) {
                struct pollfd pf = {.events = POLLIN};
                int status;

                if (fd < 0)
                        fd = connect_and_ping(d);
                pf.fd = fd;
                if (fd >= 0 && poll(&pf, 1, 0) == 1) {
                        close(fd);
                        return;
                }
                ck_assert_msg(waitpid(d->pid, &status, WNOHANG) == 0,
                              "sortd exited during start-up (log: %s)", d->log);
                usleep(10000);
        }
        if (fd >= 0)
                close(fd);
        /* Not left running: it would hold the test's output open, and meson would wait on it. */
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        ck_abort_msg("sortd did not come up on %s in %d s", d->sock, start_seconds());
}

/*
 * SORTD_TEST_WRAPPER: a command the daemon runs under, its words split at spaces (scripts/test
 * runs the end-to-end tests with valgrind there). Appends them to argv at *n, at most 16.
 */
static void add_wrapper(const char **argv, int *n, char *buf, size_t len)
{
        const char *w = getenv("SORTD_TEST_WRAPPER");
        int words = 0;

        if (!w || !*w)
                return;
        ck_assert_msg(strlen(w) < len, "SORTD_TEST_WRAPPER is too long");
        strcpy(buf, w);
        for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                ck_assert_msg(++words <= 16, "SORTD_TEST_WRAPPER has over 16 words");
                argv[(*n)++] = t;
        }
}

static void spawn(daemon_proc *d, const char *const *pre, const char *const *extra)
{
        const char *argv[64];
        char wrapper[1024];
        int n = 0;

        snprintf(d->sock, sizeof(d->sock), "%s/sortd.sock", d->dir);
        snprintf(d->log, sizeof(d->log), "%s/sortd.log", d->dir);
        for (; pre && *pre; pre++)
                argv[n++] = *pre;
        add_wrapper(argv, &n, wrapper, sizeof(wrapper));
        argv[n++] = sortd_bin();
        argv[n++] = "--socket";
        argv[n++] = d->sock;
        argv[n++] = "--engine";
        argv[n++] = "cpu";
        argv[n++] = "--capacity";
        argv[n++] = "1M";
        argv[n++] = "--threads";
        argv[n++] = "2";
        argv[n++] = "--log-level";
        argv[n++] = getenv("SORTD_TEST_LOG") ? getenv("SORTD_TEST_LOG") : "warning";
        for (; extra && *extra && n < 62; extra++)
                argv[n++] = *extra;
        argv[n] = NULL;
        d->pid = fork();
        ck_assert_int_ge(d->pid, 0);
        if (d->pid == 0) {
                FILE *f = freopen(d->log, "w", stderr);

                (void)f;
                unsetenv("LISTEN_FDS");
                unsetenv("LISTEN_PID");
                unsetenv("NOTIFY_SOCKET");
                unsetenv("WATCHDOG_USEC");
                unsetenv("WATCHDOG_PID");
                if (d->notify_socket)
                        setenv("NOTIFY_SOCKET", d->notify_socket, 1);
                if (d->watchdog_usec)
                        setenv("WATCHDOG_USEC", d->watchdog_usec, 1);
                execvp(argv[0], (char *const *)argv);
                _exit(127);
        }
}

static void make_dir(daemon_proc *d)
{
        strcpy(d->dir, "/tmp/sortd-test-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(d->dir));
}

void daemon_spawn(daemon_proc *d, const char *const *extra)
{
        make_dir(d);
        spawn(d, NULL, extra);
}

void daemon_wait_ready(daemon_proc *d)
{
        wait_ready(d);
}

void daemon_start(daemon_proc *d, const char *const *extra)
{
        daemon_spawn(d, extra);
        wait_ready(d);
}

void daemon_start_in(daemon_proc *d, const char *const *extra)
{
        spawn(d, NULL, extra);
        wait_ready(d);
}

void daemon_start_activated(daemon_proc *d, const char *const *extra)
{
        static char listen_arg[160];
        const char *pre[] = {"systemd-socket-activate", "-l", listen_arg, NULL};

        make_dir(d);
        snprintf(listen_arg, sizeof(listen_arg), "%s/sortd.sock", d->dir);
        /* sortd also gets --socket d->sock; the passed socket must win over binding it. */
        spawn(d, pre, extra);
        ck_assert_str_eq(d->sock, listen_arg);
        wait_ready(d);
}

int daemon_alive(const daemon_proc *d)
{
        char path[64], buf[256], *p;
        FILE *f;
        size_t n;

        /* Not waitpid: the daemon may be a child of another process (Check's fixture). */
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)d->pid);
        f = fopen(path, "r");
        if (!f)
                return 0;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        p = strrchr(buf, ')');
        return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

int daemon_stop(daemon_proc *d, int sig)
{
        int status = 0;

        kill(d->pid, sig);
        for (int i = 0; i < 3000; i++) {
                pid_t r = waitpid(d->pid, &status, WNOHANG);

                if (r == d->pid)
                        break;
                if (i == 2999) {
                        kill(d->pid, SIGKILL);
                        waitpid(d->pid, &status, 0);
                        ck_abort_msg("sortd did not exit within 30 s of signal %d", sig);
                }
                usleep(10000);
        }
        d->socket_left = access(d->sock, F_OK) == 0;
        unlink(d->sock);
        if (!getenv("SORTD_TEST_KEEP")) {
                unlink(d->log);
                rmdir(d->dir);
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void daemon_log(const daemon_proc *d, char *buf, size_t len)
{
        FILE *f = fopen(d->log, "r");
        size_t n;

        ck_assert_msg(f, "cannot open %s", d->log);
        n = fread(buf, 1, len - 1, f);
        buf[n] = '\0';
        fclose(f);
}

long daemon_rss_kib(const daemon_proc *d)
{
        char path[64], line[256];
        long kib = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)d->pid);
        f = fopen(path, "r");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
                        break;
        fclose(f);
        return kib;
}

sortd_conn *client_open(const daemon_proc *d)
{
        /* libsortd's default: a call that moves tens of MiB through a daemon under
           ThreadSanitizer, beside other tests on 2 cores, has taken over 20 s */
        sortd_connect_options o = {.client_name = "test", .timeout_ms = 60000};
        sortd_conn *c = NULL;
        char err[256];
        sortd_status s = sortd_connect(d->sock, &o, &c, err, sizeof(err));

        ck_assert_msg(s == SORTD_OK, "connect: %s: %s", sortd_strerror(s), err);
        return c;
}

int raw_connect(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        strcpy(sa.sun_path, path);
        ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        return fd;
}

void raw_send_bytes(int fd, const void *p, size_t len)
{
        const char *c = p;

        while (len) {
                ssize_t w = send(fd, c, len, MSG_NOSIGNAL);

                if (w < 0 && errno == EINTR)
                        continue;
                ck_assert_msg(w > 0, "send: %s", strerror(errno));
                c += w;
                len -= (size_t)w;
        }
}

void raw_send_frame(int fd, uint32_t magic, uint16_t version, uint32_t mlen, uint64_t plen,
                    const void *msg, size_t len)
{
        sortd__wire_header h = {magic, version, 0, mlen, plen};
        uint8_t hdr[SORTD__WIRE_HEADER_SIZE];

        sortd__wire_header_pack(&h, hdr);
        raw_send_bytes(fd, hdr, sizeof(hdr));
        if (len)
                raw_send_bytes(fd, msg, len);
}

void raw_send_request(int fd, const Sortd__Wire__Request *req, uint64_t plen)
{
        uint8_t buf[4096];
        size_t len = sortd__wire__request__pack(req, buf);

        raw_send_frame(fd, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, (uint32_t)len, plen, buf, len);
}

size_t raw_pack_request(const Sortd__Wire__Request *req, uint64_t plen, uint8_t *buf, size_t cap)
{
        size_t len = sortd__wire__request__get_packed_size(req);
        sortd__wire_header h = {SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, (uint32_t)len, plen};

        ck_assert_uint_le(SORTD__WIRE_HEADER_SIZE + len, cap);
        sortd__wire_header_pack(&h, buf);
        sortd__wire__request__pack(req, buf + SORTD__WIRE_HEADER_SIZE);
        return SORTD__WIRE_HEADER_SIZE + len;
}

/* One sendmsg of iov's bytes with nfds (at most 8) fds: what it returned. */
static ssize_t send_fds(int fd, struct iovec *iov, size_t iovlen, const int *fds, unsigned nfds)
{
        union {
                char buf[CMSG_SPACE(8 * sizeof(int))];
                struct cmsghdr align;
        } control;
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = iovlen};
        struct cmsghdr *cm;

        ck_assert_uint_le(nfds, 8);
        if (nfds) {
                memset(&control, 0, sizeof(control));
                msg.msg_control = control.buf;
                msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
                cm = CMSG_FIRSTHDR(&msg);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
                memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
        }
        return sendmsg(fd, &msg, MSG_NOSIGNAL);
}

void raw_send_request_fds_then(int fd, const Sortd__Wire__Request *req, const int *fds,
                               unsigned nfds, const void *more, size_t more_len)
{
        uint8_t buf[SORTD__WIRE_HEADER_SIZE + 4096];
        struct iovec iov[2] = {{.iov_base = buf}, {.iov_base = (void *)more, .iov_len = more_len}};

        iov[0].iov_len = raw_pack_request(req, 0, buf, sizeof(buf));
        /* This little goes in one sendmsg: the fds ride on its first byte. */
        ck_assert_int_eq(send_fds(fd, iov, more_len ? 2 : 1, fds, nfds),
                         (ssize_t)(iov[0].iov_len + more_len));
}

ssize_t raw_send_bytes_fds(int fd, const void *p, size_t len, const int *fds, unsigned nfds)
{
        struct iovec iov = {.iov_base = (void *)p, .iov_len = len};

        return send_fds(fd, &iov, 1, fds, nfds);
}

void raw_send_request_fds(int fd, const Sortd__Wire__Request *req, const int *fds, unsigned nfds)
{
        raw_send_request_fds_then(fd, req, fds, nfds, NULL, 0);
}

int daemon_fd_count(const daemon_proc *d)
{
        char path[64];
        DIR *dir;
        int n = 0;

        snprintf(path, sizeof(path), "/proc/%d/fd", (int)d->pid);
        dir = opendir(path);
        ck_assert_ptr_nonnull(dir);
        while (readdir(dir))
                n++;
        closedir(dir);
        return n - 2; /* . and .. */
}

int daemon_maps_matching(const daemon_proc *d, const char *text)
{
        char path[64], line[512];
        FILE *f;
        int n = 0;

        snprintf(path, sizeof(path), "/proc/%d/maps", (int)d->pid);
        f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f))
                n += strstr(line, text) != NULL;
        fclose(f);
        return n;
}

/* 1 = all read, 0 = EOF before any byte. */
static int read_full(int fd, void *p, size_t len)
{
        char *c = p;
        size_t got = 0;

        while (got < len) {
                struct pollfd pf = {.fd = fd, .events = POLLIN};
                ssize_t r;

                ck_assert_msg(poll(&pf, 1, 10000) == 1, "no reply within 10 s");
                r = recv(fd, c + got, len - got, 0);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0 && got == 0)
                        return 0;
                ck_assert_msg(r > 0, "connection closed in the middle of a reply");
                got += (size_t)r;
        }
        return 1;
}

Sortd__Wire__Reply *raw_recv_reply(int fd, uint64_t *plen)
{
        uint8_t hdr[SORTD__WIRE_HEADER_SIZE], msg[SORTD__WIRE_MAX_MESSAGE];
        sortd__wire_header h;
        Sortd__Wire__Reply *r;
        char why[160];

        if (!read_full(fd, hdr, sizeof(hdr)))
                return NULL;
        sortd__wire_header_unpack(hdr, &h);
        ck_assert_msg(sortd__wire_header_check(&h, SORTD__WIRE_MAX_MESSAGE, why, sizeof(why)) ==
                              SORTD_OK,
                      "bad reply header: %s", why);
        ck_assert(read_full(fd, msg, h.message_len));
        r = sortd__wire__reply__unpack(NULL, h.message_len, msg);
        ck_assert_ptr_nonnull(r);
        if (plen)
                *plen = h.payload_len;
        return r;
}

void raw_recv_bytes(int fd, void *buf, size_t len)
{
        ck_assert(read_full(fd, buf, len));
}

void raw_skip(int fd, uint64_t n)
{
        char buf[65536];

        while (n) {
                size_t k = n < sizeof(buf) ? (size_t)n : sizeof(buf);

                ck_assert(read_full(fd, buf, k));
                n -= k;
        }
}

int raw_wait_eof(int fd, int timeout_ms)
{
        char buf[4096];

        for (;;) {
                struct pollfd pf = {.fd = fd, .events = POLLIN};
                ssize_t r;

                if (poll(&pf, 1, timeout_ms) != 1)
                        return 0;
                r = recv(fd, buf, sizeof(buf), 0);
                if (r == 0 || (r < 0 && errno == ECONNRESET))
                        return 1;
                if (r < 0 && errno != EINTR)
                        return 0;
        }
}

sortd_server_status status_of(const daemon_proc *d)
{
        sortd_conn *c = client_open(d);
        sortd_server_status st;

        ck_assert_int_eq(sortd_query_status(c, &st), SORTD_OK);
        sortd_close(c);
        return st;
}

void raw_expect_reply(int fd, uint64_t id, sortd_status s, const char *text)
{
        uint64_t plen;
        Sortd__Wire__Reply *r = raw_recv_reply(fd, &plen);

        ck_assert_msg(r, "connection closed instead of a reply");
        ck_assert_uint_eq(r->id, id);
        ck_assert_msg((int)r->status == (int)s, "status %d, expected %d (%s)", r->status, s,
                      r->error);
        ck_assert_uint_eq(plen, 0);
        if (text)
                ck_assert_msg(strstr(r->error, text), "'%s' lacks '%s'", r->error, text);
        sortd__wire__reply__free_unpacked(r, NULL);
}

void raw_send_ping(int fd, uint64_t id)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Ping ping = SORTD__WIRE__PING__INIT;

        req.id = id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_PING;
        req.ping = &ping;
        raw_send_request(fd, &req, 0);
}

/* The stream is still in sync: a ping is answered. */
void raw_expect_in_sync(int fd)
{
        raw_send_ping(fd, 77);
        raw_expect_reply(fd, 77, SORTD_OK, NULL);
}

int raw_sealed_memfd(uint64_t bytes)
{
        int mfd = memfd_create("sortd-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

        ck_assert_int_ge(mfd, 0);
        ck_assert_int_eq(ftruncate(mfd, (off_t)bytes), 0);
        ck_assert_int_eq(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
        return mfd;
}

uint64_t raw_register_region(int fd, Sortd__Wire__RegisterRegion *reg, const int *fds,
                             unsigned nfds, uint64_t req_id)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Reply *r;
        uint64_t id;

        req.id = req_id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_REGISTER_REGION;
        req.register_region = reg;
        raw_send_request_fds(fd, &req, fds, nfds);
        r = raw_recv_reply(fd, NULL);
        ck_assert_ptr_nonnull(r);
        ck_assert_msg(r->status == SORTD__WIRE__STATUS_CODE__OK, "%s", r->error);
        id = r->register_region->region_id;
        sortd__wire__reply__free_unpacked(r, NULL);
        return id;
}

uint64_t raw_register_memfd(int fd, int mfd, uint64_t bytes, uint64_t req_id)
{
        Sortd__Wire__RegisterRegion reg = SORTD__WIRE__REGISTER_REGION__INIT;

        reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__MEMFD;
        reg.size = bytes;
        return raw_register_region(fd, &reg, &mfd, 1, req_id);
}

Sortd__Wire__Sort raw_sort_msg(int key_type, int payload, uint64_t n)
{
        static Sortd__Wire__InlineData inl = SORTD__WIRE__INLINE_DATA__INIT;
        Sortd__Wire__Sort s = SORTD__WIRE__SORT__INIT;

        s.key_type = key_type;
        s.payload = payload;
        s.n = n;
        s.data_case = SORTD__WIRE__SORT__DATA_INLINE_DATA;
        s.inline_data = &inl;
        return s;
}

void raw_send_sort(int fd, uint64_t id, Sortd__Wire__Sort *s, uint64_t plen)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;

        req.id = id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_SORT;
        req.sort = s;
        raw_send_request(fd, &req, plen);
}

pid_t raw_spawn_unread_sorts(const char *sock, int key_type, int payload, uint64_t n, uint64_t plen,
                             int sorts)
{
        pid_t child = fork();

        ck_assert_int_ge(child, 0);
        if (child == 0) {
                int fd = raw_connect(sock);
                Sortd__Wire__Sort s = raw_sort_msg(key_type, payload, n);

                for (int r = 0; r < sorts; r++) {
                        raw_send_sort(fd, (uint64_t)r + 1, &s, plen);
                        raw_send_zeros(fd, plen);
                }
                pause(); /* to be killed: its connection stays open */
                _exit(0);
        }
        return child;
}

void raw_send_zeros(int fd, size_t n)
{
        static const char zeros[65536];

        while (n) {
                size_t k = n < sizeof(zeros) ? n : sizeof(zeros);

                raw_send_bytes(fd, zeros, k);
                n -= k;
        }
}
