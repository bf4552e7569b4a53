/*
 * daemon/server/config.c alone: the settings table as the command line, the config file and the
 * documentation it prints (--help, --print-config) see it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "suite.h"

/* sortd__config_load on the arguments after argv[0]; its result. */
#define LOAD(cfg, ...)                                                                             \
        sortd__config_load(cfg, (int)(sizeof((char *[]){"sortd", __VA_ARGS__}) / sizeof(char *)),  \
                           (char *[]){"sortd", __VA_ARGS__, NULL})

/* Sizes take K, M, G and T; counts (connections, requests, regions, threads, ms) are plain
   numbers, as sortd.conf(5) says: "30K" milliseconds would be 30720 of them. */
START_TEST(counts_take_no_suffix)
{
        sortd__config cfg;

        ck_assert_int_eq(LOAD(&cfg, "--capacity", "1K", "--max-write-queue", "8k"), 0);
        ck_assert_uint_eq(cfg.capacity, 1024);
        ck_assert_uint_eq(cfg.max_write_queue, 8192);
        ck_assert_int_eq(LOAD(&cfg, "--max-connections", "1000", "--drain-timeout-ms", "0x10"), 0);
        ck_assert_uint_eq(cfg.max_connections, 1000);
        ck_assert_uint_eq(cfg.drain_timeout_ms, 16);
        ck_assert_int_eq(LOAD(&cfg, "--max-connections", "1K"), -EINVAL);
        ck_assert_int_eq(LOAD(&cfg, "--drain-timeout-ms", "30K"), -EINVAL);
        ck_assert_int_eq(LOAD(&cfg, "--threads", "1k"), -EINVAL);
        ck_assert_int_eq(LOAD(&cfg, "--max-regions", "1M"), -EINVAL);
}
END_TEST

/* What fd gets from begin_capture until end_capture puts it in buf. */
struct capture {
        FILE *f;
        int fd, saved;
};

static struct capture begin_capture(int fd)
{
        struct capture c = {tmpfile(), fd, dup(fd)};

        ck_assert_ptr_nonnull(c.f);
        fflush(fd == 1 ? stdout : stderr);
        ck_assert_int_ge(dup2(fileno(c.f), fd), 0);
        return c;
}

static void end_capture(struct capture *c, char *buf, size_t len)
{
        size_t n;

        fflush(c->fd == 1 ? stdout : stderr);
        ck_assert_int_ge(dup2(c->saved, c->fd), 0);
        close(c->saved);
        rewind(c->f);
        n = fread(buf, 1, len - 1, c->f);
        buf[n] = '\0';
        fclose(c->f);
}

/* What fn prints on stdout, in buf. */
static void stdout_of(int (*fn)(void), char *buf, size_t len)
{
        struct capture c = begin_capture(1);

        ck_assert_int_eq(fn(), 1);
        end_capture(&c, buf, len);
}

/* sortd__config_load's result on argv, and what it wrote on stderr in err. */
static int load_err(char *err, size_t len, int argc, char **argv)
{
        struct capture c = begin_capture(2);
        sortd__config cfg;
        int r = sortd__config_load(&cfg, argc, argv);

        end_capture(&c, err, len);
        return r;
}

#define LOAD_ERR(err, ...)                                                                         \
        load_err(err, sizeof(err),                                                                 \
                 (int)(sizeof((char *[]){"sortd", __VA_ARGS__}) / sizeof(char *)),                 \
                 (char *[]){"sortd", __VA_ARGS__, NULL})

/* path holding text; unlink it after. */
static void write_file(char *path, const char *text)
{
        int fd = mkstemp(path);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
}

static int print_markdown(void)
{
        sortd__config cfg;

        return LOAD(&cfg, "--print-config=markdown");
}

static int print_help(void)
{
        sortd__config cfg;

        return LOAD(&cfg, "--help");
}

/* allow-uid and allow-gid default to empty (everyone who can open the socket); only socket's
   default is computed. */
