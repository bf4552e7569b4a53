/*
 * daemon/config.c alone: the settings table as the command line, the config file and the
 * documentation it prints (--help, --print-config) see it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
        ck_assert_int_eq(LOAD(&cfg, "--max-connections", "1K"), -1);
        ck_assert_int_eq(LOAD(&cfg, "--drain-timeout-ms", "30K"), -1);
        ck_assert_int_eq(LOAD(&cfg, "--threads", "1k"), -1);
        ck_assert_int_eq(LOAD(&cfg, "--max-regions", "1M"), -1);
}
END_TEST

/* What fn prints on stdout, in buf. */
static void stdout_of(int (*fn)(void), char *buf, size_t len)
{
        FILE *f = tmpfile();
        int saved = dup(1);
        size_t n;

        ck_assert_ptr_nonnull(f);
        fflush(stdout);
        ck_assert_int_ge(dup2(fileno(f), 1), 0);
        ck_assert_int_eq(fn(), 1);
        fflush(stdout);
        ck_assert_int_ge(dup2(saved, 1), 0);
        close(saved);
        rewind(f);
        n = fread(buf, 1, len - 1, f);
        buf[n] = '\0';
        fclose(f);
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
}
END_TEST

/* The file's syntax as sortd.conf(5) gives it: comments, blanks, spaces around either side,
   CRLF, the last of a setting given twice, no newline at the end. */
START_TEST(file_syntax)
{
        char path[] = "/tmp/sortd-config-XXXXXX";
        const char text[] = "# comment\r\n\r\n  capacity=2K \r\n\tcapacity = 3K\r\n"
                            "max-pipeline\t=\t7";
        int fd = mkstemp(path);
        sortd__config cfg;

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
        close(fd);
        ck_assert_int_eq(LOAD(&cfg, "--config", path), 0);
        ck_assert_uint_eq(cfg.capacity, 3072);
        ck_assert_uint_eq(cfg.max_pipeline, 7);
        unlink(path);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("config");
        TCase *tc = tcase_create("config");

        tcase_add_test(tc, counts_take_no_suffix);
        tcase_add_test(tc, documented_defaults);
        tcase_add_test(tc, file_syntax);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
