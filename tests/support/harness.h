/*
 * Starting and stopping a real sortd for a test: a temporary directory holds its socket, the
 * binary comes from $SORTD_BIN (set by meson), and helpers speak raw frames on a socket.
 */
#ifndef SORTD_TESTS_HARNESS_H
#define SORTD_TESTS_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <check.h>

#include "sortd.h"
#include "suite.h"
#include "wire.h"

typedef struct daemon_proc {
        pid_t pid;
        char dir[64];
        char sock[128];
        char log[128];
        const char *notify_socket; /* set before start: NOTIFY_SOCKET for the daemon */
        const char *watchdog_usec; /* set before start: WATCHDOG_USEC for the daemon */
        int socket_left;           /* after daemon_stop: the socket file outlived the daemon */
} daemon_proc;

/* Starts sortd on a fresh socket with small test limits plus `extra` (NULL-terminated) and
   waits until it answers there (a connection is taken before its engine is made). Aborts the
   test on failure. */
void daemon_start(daemon_proc *d, const char *const *extra);
/* daemon_start in two halves, for a test that acts while the daemon starts: daemon_spawn
   returns once it has forked, daemon_wait_ready as daemon_start does. */
void daemon_spawn(daemon_proc *d, const char *const *extra);
void daemon_wait_ready(daemon_proc *d);
/* Same, in the existing directory d->dir (its socket path is d->dir/sortd.sock). */
void daemon_start_in(daemon_proc *d, const char *const *extra);
/* Starts sortd through systemd-socket-activate on d->sock. */
void daemon_start_activated(daemon_proc *d, const char *const *extra);
/* Sends sig and waits for exit; returns the exit status, or -1 if it died of a signal. */
int daemon_stop(daemon_proc *d, int sig);
/* True while the process runs. */
int daemon_alive(const daemon_proc *d);
/* The daemon's open fds (/proc/PID/fd). */
int daemon_fd_count(const daemon_proc *d);
/* The daemon's mappings (/proc/PID/maps lines) that contain text. */
int daemon_maps_matching(const daemon_proc *d, const char *text);
/* The daemon's log (its stderr) so far, NUL-terminated, cut to len - 1 bytes. */
void daemon_log(const daemon_proc *d, char *buf, size_t len);
/* Resident set size of the daemon in KiB. */
long daemon_rss_kib(const daemon_proc *d);

/*
 * How much more memory a daemon built like this test holds for the same work: ThreadSanitizer
 * keeps shadow memory (counted in the RSS) for every byte the program touches. Memory bounds
 * are multiplied by it.
 */
#if defined(__SANITIZE_THREAD__)
#define SANITIZER_RSS_FACTOR 4
#else
#define SANITIZER_RSS_FACTOR 1
#endif

sortd_conn *client_open(const daemon_proc *d);
/* The daemon's counters, through a connection of its own (a Hello and a Status). */
sortd_server_status status_of(const daemon_proc *d);
int raw_connect(const char *path);
/* Sends a frame with the given header fields and raw message bytes (payload not included). */
void raw_send_frame(int fd, uint32_t magic, uint16_t version, uint32_t mlen, uint64_t plen,
                    const void *msg, size_t len);
/* Sends a packed Request with payload_len plen (payload not included). */
void raw_send_request(int fd, const Sortd__Wire__Request *req, uint64_t plen);
void raw_send_bytes(int fd, const void *p, size_t len);
/* Packs a Request's frame, payload_len plen, into buf (cap bytes); returns its length. */
size_t raw_pack_request(const Sortd__Wire__Request *req, uint64_t plen, uint8_t *buf, size_t cap);
/* Sends a Request without payload in one sendmsg, nfds (at most 8) fds attached (SCM_RIGHTS). */
void raw_send_request_fds(int fd, const Sortd__Wire__Request *req, const int *fds, unsigned nfds);
/* The same, with more_len bytes of more after it in the same sendmsg. */
void raw_send_request_fds_then(int fd, const Sortd__Wire__Request *req, const int *fds,
                               unsigned nfds, const void *more, size_t more_len);
/* One sendmsg of len bytes with nfds (at most 8) fds attached; what sendmsg returned (the
   daemon may have closed the connection). */
ssize_t raw_send_bytes_fds(int fd, const void *p, size_t len, const int *fds, unsigned nfds);
/* Reads one reply frame (timeout 10 s); NULL on EOF. *plen gets its payload length. */
Sortd__Wire__Reply *raw_recv_reply(int fd, uint64_t *plen);
/* Reads len bytes into buf (timeout 10 s). */
void raw_recv_bytes(int fd, void *buf, size_t len);
/* Reads and drops n bytes. */
void raw_skip(int fd, uint64_t n);
/* True when the peer has closed (EOF within the timeout). */
int raw_wait_eof(int fd, int timeout_ms);
/* Reads one reply: it must answer id with status s, carry no payload, and (text non-NULL) say
   text in its error. */
void raw_expect_reply(int fd, uint64_t id, sortd_status s, const char *text);
void raw_send_ping(int fd, uint64_t id);
/* The stream is still in sync: a ping is answered. */
void raw_expect_in_sync(int fd);
/* A new memfd of bytes, sealed against shrinking, as a region's must be. */
int raw_sealed_memfd(uint64_t bytes);
/* Sends reg (nfds fds attached) on the raw connection fd as request req_id, which must succeed;
   the region's id. */
uint64_t raw_register_region(int fd, Sortd__Wire__RegisterRegion *reg, const int *fds,
                             unsigned nfds, uint64_t req_id);
/* Registers memfd mfd (bytes) on the raw connection fd, request id req_id; the region's id. */
uint64_t raw_register_memfd(int fd, int mfd, uint64_t bytes, uint64_t req_id);
/* An inline Sort message of n keys, the rest at its defaults. */
Sortd__Wire__Sort raw_sort_msg(int key_type, int payload, uint64_t n);
void raw_send_sort(int fd, uint64_t id, Sortd__Wire__Sort *s, uint64_t plen);
/* Sends n zero bytes (a payload's worth). */
void raw_send_zeros(int fd, size_t n);
/* A child process that pipelines `sorts` inline sorts of n keys (plen payload bytes each) to
   the daemon at sock and reads no reply: it blocks once the daemon stops reading. */
pid_t raw_spawn_unread_sorts(const char *sock, int key_type, int payload, uint64_t n, uint64_t plen,
                             int sorts);

#endif
