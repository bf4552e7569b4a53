/*
 * daemon/base/log.c alone: the journal's "<N>" prefix only when stderr is the stream JOURNAL_STREAM
 * names, else "sortd: LEVEL: ".
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "suite.h"

/* One error logged with JOURNAL_STREAM set to journal (NULL: to stderr's own device and
   inode), stderr a file; what it wrote, in buf. */
static void log_one(const char *journal, char *buf, size_t len)
{
        FILE *f = tmpfile();
        int saved = dup(2);
        struct stat st;
        char env[64];
        size_t n;

        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fstat(fileno(f), &st), 0);
        snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino);
        setenv("JOURNAL_STREAM", journal ? journal : env, 1);
        fflush(stderr);
        ck_assert_int_ge(dup2(fileno(f), 2), 0);
        sortd__log(SORTD__LOG_ERR, "broken %d", 7);
        fflush(stderr);
        ck_assert_int_ge(dup2(saved, 2), 0);
        close(saved);
        unsetenv("JOURNAL_STREAM");
        rewind(f);
        n = fread(buf, 1, len - 1, f);
        buf[n] = '\0';
        fclose(f);
}

/* systemd.exec(5): JOURNAL_STREAM is inherited, so it is the journal only where stderr is the
   very stream it names. */
START_TEST(journal_prefix_only_on_the_journal)
{
        char out[256];

        log_one(NULL, out, sizeof(out));
        ck_assert_str_eq(out, "<3>broken 7\n");
        log_one("0:0", out, sizeof(out));
        ck_assert_str_eq(out, "sortd: error: broken 7\n");
        log_one("junk", out, sizeof(out));
        ck_assert_str_eq(out, "sortd: error: broken 7\n");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("log");
        TCase *tc = tcase_create("log");

        tcase_add_test(tc, journal_prefix_only_on_the_journal);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