START_TEST(documented_defaults)
{
        static char out[16384];
        sortd__config cfg;
        const char *line, *end, *first, *again;

        ck_assert_int_eq(LOAD(&cfg, "--engine", "cpu"), 0);
        ck_assert_str_eq(cfg.allow_uid, "");
        ck_assert_str_eq(cfg.allow_gid, "");
        ck_assert_str_ne(cfg.socket, "");

        stdout_of(print_markdown, out, sizeof(out));
        ck_assert_msg(strstr(out, "| `socket` | computed |"), "%s", out);
        ck_assert_msg(strstr(out, "| `allow-uid` | empty |"), "%s", out);
        ck_assert_msg(strstr(out, "| `allow-gid` | empty |"), "%s", out);
        stdout_of(print_help, out, sizeof(out));
        ck_assert_msg(strstr(out, "everyone who can open the socket (default: empty)"), "%s", out);
        ck_assert_msg(!strstr(strstr(out, "--allow-uid"), "see above"), "%s", out);
        /* socket's help gives its computed default, once: no "(default: ...)" after it */
        line = strstr(out, "--socket");
        ck_assert_ptr_nonnull(line);
        end = strchr(line, '\n');
        ck_assert_ptr_nonnull(end);
        first = strstr(line, "(default:");
        ck_assert_msg(first && first < end, "%.*s", (int)(end - line), line);
        again = strstr(first + 1, "(default:");
        ck_assert_msg(!again || again > end, "%.*s", (int)(end - line), line);
}
END_TEST

/* The file's syntax as sortd.conf(5) gives it: comments, blanks, spaces around either side,
   CRLF, the last of a setting given twice, no newline at the end. */
START_TEST(file_syntax)
{
        char path[] = "/tmp/sortd-config-XXXXXX";
        sortd__config cfg;

        write_file(path, "# comment\r\n\r\n  capacity=2K \r\n\tcapacity = 3K\r\n"
                         "max-pipeline\t=\t7");
        ck_assert_int_eq(LOAD(&cfg, "--config", path), 0);
        ck_assert_uint_eq(cfg.capacity, 3072);
        ck_assert_uint_eq(cfg.max_pipeline, 7);
        unlink(path);
}
END_TEST

/*
 * A value that names something is judged where it is read, as numbers are: a name the setting
 * does not take stops the load with the file and line (or the command line) and the names it
 * does take. engine and on-device-loss used to be taken as any text and refused only once the
 * daemon had started, naming neither file nor line (and engine with exit 1, not 2).
 */
START_TEST(names_judged_where_read)
{
        char path[] = "/tmp/sortd-config-XXXXXX", err[1024], want[128];
        sortd__config cfg;

        write_file(path, "# a GPU server\nengine = gpu\n");
        ck_assert_int_eq(LOAD_ERR(err, "--config", path), -EINVAL);
        snprintf(want, sizeof(want),
                 "sortd: error: %s:2: engine = 'gpu' is none of auto, cpu, cuda or cub", path);
        ck_assert_msg(strstr(err, want), "%s", err);
        unlink(path);
        ck_assert_int_eq(LOAD_ERR(err, "--on-device-loss", "pray"), -EINVAL);
        ck_assert_msg(strstr(err, "sortd: error: command line: on-device-loss = 'pray' is none of "
                                  "recreate or cpu"),
                      "%s", err);
        ck_assert_int_eq(LOAD_ERR(err, "--log-level=loud"), -EINVAL);
        ck_assert_msg(strstr(err,
                             "sortd: error: command line: log-level = 'loud' is none of error, "
                             "warning, notice, info or debug"),
                      "%s", err);
        /* Names are whole: no prefix, no other case. */
        ck_assert_int_eq(LOAD_ERR(err, "--engine", "cu"), -EINVAL);
        ck_assert_int_eq(LOAD_ERR(err, "--engine", "CPU"), -EINVAL);

        ck_assert_int_eq(LOAD(&cfg, "--engine", "cub", "--log-level", "debug"), 0);
        ck_assert_str_eq(cfg.engine, "cub");
        ck_assert_int_eq(LOAD(&cfg, "--engine", "auto", "--engine", "cpu"), 0);
        ck_assert_str_eq(cfg.engine, "cpu");
}
END_TEST

/* allow-uid and allow-gid are resolved where they are read: an unknown name, or a list too
   long, names the file and line (it used to name only the setting, after the load). */
