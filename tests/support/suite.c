#include <stdlib.h>

#include "suite.h"

static int run(Suite *s, enum fork_status fork)
{
        SRunner *sr = srunner_create(s);
        int failed;

        if (fork != CK_FORK_GETENV)
                srunner_set_fork_status(sr, fork);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}

int run_suite(Suite *s)
{
        return run(s, CK_FORK_GETENV);
}

int run_suite_nofork(Suite *s)
{
        return run(s, CK_NOFORK);
}

void *xmalloc(size_t n)
{
        void *p = aligned_alloc(64, ((n ? n : 1) + 63) & ~(size_t)63);

        ck_assert_ptr_nonnull(p);
        return p;
}

/* One assertion, not one per key: each ck_assert talks to Check's parent process. */
void check_sorted_u64(const uint64_t *k, size_t n)
{
        size_t i = 1;

        while (i < n && k[i - 1] <= k[i])
                i++;
        ck_assert_msg(i >= n, "not sorted at %zu", i);
}
