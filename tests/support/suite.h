/*
 * What every Check suite binary needs around its cases: the runner for main(), and an
 * allocation that fails the test instead of returning NULL.
 */
#ifndef SORTD_TESTS_SUITE_H
#define SORTD_TESTS_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include <check.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs s with Check's normal output and returns main's exit status (1 if a case failed). */
int run_suite(Suite *s);

/* The same, every case in this process: a forked child of a process that initialised CUDA
   cannot use CUDA. */
int run_suite_nofork(Suite *s);

/* n bytes (at least 1), 64-byte aligned; aborts the test when memory runs out. */
void *xmalloc(size_t n);

/* Fails the test, naming the first index out of order, unless k[0..n) is ascending. */
void check_sorted_u64(const uint64_t *k, size_t n);

#ifdef __cplusplus
}
#endif

#endif