START_TEST(id_lists_judged_where_read)
{
        char path[] = "/tmp/sortd-config-XXXXXX", err[1024], want[160];
        char many[512] = "1";
        sortd__config cfg;

        write_file(path, "allow-gid = 0\nallow-uid = root, no-such-user-here\n");
        ck_assert_int_eq(LOAD_ERR(err, "--config", path), -ENOENT);
        snprintf(want, sizeof(want),
                 "sortd: error: %s:2: allow-uid: 'no-such-user-here' is no user id nor a known "
                 "user name",
                 path);
        ck_assert_msg(strstr(err, want), "%s", err);
        unlink(path);
        for (int i = 2; i <= 65; i++)
                snprintf(many + strlen(many), sizeof(many) - strlen(many), ",%d", i);
        ck_assert_int_eq(LOAD_ERR(err, "--allow-gid", many), -E2BIG);
        ck_assert_msg(
                strstr(err, "sortd: error: command line: allow-gid lists more than 64 entries"),
                "%s", err);
        ck_assert_int_eq(LOAD(&cfg, "--allow-uid", "root,0", "--allow-gid", "0"), 0);
        ck_assert_str_eq(cfg.allow_uid, "root,0");
}
END_TEST

/* The ids the daemon serves are the ones resolved as the lists were read, in the config
   (server.c used to look every name up a second time, after the load): a list given twice
   is its last, and empty lists serve everyone. */
START_TEST(id_lists_resolved_once)
{
        char path[] = "/tmp/sortd-config-XXXXXX";
        sortd__config cfg;

        write_file(path, "allow-uid = 5\nallow-gid = root, 7\n");
        ck_assert_int_eq(LOAD(&cfg, "--config", path, "--allow-uid", "root,4000000000"), 0);
        ck_assert(cfg.access.on);
        ck_assert_uint_eq(cfg.access.nuids, 2);
        ck_assert_uint_eq(cfg.access.uids[0], 0);
        ck_assert_uint_eq(cfg.access.uids[1], 4000000000u);
        ck_assert_uint_eq(cfg.access.ngids, 2);
        ck_assert_uint_eq(cfg.access.gids[0], 0);
        ck_assert_uint_eq(cfg.access.gids[1], 7);
        ck_assert_int_eq(LOAD(&cfg, "--config", path, "--allow-uid=", "--allow-gid", ""), 0);
        ck_assert(!cfg.access.on);
        ck_assert_uint_eq(cfg.access.nuids + cfg.access.ngids, 0);
        unlink(path);
}
END_TEST

/*
 * --version, --help and --print-config win wherever they stand and read no file: "--config
 * broken.conf --version" used to read the file first and fail on it, while "--version --config
 * broken.conf" printed the version without reading it. A setting's value is not taken for one
 * of them: "--socket --version" names a socket.
 */
START_TEST(version_reads_no_file)
{
        char err[1024];
        sortd__config cfg;
        struct capture out = begin_capture(1);

        ck_assert_int_eq(LOAD_ERR(err, "--config", "/nonexistent/sortd.conf", "--version"),
                         SORTD__CONFIG_EXIT);
        ck_assert_str_eq(err, "");
        ck_assert_int_eq(LOAD_ERR(err, "--version", "--config", "/nonexistent/sortd.conf"),
                         SORTD__CONFIG_EXIT);
        ck_assert_str_eq(err, "");
        ck_assert_int_eq(LOAD_ERR(err, "--capacity", "lots", "--help"), SORTD__CONFIG_EXIT);
        ck_assert_str_eq(err, "");
        end_capture(&out, err, sizeof(err));
        ck_assert_msg(strstr(err, "sortd "), "%s", err);
        ck_assert_int_eq(LOAD(&cfg, "--socket", "--version"), SORTD__CONFIG_SERVE);
        ck_assert_str_eq(cfg.socket, "--version");
}
END_TEST

/*
 * --check-config (or -t) loads the files and the whole command line as a start does, wherever
 * it stands, and runs the checks across settings: a file whose max-request-bytes exceeds
 * max-inflight-bytes is refused, and the command line still overrides the file.
 */
