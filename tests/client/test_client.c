/*
 * libsortd against a daemon, and without one: its own checks refuse bad calls before anything
 * is sent, signals do not break its waits, a silent listener times out, and a daemon that dies
 * leaves a clear, lasting error. Against a stand-in daemon (fake_sortd.c) that sends one bad
 * reply: each is refused as a protocol error that says what was wrong and breaks the
 * connection for good, and a timeout set on an open connection holds.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_sortd.h"
#include "harness.h"

/* A call refused by the client itself: SORTD_E_INVAL, and a message holding words. */
static void refused(sortd_conn *c, sortd_status s, const char *words)
{
        ck_assert_int_eq(s, SORTD_E_INVAL);
        ck_assert_msg(strstr(sortd_error_message(c), words), "'%s' lacks '%s'",
                      sortd_error_message(c), words);
}

/* Bad calls are refused in the client: nothing reaches the daemon, and the connection lives. */
START_TEST(client_validation)
{
        sortd_conn *c;
        sortd_sort_options bad_bits = {SORTD_ASCENDING, 8, 8};
        uint32_t keys[4] = {3, 1, 2, 0}, vals[4];
        uint64_t before;
        char *p = (char *)keys;
        daemon_proc d = {0};

        daemon_start(&d, NULL);
        c = client_open(&d);
        before = status_of(&d).requests_total;
        ck_assert_int_eq(sortd_sort(c, NULL, 4, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort(c, p + 1, 2, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort(c, keys, 4, (sortd_key_type)99, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort(c, keys, 4, SORTD_KEY_U32, &bad_bits), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort_pairs(c, keys, vals, 3, 4, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort_pairs(c, keys, NULL, 4, 4, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_argsort(c, keys, vals, 2, 4, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort(c, keys, (1u << 20) + 1, SORTD_KEY_U32, NULL),
                         SORTD_E_CAPACITY);
        ck_assert_ptr_nonnull(strstr(sortd_error_message(c), "capacity"));
        ck_assert_int_eq(sortd_receive(c, &(sortd_request){0}), SORTD_E_INVAL);
        /* Nothing reached the daemon, and the connection still works. */
        ck_assert_uint_eq(status_of(&d).requests_total, before + 2); /* hello, status */
        ck_assert_int_eq(sortd_argsort(c, keys, vals, 4, 4, SORTD_KEY_U32, NULL), SORTD_OK);
        ck_assert_uint_eq(keys[0], 0);
        ck_assert_uint_eq(vals[0], 3);
        ck_assert_int_eq(sortd_sort(NULL, keys, 4, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        refused(c, sortd_sort_pairs(c, keys, vals, 0, 4, SORTD_KEY_U32, NULL),
                "val_size must be 4 or 8");
        refused(c, sortd_argsort(c, keys, vals, 0, 4, SORTD_KEY_U32, NULL),
                "idx_size must be 4 or 8");
        refused(c, sortd_query_status(c, NULL), "st must not be NULL");
        /* While a submitted sort is unanswered, a call would read its reply as its own. */
        {
                sortd_request r = {.keys = keys, .n = 4, .key_type = SORTD_KEY_U32};
                sortd_region *rg = NULL;

                ck_assert_int_eq(sortd_region_create(c, 4096, &rg), SORTD_OK);
                ck_assert_int_eq(sortd_submit(c, &r), SORTD_OK);
                refused(c, sortd_ping(c), "1 submitted sorts not yet received");
                refused(c, sortd_region_destroy(c, rg), "1 submitted sorts not yet received");
                ck_assert_int_eq(sortd_receive(c, &r), SORTD_OK);
                ck_assert_int_eq(sortd_ping(c), SORTD_OK);
                ck_assert_int_eq(sortd_region_destroy(c, rg), SORTD_OK);
        }
        sortd_close(c);
        sortd_close(NULL);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* sortd_connect's own checks: where the result goes, and a path no socket address holds. */
START_TEST(connect_validation)
{
        char path[200], err[256];
        sortd_conn *c = NULL;

        memset(path, 'x', sizeof(path) - 1);
        path[0] = '/';
        path[sizeof(path) - 1] = '\0';
        ck_assert_int_eq(sortd_connect(path, NULL, &c, err, sizeof(err)), SORTD_E_INVAL);
        ck_assert_ptr_null(c);
        ck_assert_msg(strstr(err, "socket path too long"), "%s", err);
        ck_assert_int_eq(sortd_connect("/tmp/x.sock", NULL, NULL, err, sizeof(err)), SORTD_E_INVAL);
        ck_assert_msg(strstr(err, "out must not be NULL"), "%s", err);
}
END_TEST

static void never_called(void *user, sortd_progress_phase phase, uint64_t done, uint64_t total)
{
        ck_abort_msg("a progress callback on no connection");
}

/* No connection (NULL, as a failed sortd_connect leaves it): every call taking one accepts it,
   as sortd.h says. The setters and sortd_close do nothing; every other call is refused. */
START_TEST(null_connection)
{
        sortd_request r = {0};
        sortd_region_sort rs = {0};
        sortd_region *rg = NULL;
        sortd_info info;
        sortd_server_status st;
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES] = {0}, uuid[SORTD_DEVICE_UUID_BYTES] = {0};
        uint32_t keys[1] = {0};

        sortd_set_timeout(NULL, 150);
        sortd_set_progress(NULL, never_called, NULL);
        sortd_set_progress(NULL, NULL, NULL);
        memset(&info, 0x5a, sizeof(info));
        sortd_get_info(NULL, &info);
        ck_assert_uint_eq(info.capacity, 0x5a5a5a5a5a5a5a5aull); /* untouched */
        ck_assert_str_eq(sortd_error_message(NULL), "no connection");
        ck_assert_int_eq(sortd_hello(NULL, &info), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_ping(NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_query_status(NULL, &st), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort(NULL, keys, 1, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort_pairs(NULL, keys, keys, 4, 1, SORTD_KEY_U32, NULL),
                         SORTD_E_INVAL);
        ck_assert_int_eq(sortd_argsort(NULL, keys, keys, 4, 1, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_submit(NULL, &r), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_receive(NULL, &r), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_region_create(NULL, 4096, &rg), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_region_register_cuda(NULL, handle, 0, 4096, uuid, &rg),
                         SORTD_E_INVAL);
        ck_assert_ptr_null(rg);
        ck_assert_int_eq(sortd_sort_in_region(NULL, &rs), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_region_destroy(NULL, NULL), SORTD_OK);
        sortd_close(NULL);
}
END_TEST

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
        alarms++;
}

/* Signals every 200 us (no SA_RESTART) interrupt the client's waits: every call still works. */
START_TEST(client_eintr)
{
        struct sigaction sa = {.sa_handler = on_alarm}; /* sa_flags = 0: no SA_RESTART */
        struct itimerval it = {{0, 200}, {0, 200}};
        size_t n = 1u << 20;
        uint64_t *keys = xmalloc(n * 8), *vals = xmalloc(n * 8);
        sortd_conn *c;
        daemon_proc d = {0};

        daemon_start(&d, NULL);
        c = client_open(&d);
        sigaction(SIGALRM, &sa, NULL);
        setitimer(ITIMER_REAL, &it, NULL);
        for (int round = 0; round < 3; round++) {
                for (size_t i = 0; i < n; i++) {
                        keys[i] = (n - i) * 0x9e3779b97f4a7c15ull;
                        vals[i] = i;
                }
                ck_assert_msg(sortd_sort_pairs(c, keys, vals, 8, n, SORTD_KEY_U64, NULL) ==
                                      SORTD_OK,
                              "%s", sortd_error_message(c));
                check_sorted_u64(keys, n);
                ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        }
        memset(&it, 0, sizeof(it));
        setitimer(ITIMER_REAL, &it, NULL);
        ck_assert_int_gt(alarms, 10);
        sortd_close(c);
        free(keys);
        free(vals);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A listener that never answers: connect's Hello times out instead of hanging. */
START_TEST(client_timeout)
{
        char dir[] = "/tmp/sortd-test-XXXXXX", path[128], err[256];
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        sortd_connect_options o = {.timeout_ms = 200};
        sortd_conn *c = NULL;
        int64_t t0;
        int fd;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/mute.sock", dir);
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(fd, 4), 0);
        t0 = now_ms();
        ck_assert_int_eq(sortd_connect(path, &o, &c, err, sizeof(err)), SORTD_E_TIMEOUT);
        ck_assert_int_lt(now_ms() - t0, 2000);
        ck_assert_ptr_null(c);
        ck_assert_msg(strstr(err, "200 ms"), "%s", err);
        close(fd);
        unlink(path);
        rmdir(dir);
        /* Nobody there at all. */
        ck_assert_int_eq(sortd_connect(path, &o, &c, err, sizeof(err)), SORTD_E_IO);
}
END_TEST

/* The daemon dies under a client: a clear error, no hang, then the connection stays broken. */
START_TEST(daemon_goes_away)
{
        uint32_t keys[100] = {0};
        sortd_conn *c;
        daemon_proc d = {0};
        sortd_status s;

        daemon_start(&d, NULL);
        c = client_open(&d);
        ck_assert_int_eq(daemon_stop(&d, SIGKILL), -1);
        s = sortd_sort(c, keys, 100, SORTD_KEY_U32, NULL);
        ck_assert_int_eq(s, SORTD_E_IO);
        ck_assert_msg(*sortd_error_message(c), "no message");
        ck_assert_int_eq(sortd_ping(c), SORTD_E_IO);
        sortd_close(c);
}
END_TEST

/* A fork's child that closes its parent's connection sends nothing: the parent's connection
   and region serve on (sortd.h). */
START_TEST(child_closes_the_parents_connection)
{
        daemon_proc d = {0};
        sortd_conn *c;
        sortd_region *r = NULL;
        uint32_t *keys;
        int status;
        pid_t pid;

        daemon_start(&d, NULL);
        c = client_open(&d);
        ck_assert_int_eq(sortd_region_create(c, 4096, &r), SORTD_OK);
        keys = sortd_region_data(r);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sortd_close(c);
                _exit(0);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        for (uint32_t i = 0; i < 1024; i++)
                keys[i] = 1023 - i;
        ck_assert_int_eq(
                sortd_sort_in_region(
                        c, &(sortd_region_sort){.keys = r, .n = 1024, .key_type = SORTD_KEY_U32}),
                SORTD_OK);
        for (uint32_t i = 0; i < 1024; i++)
                ck_assert_uint_eq(keys[i], i);
        ck_assert_uint_eq(status_of(&d).regions, 1);
        ck_assert_int_eq(sortd_region_destroy(c, r), SORTD_OK);
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* This process's open fds, counted as the harness counts a daemon's. */
static int own_fd_count(void)
{
        return daemon_fd_count(&(daemon_proc){.pid = getpid()});
}

/* n = 0: the fake's SortReply carries no payload, which is then right for an inline sort, so
   the fault is the only thing wrong with the reply. */
static sortd_status sort_none(sortd_conn *c)
{
        uint32_t keys[1] = {0};

        return sortd_sort(c, keys, 0, SORTD_KEY_U32, NULL);
}

/* Each bad reply, the call that draws it, and what the client's message must say. */
static const struct bad_reply {
        fake_fault fault;
        sortd_status (*call)(sortd_conn *c);
        const char *words;
} bad_replies[] = {
        {FAKE_FAULT_WRONG_ID, sortd_ping, "reply to request 3 while waiting for 2"},
        {FAKE_FAULT_WRONG_KIND, sortd_ping, "reply of the wrong kind"},
        {FAKE_FAULT_NONCE, sortd_ping, "ping answered with another nonce"},
        {FAKE_FAULT_GARBAGE, sortd_ping, "unparsable reply from sortd"},
        {FAKE_FAULT_BAD_MAGIC, sortd_ping, "bad reply frame: bad frame magic"},
        {FAKE_FAULT_HUGE_MESSAGE, sortd_ping, "bad reply frame: message length 65537"},
        {FAKE_FAULT_PAYLOAD, sortd_ping, "unexpected payload in a reply"},
        {FAKE_FAULT_SORT_N, sort_none, "sort reply does not match the request"},
        {FAKE_FAULT_ERROR_PAYLOAD, sort_none, "error reply with a payload"},
        /* The daemon's own refusals that say the two sides disagree about the protocol. */
        {FAKE_FAULT_REFUSE_PROTOCOL, sortd_ping, "the fake could not parse the request"},
        {FAKE_FAULT_UNKNOWN_STATUS, sort_none, "a status from a newer sortd"},
};

#define N_BAD_REPLIES ((int)(sizeof(bad_replies) / sizeof(bad_replies[0])))

/* A connection to f, which is to send fault; Hello is answered right. */
static sortd_conn *connect_fake(fake_sortd *f, fake_fault fault)
{
        sortd_conn *c = NULL;
        char err[256];

        fake_start(f);
        f->fault = fault;
        ck_assert_msg(sortd_connect(f->sock, NULL, &c, err, sizeof(err)) == SORTD_OK, "%s", err);
        return c;
}

/*
 * After a call failed with s and a message with words in it: the next call fails the same way
 * and sends nothing (the fake saw Hello and the bad call only), and everything closes.
 */
static void stays_broken(sortd_conn *c, fake_sortd *f, sortd_status s, const char *words)
{
        ck_assert_int_eq(sortd_ping(c), s);
        ck_assert_msg(strstr(sortd_error_message(c), words), "'%s' lacks '%s'",
                      sortd_error_message(c), words);
        sortd_close(c);
        fake_stop(f); /* joins the fake: it ends when the client closes */
        ck_assert_uint_eq(f->frames, 2);
}

/* A bad reply is a protocol error that names what was wrong, and the connection stays broken. */
START_TEST(client_bad_reply)
{
        const struct bad_reply *b = &bad_replies[_i];
        int fds = own_fd_count();
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, b->fault);

        ck_assert_int_eq(b->call(c), SORTD_E_PROTOCOL);
        ck_assert_msg(strstr(sortd_error_message(c), b->words), "'%s' lacks '%s'",
                      sortd_error_message(c), b->words);
        stays_broken(c, &f, SORTD_E_PROTOCOL, b->words);
        ck_assert_int_eq(own_fd_count(), fds);
}
END_TEST

/* A timeout set on an open connection holds: a Ping never answered ends after 150 ms, not the
   default 60 s, and the connection stays broken. */
START_TEST(client_set_timeout)
{
        int fds = own_fd_count();
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, FAKE_FAULT_SILENT);
        int64_t t0, took;

        sortd_set_timeout(NULL, 150); /* ignored */
        sortd_set_timeout(c, 150);
        t0 = now_ms();
        ck_assert_int_eq(sortd_ping(c), SORTD_E_TIMEOUT);
        took = now_ms() - t0;
        ck_assert_int_ge(took, 140);
        ck_assert_int_lt(took, 2000);
        ck_assert_msg(strstr(sortd_error_message(c), "within 150 ms"), "%s",
                      sortd_error_message(c));
        stays_broken(c, &f, SORTD_E_TIMEOUT, "within 150 ms");
        ck_assert_int_eq(own_fd_count(), fds);
}
END_TEST

/* 16 MiB of keys and values, more than the socket holds: a request a daemon that does not read
   keeps the client sending. Free its keys and vals. */
static sortd_request big_request(void)
{
        size_t n = 1u << 20;
        sortd_request r = {.keys = calloc(n, 8),
                           .vals = calloc(n, 8),
                           .n = n,
                           .key_type = SORTD_KEY_U64,
                           .payload = SORTD_PAYLOAD_VALUES64};

        ck_assert(r.keys && r.vals);
        return r;
}

/* A blocking sort is one call: its timeout covers the sending and the wait for the reply
   together, in sortd_sort and its kin (_i = 0) and in sortd_sort_request (_i = 1). A daemon
   slow to take the request, then silent, ends it after 1 s, not after the time the sending
   took plus 1 s. */
START_TEST(client_sort_one_deadline)
{
        sortd_request r = big_request();
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, FAKE_FAULT_SLOW_SILENT);
        int64_t t0, took;

        sortd_set_timeout(c, 1000);
        t0 = now_ms();
        ck_assert_int_eq(_i ? sortd_sort_request(c, &r)
                            : sortd_sort_pairs(c, r.keys, r.vals, 8, r.n, SORTD_KEY_U64, NULL),
                         SORTD_E_TIMEOUT);
        took = now_ms() - t0;
        ck_assert_int_ge(took, 990);
        ck_assert_msg(took < 1400, "the sort took %lld ms for a timeout of 1000 ms",
                      (long long)took);
        sortd_close(c);
        fake_stop(&f);
        free(r.keys);
        free(r.vals);
}
END_TEST

/* A result cut off on its way says so: the caller's buffer holds part of it. */
START_TEST(client_result_cut)
{
        uint32_t keys[6] = {60, 50, 40, 30, 20, 10};
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, FAKE_FAULT_CUT_RESULT);

        ck_assert_int_eq(sortd_sort(c, keys, 6, SORTD_KEY_U32, NULL), SORTD_E_IO);
        ck_assert_msg(strstr(sortd_error_message(c), "while the sorted result arrived"), "%s",
                      sortd_error_message(c));
        ck_assert_uint_eq(keys[0], 0x5a5a5a5a); /* the 4 bytes that came */
        ck_assert_uint_eq(keys[1], 50);
        sortd_close(c);
        fake_stop(&f);
}
END_TEST

/* What a progress callback was told: how often, and how often done was past total. */
typedef struct progress_seen {
        unsigned calls, past_total;
        uint64_t done, total;
} progress_seen;

static void note_progress(void *user, sortd_progress_phase phase, uint64_t done, uint64_t total)
{
        progress_seen *seen = user;

        seen->calls++;
        if (done > total) {
                seen->past_total++;
                seen->done = done;
                seen->total = total;
        }
}

/* A daemon that hung up with a last word: the sort's first write fails, and the client reads
   why. Those bytes are the daemon's reply, not the request's arrays: progress never counts
   them, so it never goes past its total. */
START_TEST(client_progress_after_hang_up)
{
        uint32_t keys[2] = {2, 1};
        progress_seen seen = {0};
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, FAKE_FAULT_HANG_UP);

        fake_stop(&f); /* it has closed: nothing the client sends now arrives */
        sortd_set_progress(c, note_progress, &seen);
        ck_assert_int_eq(sortd_sort(c, keys, 2, SORTD_KEY_U32, NULL), SORTD_E_BUSY);
        ck_assert_msg(strstr(sortd_error_message(c), "hangs up on purpose"), "%s",
                      sortd_error_message(c));
        ck_assert_uint_ge(seen.calls, 1); /* done = 0 as the sending began */
        ck_assert_msg(seen.past_total == 0, "progress said %llu of %llu bytes",
                      (unsigned long long)seen.done, (unsigned long long)seen.total);
        sortd_close(c);
}
END_TEST

/* sortd_get_info: the last Hello's answer, kept by the connection. It sends nothing (the fake
   sees Hello and the Ping only), and leaves the connection's message as it was. */
START_TEST(client_get_info)
{
        sortd_info info, again;
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, FAKE_FAULT_NONE);

        sortd_get_info(c, &info);
        ck_assert_str_eq(info.server_version, "fake hello 1");
        ck_assert_str_eq(info.engine, "fake");
        ck_assert_uint_eq(info.capacity, 1u << 20);
        ck_assert_uint_eq(info.max_request_bytes, FAKE_MAX_REQUEST_BYTES);
        ck_assert_uint_eq(info.max_regions, FAKE_MAX_REGIONS);
        sortd_get_info(c, NULL);
        refused(c, sortd_query_status(c, NULL), "st must not be NULL");
        sortd_get_info(c, &info);
        ck_assert_str_eq(sortd_error_message(c), "st must not be NULL");
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        ck_assert_uint_eq(f.frames, 2); /* Hello, Ping */
        ck_assert_int_eq(sortd_hello(c, &again), SORTD_OK);
        sortd_get_info(c, &info);
        ck_assert_str_eq(info.server_version, "fake hello 2"); /* the last Hello's */
        ck_assert_str_eq(again.server_version, "fake hello 2");
        ck_assert_uint_eq(f.hellos, 2);
        sortd_close(c);
        fake_stop(&f);
}
END_TEST

/* The daemon's refusals that close the connection, and what the client must say of them. */
static const struct refusal {
        fake_fault fault;
        sortd_status s;
        const char *words;
} refusals[] = {
        {FAKE_FAULT_REFUSE_CLOSE, SORTD_E_CAPACITY, "closes rather than drain"},
        {FAKE_FAULT_GARBLED_CLOSE, SORTD_E_PROTOCOL, "cannot parse this stream"},
};

/*
 * The daemon refuses a request and closes while the client still sends its payload (_i = 0:
 * a refusal with the request's id; _i = 1: a last word, id 0, that it could not parse the
 * stream): the send fails, and the call returns the daemon's status and reason, not the
 * broken pipe. The connection is gone, so it stays broken with them.
 */
START_TEST(client_refused_while_sending)
{
        const struct refusal *x = &refusals[_i];
        sortd_request r = big_request();
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, x->fault);

        ck_assert_int_eq(sortd_sort_pairs(c, r.keys, r.vals, 8, r.n, SORTD_KEY_U64, NULL), x->s);
        ck_assert_msg(strstr(sortd_error_message(c), x->words), "%s", sortd_error_message(c));
        fake_stop(&f);
        ck_assert_uint_eq(f.frames, 2);
        ck_assert_int_eq(sortd_ping(c), x->s);
        ck_assert_msg(strstr(sortd_error_message(c), x->words), "%s", sortd_error_message(c));
        sortd_close(c);
        free(r.keys);
        free(r.vals);
}
END_TEST

/*
 * The same refusals behind the replies to sorts submitted before (sortd_submit), which the
 * daemon answers first, in order, before it closes: the submit that was cut short returns the
 * refusal and its reason, the earlier sorts are still received, whole (a region where their
 * buffers may lie stays until then), and then the connection stays broken with the refusal.
 */
START_TEST(client_refused_behind_replies)
{
        const struct refusal *x = &refusals[_i];
        uint32_t a[4] = {4, 3, 2, 1}, b[2] = {8, 7}, bv[2] = {80, 70};
        sortd_request ra = {.keys = a, .n = 4, .key_type = SORTD_KEY_U32};
        sortd_request rb = {.keys = b,
                            .vals = bv,
                            .n = 2,
                            .key_type = SORTD_KEY_U32,
                            .payload = SORTD_PAYLOAD_VALUES32};
        sortd_request rc = big_request();
        sortd_region *region = NULL;
        sortd_conn *c = NULL;
        char err[256];
        fake_sortd f;

        fake_start(&f);
        f.fault = x->fault;
        f.refuse_after = 3; /* RegisterRegion, ra, rb */
        ck_assert_msg(sortd_connect(f.sock, NULL, &c, err, sizeof(err)) == SORTD_OK, "%s", err);
        ck_assert_int_eq(sortd_region_create(c, 4096, &region), SORTD_OK);
        ck_assert_int_eq(sortd_submit(c, &ra), SORTD_OK);
        ck_assert_int_eq(sortd_submit(c, &rb), SORTD_OK);
        ck_assert_int_eq(sortd_submit(c, &rc), x->s);
        ck_assert_msg(strstr(sortd_error_message(c), x->words), "%s", sortd_error_message(c));
        fake_stop(&f);
        ck_assert_uint_eq(f.frames, 5);
        refused(c, sortd_region_destroy(c, region), "2 submitted sorts not yet received");
        memset(a, 0, sizeof(a)); /* sent whole: only the echo can bring them back */
        memset(b, 0, sizeof(b));
        memset(bv, 0, sizeof(bv));
        ck_assert_int_eq(sortd_receive(c, &ra), SORTD_OK);
        ck_assert_str_eq(sortd_error_message(c), "");
        ck_assert_uint_eq(a[0], 4);
        ck_assert_uint_eq(a[3], 1);
        ck_assert_int_eq(sortd_receive(c, &rb), SORTD_OK);
        ck_assert_uint_eq(b[1], 7);
        ck_assert_uint_eq(bv[1], 70);
        ck_assert_int_eq(sortd_region_destroy(c, region), SORTD_OK); /* only unmapped */
        ck_assert_int_eq(sortd_receive(c, &rb), x->s);
        ck_assert_msg(strstr(sortd_error_message(c), x->words), "%s", sortd_error_message(c));
        ck_assert_int_eq(sortd_ping(c), x->s);
        ck_assert_msg(strstr(sortd_error_message(c), x->words), "%s", sortd_error_message(c));
        sortd_close(c);
        free(rc.keys);
        free(rc.vals);
}
END_TEST

static sortd_conn *to_interrupt;

static void interrupt_on_alarm(int sig)
{
        sortd_interrupt(to_interrupt);
}

/* sortd_interrupt from a signal handler ends a wait that no timeout would end (a Ping the fake
   never answers, timeout -1): the call fails at once, says why, and the connection stays
   broken. */
START_TEST(client_interrupt)
{
        struct sigaction sa = {.sa_handler = interrupt_on_alarm, .sa_flags = SA_RESTART};
        struct itimerval it = {{0, 0}, {0, 200 * 1000}};
        int fds = own_fd_count();
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, FAKE_FAULT_SILENT);
        int64_t t0, took;

        sortd_interrupt(NULL); /* ignored */
        sortd_set_timeout(c, -1);
        to_interrupt = c;
        sigaction(SIGALRM, &sa, NULL);
        setitimer(ITIMER_REAL, &it, NULL);
        t0 = now_ms();
        ck_assert_int_eq(sortd_ping(c), SORTD_E_IO);
        took = now_ms() - t0;
        signal(SIGALRM, SIG_DFL);
        ck_assert_int_ge(took, 190);
        ck_assert_int_lt(took, 2000);
        ck_assert_msg(strstr(sortd_error_message(c), "interrupted (sortd_interrupt)"), "%s",
                      sortd_error_message(c));
        stays_broken(c, &f, SORTD_E_IO, "interrupted (sortd_interrupt)");
        ck_assert_int_eq(own_fd_count(), fds);
}
END_TEST

/* A progress callback that interrupts its connection (user) once the reply's header is in. */
static void interrupt_on_reply(void *user, sortd_progress_phase phase, uint64_t done,
                               uint64_t total)
{
        if (phase == SORTD_PROGRESS_RECEIVING && done == 0)
                sortd_interrupt(user);
}

/*
 * sortd_interrupt that lands when the daemon's whole reply is already in the socket: the call
 * it lands in may return that reply (the fake sends a reply in one piece, so the interrupt
 * issued as its header arrives finds the rest there too), but the connection is broken all the
 * same, whichever call comes first (_i = 0: sortd_receive, 1: sortd_region_destroy): the next
 * sortd_receive fails as interrupted though its reply is there too, a region is only
 * unmapped, as on any broken connection, though a submitted sort is not received, a Ping
 * fails, and nothing more is sent.
 */
START_TEST(client_interrupt_after_reply)
{
        uint32_t a[4] = {4, 3, 2, 1}, b[2] = {9, 8};
        sortd_request ra = {.keys = a, .n = 4, .key_type = SORTD_KEY_U32};
        sortd_request rb = {.keys = b, .n = 2, .key_type = SORTD_KEY_U32};
        sortd_region *region = NULL;
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, FAKE_FAULT_NONE);

        ck_assert_int_eq(sortd_region_create(c, 4096, &region), SORTD_OK);
        ck_assert_int_eq(sortd_submit(c, &ra), SORTD_OK);
        ck_assert_int_eq(sortd_submit(c, &rb), SORTD_OK);
        while (atomic_load(&f.replies) < 4) /* Hello, RegisterRegion, both sorts */
                usleep(1000);
        memset(a, 0, sizeof(a)); /* sent whole: only the echo can bring them back */
        sortd_set_progress(c, interrupt_on_reply, c);
        ck_assert_int_eq(sortd_receive(c, &ra), SORTD_OK);
        ck_assert_uint_eq(a[0], 4); /* the fake's echo, whole */
        ck_assert_uint_eq(a[3], 1);
        sortd_set_progress(c, NULL, NULL);
        if (_i == 1) /* first: rb, submitted, is no longer due */
                ck_assert_int_eq(sortd_region_destroy(c, region), SORTD_OK);
        ck_assert_int_eq(sortd_receive(c, &rb), SORTD_E_IO);
        ck_assert_msg(strstr(sortd_error_message(c), "interrupted (sortd_interrupt)"), "%s",
                      sortd_error_message(c));
        if (_i == 0)
                ck_assert_int_eq(sortd_region_destroy(c, region), SORTD_OK);
        ck_assert_int_eq(sortd_ping(c), SORTD_E_IO);
        ck_assert_msg(strstr(sortd_error_message(c), "interrupted (sortd_interrupt)"), "%s",
                      sortd_error_message(c));
        sortd_close(c);
        fake_stop(&f);
        ck_assert_uint_eq(f.frames, 4); /* no UnregisterRegion, no Ping */
}
END_TEST

/* The name a client gives goes in its Hello (the daemon logs it); the default is libsortd. A
   timeout of 0 set on an open connection means the default, as it does at connect. */
START_TEST(client_name_and_default_timeout)
{
        sortd_connect_options o = {.client_name = "loader-7"};
        sortd_conn *c = NULL;
        char err[256];
        fake_sortd f;

        fake_start(&f);
        ck_assert_msg(sortd_connect(f.sock, &o, &c, err, sizeof(err)) == SORTD_OK, "%s", err);
        ck_assert_str_eq(f.client_name, "loader-7");
        sortd_set_timeout(c, 0);
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        sortd_close(c);
        fake_stop(&f);
        c = connect_fake(&f, FAKE_FAULT_NONE);
        ck_assert_str_eq(f.client_name, "libsortd");
        sortd_close(c);
        fake_stop(&f);
}
END_TEST

/* Fills d's queue of connections not yet accepted (the daemon is stopped); returns how many
   sockets it took, kept open in fds. */
static int fill_backlog(const daemon_proc *d, int *fds, int max)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int n = 0;

        strcpy(sa.sun_path, d->sock);
        for (; n < max; n++) {
                fds[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                if (connect(fds[n], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                        ck_assert_int_eq(errno, EAGAIN);
                        close(fds[n]);
                        break;
                }
        }
        ck_assert_int_lt(n, max);
        return n;
}

static void *resume_later(void *arg)
{
        const daemon_proc *d = arg;

        usleep(300 * 1000);
        kill(d->pid, SIGCONT);
        return NULL;
}

/* A daemon whose queue of new connections is full (stalled, or flooded): connect waits it out
   within the timeout, and says so when the timeout ends first. */
START_TEST(connect_waits_out_a_full_backlog)
{
        const char *const extra[] = {"--max-connections", "1024", NULL};
        sortd_connect_options quick = {.timeout_ms = 200}, patient = {.timeout_ms = 20000};
        int fds[1024], n;
        sortd_conn *c = NULL;
        daemon_proc d = {0};
        pthread_t t;
        char err[256];

        daemon_start(&d, extra);
        kill(d.pid, SIGSTOP);
        n = fill_backlog(&d, fds, 1024);
        ck_assert_int_eq(sortd_connect(d.sock, &quick, &c, err, sizeof(err)), SORTD_E_TIMEOUT);
        ck_assert_msg(strstr(err, "queue of new connections stayed full for 200 ms"), "%s", err);
        ck_assert_int_eq(pthread_create(&t, NULL, resume_later, &d), 0);
        ck_assert_msg(sortd_connect(d.sock, &patient, &c, err, sizeof(err)) == SORTD_OK, "%s", err);
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        pthread_join(t, NULL);
        sortd_close(c);
        for (int i = 0; i < n; i++)
                close(fds[i]);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("client");
        TCase *tc = tcase_create("client");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, client_validation);
        tcase_add_test(tc, connect_validation);
        tcase_add_test(tc, null_connection);
        tcase_add_test(tc, client_eintr);
        tcase_add_test(tc, client_timeout);
        tcase_add_test(tc, daemon_goes_away);
        tcase_add_test(tc, child_closes_the_parents_connection);
        tcase_add_loop_test(tc, client_bad_reply, 0, N_BAD_REPLIES);
        tcase_add_test(tc, client_set_timeout);
        tcase_add_loop_test(tc, client_sort_one_deadline, 0, 2);
        tcase_add_test(tc, client_result_cut);
        tcase_add_test(tc, client_progress_after_hang_up);
        tcase_add_test(tc, client_get_info);
        tcase_add_test(tc, client_interrupt);
        tcase_add_loop_test(tc, client_interrupt_after_reply, 0, 2);
        tcase_add_loop_test(tc, client_refused_while_sending, 0, 2);
        tcase_add_loop_test(tc, client_refused_behind_replies, 0, 2);
        tcase_add_test(tc, client_name_and_default_timeout);
        tcase_add_test(tc, connect_waits_out_a_full_backlog);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