START_TEST(check_config_reads_everything)
{
        char path[] = "/tmp/sortd-config-XXXXXX", err[1024];
        sortd__config cfg;

        write_file(path, "capacity = 2K\nmax-request-bytes = 2G\n");
        ck_assert_int_eq(LOAD_ERR(err, "--check-config", "--config", path), -EINVAL);
        ck_assert_msg(strstr(err, "max-request-bytes (2147483648) must not exceed "
                                  "max-inflight-bytes (1073741824)"),
                      "%s", err);
        ck_assert_int_eq(LOAD_ERR(err, "--config", path, "-t"), -EINVAL);
        ck_assert_int_eq(LOAD(&cfg, "--config", path, "--check-config", "--max-inflight-bytes",
                              "4G", "--capacity", "3K"),
                         SORTD__CONFIG_CHECK);
        ck_assert_uint_eq(cfg.capacity, 3072);
        ck_assert_uint_eq(cfg.max_request_bytes, 2ull << 30);
        ck_assert_int_eq(LOAD_ERR(err, "--check-config", "--config", path, "--bogus", "1"),
                         -EINVAL);
        ck_assert_msg(strstr(err, "unknown option '--bogus'"), "%s", err);
        ck_assert_int_eq(LOAD(&cfg, "--engine", "cpu"), SORTD__CONFIG_SERVE);
        unlink(path);
}
END_TEST

/* A socket path must fit sockaddr_un: set, it is refused where it is set; computed from
   $SORTD_SOCKET, it is refused as the load ends, never cut to fit (which would bind another
   path). */
START_TEST(socket_fits_sun_path)
{
        char err[1024], path[160] = "/tmp/";
        sortd__config cfg;

        memset(path + 5, 'x', sizeof(path) - 6);
        ck_assert_int_eq(LOAD_ERR(err, "--socket", path), -ENAMETOOLONG);
        ck_assert_msg(strstr(err, "command line: socket is too long (at most 107 bytes)"), "%s",
                      err);
        path[107] = '\0';
        ck_assert_int_eq(LOAD(&cfg, "--socket", path), SORTD__CONFIG_SERVE);
        ck_assert_str_eq(cfg.socket, path);
        path[107] = 'x';
        ck_assert_int_eq(setenv("SORTD_SOCKET", path, 1), 0);
        ck_assert_int_eq(LOAD_ERR(err, "--engine", "cpu"), -ENAMETOOLONG);
        ck_assert_msg(strstr(err, "the default socket /tmp/xxx"), "%s", err);
        ck_assert_int_eq(unsetenv("SORTD_SOCKET"), 0);
}
END_TEST

/*
 * Under systemd, a setting that stops the daemon is logged at error priority, as the daemon's
 * other errors are (log.c's "<3>" prefix on the journal's stream): config.c printed its
 * messages bare, so the journal filed them at the stream's default, info, and journalctl -p err
 * did not show why sortd would not start.
 */
START_TEST(errors_logged_as_errors)
{
        char err[1024], stream[64];
        struct capture c = begin_capture(2);
        sortd__config cfg;
        struct stat st;

        ck_assert_int_eq(fstat(2, &st), 0);
        snprintf(stream, sizeof(stream), "%llu:%llu", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino);
        ck_assert_int_eq(setenv("JOURNAL_STREAM", stream, 1), 0);
        ck_assert_int_eq(LOAD(&cfg, "--capacity", "lots"), -EINVAL);
        ck_assert_int_eq(LOAD(&cfg, "--config-if-exists", "/nonexistent/sortd.conf"), 0);
        ck_assert_int_eq(unsetenv("JOURNAL_STREAM"), 0);
        end_capture(&c, err, sizeof(err));
        ck_assert_msg(strncmp(err, "<3>command line: capacity = 'lots'", 34) == 0, "%s", err);
        ck_assert_msg(strstr(err, "\n<5>no config file at /nonexistent/sortd.conf"), "%s", err);
}
END_TEST

/* The most memory this process has held, in KiB. */
static long max_rss_kib(void)
{
        struct rusage ru;

        ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
        return ru.ru_maxrss;
}

/*
 * A line over 64 KiB is refused at its line, and what is left of it is never read: a file of
 * one endless line used to be read whole into memory ("sortd --config /dev/zero" grew until
 * it failed), and a long comment was taken.
 */
START_TEST(line_length_capped)
{
        char path[] = "/tmp/sortd-config-XXXXXX", err[1024], want[128];
        static char text[(64 << 10) + 64];
        sortd__config cfg;
        long rss;
        int fd;

        memset(text, 'x', sizeof(text));
        memcpy(text, "# ", 2);
        strcpy(text + (64 << 10), "\ncapacity = 2K\n");
        write_file(path, text); /* a comment of exactly 64 KiB is taken */
        ck_assert_int_eq(LOAD(&cfg, "--config", path), 0);
        ck_assert_uint_eq(cfg.capacity, 2048);
        unlink(path);
        strcpy(path, "/tmp/sortd-config-XXXXXX");
        text[64 << 10] = 'x';
        write_file(path, text);
        ck_assert_int_eq(LOAD_ERR(err, "--config", path), -EMSGSIZE);
        snprintf(want, sizeof(want), "sortd: error: %s:1: line longer than 65536 bytes", path);
        ck_assert_msg(strstr(err, want), "%s", err);
        unlink(path);

        strcpy(path, "/tmp/sortd-config-XXXXXX");
        /* One line of 256 MiB: refused with no more memory than a line's cap. */
        write_file(path, "# a comment that never ends ");
        fd = open(path, O_WRONLY);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(ftruncate(fd, 256 << 20), 0);
        close(fd);
        rss = max_rss_kib();
        /* The file's hole reads as NUL bytes, the first of which stops the load. */
        ck_assert_int_eq(LOAD_ERR(err, "--config", path), -EILSEQ);
        ck_assert_msg(strstr(err, ":1: "), "%s", err);
        ck_assert_int_lt(max_rss_kib() - rss, 32 << 10);
        unlink(path);
}
END_TEST

/*
 * Only a regular file is read as a config file: a directory failed "after line 0", a FIFO with
 * no writer held the start for ever (in open), and a device was read as one (/dev/zero until
 * memory ran out). Each is refused at once, saying what it is.
 */
START_TEST(config_file_is_regular)
{
        char dir[] = "/tmp/sortd-config-XXXXXX", fifo[64], err[1024], want[160];
        char *const kinds[][2] = {{dir, "a directory"},
                                  {fifo, "a FIFO or pipe"},
                                  {"/dev/zero", "a character device"}};
        sortd__config cfg;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        for (size_t i = 0; i < 3; i++) {
                ck_assert_int_eq(LOAD_ERR(err, "--config-if-exists", kinds[i][0]), -EINVAL);
                snprintf(want, sizeof(want),
                         "sortd: error: config file %s is %s, not a regular file", kinds[i][0],
                         kinds[i][1]);
                ck_assert_msg(strstr(err, want), "%s", err);
        }
        unlink(fifo);
        rmdir(dir);
        /* /dev/null is an empty file: the defaults. */
        ck_assert_int_eq(LOAD(&cfg, "--config", "/dev/null"), SORTD__CONFIG_SERVE);
}
END_TEST

/* A NUL byte ends the load at its line: the rest of the line used to be dropped unseen, so
   "capacity = 1K\0junk" was taken as 1K. */
START_TEST(nul_byte_refused)
{
        static const char text[] = "# ok\ncapacity = 1K\0junk\n";
        char path[] = "/tmp/sortd-config-XXXXXX", err[1024], want[128];
        int fd = mkstemp(path);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
        close(fd);
        ck_assert_int_eq(LOAD_ERR(err, "--config", path), -EILSEQ);
        snprintf(want, sizeof(want), "sortd: error: %s:2: a NUL byte: not a text file", path);
        ck_assert_msg(strstr(err, want), "%s", err);
        unlink(path);
}
END_TEST

/*
 * allow-uid and allow-gid are lists of entries separated by commas, blanks around each
 * ignored. An empty entry names the line: "allow-uid = ," was taken as no list, which serves
 * everyone, and "root,,0" as "root,0". A blank value is still no list. Blanks do not separate:
 * "root 0" is one entry, which names nobody (it was taken as two).
 */
START_TEST(id_list_entries)
{
        char path[] = "/tmp/sortd-config-XXXXXX", err[1024], want[160];
        sortd__config cfg;

        ck_assert_int_eq(LOAD_ERR(err, "--allow-uid", ","), -EINVAL);
        ck_assert_msg(strstr(err, "sortd: error: command line: allow-uid: entry 1 is empty (a "
                                  "comma too many?)"),
                      "%s", err);
        ck_assert_int_eq(LOAD_ERR(err, "--allow-uid", "root,"), -EINVAL);
        ck_assert_msg(strstr(err, "allow-uid: entry 2 is empty"), "%s", err);
        write_file(path, "allow-gid = 0,, 7\n");
        ck_assert_int_eq(LOAD_ERR(err, "--config", path), -EINVAL);
        snprintf(want, sizeof(want), "sortd: error: %s:1: allow-gid: entry 2 is empty", path);
        ck_assert_msg(strstr(err, want), "%s", err);
        unlink(path);
        ck_assert_int_eq(LOAD_ERR(err, "--allow-uid", "root 0"), -ENOENT);
        ck_assert_msg(strstr(err, "allow-uid: 'root 0' is no user id"), "%s", err);

        ck_assert_int_eq(LOAD(&cfg, "--allow-uid", " root ,\t0\t", "--allow-gid", "\t7"), 0);
        ck_assert_uint_eq(cfg.access.nuids, 2);
        ck_assert_uint_eq(cfg.access.uids[1], 0);
        ck_assert_uint_eq(cfg.access.ngids, 1);
        ck_assert_uint_eq(cfg.access.gids[0], 7);
        ck_assert_int_eq(LOAD(&cfg, "--allow-uid", " \t", "--allow-gid", ""), 0);
        ck_assert(!cfg.access.on);
}
END_TEST

/* What sortd__config_load prints on stdout for argv, in out; its result. */
static int load_out(char *out, size_t len, int argc, char **argv)
{
        struct capture c = begin_capture(1);
        sortd__config cfg;
        int r = sortd__config_load(&cfg, argc, argv);

        end_capture(&c, out, len);
        return r;
}

#define LOAD_OUT(out, ...)                                                                         \
        load_out(out, sizeof(out),                                                                 \
                 (int)(sizeof((char *[]){"sortd", __VA_ARGS__}) / sizeof(char *)),                 \
                 (char *[]){"sortd", __VA_ARGS__, NULL})

/*
 * --print-config=effective prints every setting as the files and the command line left it, in
 * the file's syntax, after the same checks as --check-config: what it prints, read back as the
 * only config file, prints the same.
 */
START_TEST(print_effective)
{
        static char out[8192], again[8192];
        char path[] = "/tmp/sortd-config-XXXXXX", back[] = "/tmp/sortd-config-XXXXXX";
        char err[1024];

        write_file(path, "capacity = 3K\nengine = cub\nallow-gid = 0, 7\nhost-pool = 1G\n");
        ck_assert_int_eq(LOAD_OUT(out, "--print-config=effective", "--config", path, "--log-level",
                                  "debug", "--host-pool", "auto", "--socket", "/tmp/x.sock",
                                  "--idle-timeout-ms", "2048"),
                         SORTD__CONFIG_EXIT);
        ck_assert_msg(strstr(out, "\ncapacity = 3K\n"), "%s", out);
        ck_assert_msg(strstr(out, "\nengine = cub\n"), "%s", out);
        ck_assert_msg(strstr(out, "\nallow-uid =\nallow-gid = 0, 7\n"), "%s", out);
        ck_assert_msg(strstr(out, "\nhost-pool = auto\n"), "%s", out);
        ck_assert_msg(strstr(out, "\nsocket = /tmp/x.sock\n"), "%s", out);
        ck_assert_msg(strstr(out, "\nlog-level = debug\n"), "%s", out);
        ck_assert_msg(strstr(out, "\non-device-loss = recreate\n"), "%s", out);
        ck_assert_msg(strstr(out, "\nidle-timeout-ms = 2048\n"), "%s", out);
        ck_assert_msg(strstr(out, "\nmax-inflight-bytes = 1G\n"), "%s", out);
        write_file(back, out);
        ck_assert_int_eq(LOAD_OUT(again, "--config", back, "--print-config=effective"),
                         SORTD__CONFIG_EXIT);
        ck_assert_str_eq(again, out);
        /* Checked as a start checks: nothing printed, an error. */
        ck_assert_int_eq(LOAD_OUT(again, "--print-config=effective", "--capacity", "lots"),
                         -EINVAL);
        ck_assert_str_eq(again, "");
        ck_assert_int_eq(LOAD_ERR(err, "--print-config=effective", "--bogus"), -EINVAL);
        unlink(path);
        unlink(back);
}
END_TEST

/* A load that fails says why in its result too, as a negative errno (config.h), besides the
   message on stderr. */
START_TEST(errors_are_errnos)
{
        char err[1024];

        ck_assert_int_eq(LOAD_ERR(err, "--config", "/nonexistent/sortd.conf"), -ENOENT);
        ck_assert_msg(strstr(err, "cannot open config file /nonexistent/sortd.conf"), "%s", err);
        ck_assert_int_eq(LOAD_ERR(err, "--config"), -EINVAL);
        ck_assert_msg(strstr(err, "--config needs a file"), "%s", err);
        ck_assert_int_eq(LOAD_ERR(err, "serve"), -EINVAL);
        ck_assert_msg(strstr(err, "unexpected argument 'serve'"), "%s", err);
        ck_assert_int_eq(LOAD_ERR(err, "--print-config=yaml"), -EINVAL);
        ck_assert_msg(strstr(err, "unknown format 'yaml'"), "%s", err);
}
END_TEST

/* list as the longest value a list setting of size bytes takes: two ids, blanks between. */
static void longest_list(char *list, size_t size)
{
        memset(list, ' ', size - 1);
        memcpy(list, "0,", 2);
        list[size - 2] = '0';
        list[size - 1] = '\0';
}

/* --print-config=effective prints each setting whole at the longest value it takes: the lists
   (1023 bytes), the socket (107). */
START_TEST(print_effective_longest)
{
        const sortd__config *cfg = NULL; /* for its fields' sizes */
        char uids[sizeof(cfg->allow_uid)], gids[sizeof(cfg->allow_gid)], sock[sizeof(cfg->socket)];
        static char out[8192], want[sizeof(uids) + sizeof(gids) + 64];

        longest_list(uids, sizeof(uids));
        longest_list(gids, sizeof(gids));
        memset(sock, 'x', sizeof(sock) - 1);
        memcpy(sock, "/tmp/", 5);
        sock[sizeof(sock) - 1] = '\0';
        ck_assert_int_eq(LOAD_OUT(out, "--print-config=effective", "--allow-uid", uids,
                                  "--allow-gid", gids, "--socket", sock),
                         SORTD__CONFIG_EXIT);
        snprintf(want, sizeof(want), "\nallow-uid = %s\nallow-gid = %s\n", uids, gids);
        ck_assert_msg(strstr(out, want), "%s", out);
        snprintf(want, sizeof(want), "\nsocket = %s\n", sock);
        ck_assert_msg(strstr(out, want), "%s", out);
}
END_TEST

/* The names a setting takes are listed once, in the table: --help and the documentation show
   the same list the parser takes. */
START_TEST(names_documented)
{
        static char out[16384];

        stdout_of(print_markdown, out, sizeof(out));
        ck_assert_msg(strstr(out, "| `engine` | `auto` | auto, cpu, cuda or cub |"), "%s", out);
        ck_assert_msg(strstr(out, "| `on-device-loss` | `recreate` | recreate or cpu |"), "%s",
                      out);
        ck_assert_msg(strstr(out, "| `log-level` | `info` | error, warning, notice, info or "
                                  "debug |"),
                      "%s", out);
        stdout_of(print_help, out, sizeof(out));
        ck_assert_msg(strstr(out, "(auto, cpu, cuda or cub; default: auto)"), "%s", out);
        ck_assert_msg(strstr(out, "(recreate or cpu; default: recreate)"), "%s", out);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("config");
        TCase *tc = tcase_create("config");

        tcase_add_test(tc, counts_take_no_suffix);
        tcase_add_test(tc, documented_defaults);
        tcase_add_test(tc, file_syntax);
        tcase_add_test(tc, names_judged_where_read);
        tcase_add_test(tc, id_lists_judged_where_read);
        tcase_add_test(tc, id_lists_resolved_once);
        tcase_add_test(tc, names_documented);
        tcase_add_test(tc, socket_fits_sun_path);
        tcase_add_test(tc, version_reads_no_file);
        tcase_add_test(tc, check_config_reads_everything);
        tcase_add_test(tc, errors_logged_as_errors);
        tcase_add_test(tc, line_length_capped);
        tcase_add_test(tc, config_file_is_regular);
        tcase_add_test(tc, nul_byte_refused);
        tcase_add_test(tc, id_list_entries);
        tcase_add_test(tc, print_effective);
        tcase_add_test(tc, print_effective_longest);
        tcase_add_test(tc, errors_are_errnos);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
