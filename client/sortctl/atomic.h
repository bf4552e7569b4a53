/*
 * Output files that appear whole or not at all: the data goes to a temporary file beside the
 * destination (mkstemp in its directory, so that rename cannot cross file systems), is
 * fsynced, and is renamed over the destination only on commit. A run that fails, or is
 * interrupted by SIGINT, SIGTERM or SIGHUP (or a write's SIGPIPE or SIGXFSZ) that it does not
 * ignore, removes its temporary files and leaves the destination as it was. A symlink's
 * target is replaced, and the link kept. A destination that is not a regular file (a
 * terminal, a pipe, a device) cannot be replaced: it is written in place (sc_out_in_place),
 * and the caller orders it against the temporary files (sc_outputs_write).
 */
#ifndef SORTCTL_ATOMIC_H
#define SORTCTL_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>

/* The most outputs one run writes. */
#define SC_MAX_OUTPUTS 4

typedef struct sc_out sc_out;

/* Fails (message recorded) when path names a descriptor (/dev/stdout, /dev/fd/N) that is not
   open for writing. Called before sortctl opens files of its own, which could take the
   number. */
int sc_out_check_descriptor(const char *path);
/* Creates the temporary file for path; returns SC_OK or the exit code (failure recorded). */
int sc_out_open(const char *path, sc_out **out);
int sc_out_write(sc_out *o, const void *buf, size_t len);
/* Whether o is no regular file and so is written in place (commit only frees it). */
bool sc_out_in_place(const sc_out *o);
/* Names, in o's failure messages, the outputs of before[n] already written in place (temporary
   files not yet renamed are not). */
void sc_out_written_before(sc_out *o, sc_out **before, int n);
/* Flushes, fsyncs and closes the temporary file: what is left to commit is one rename. */
int sc_out_finish(sc_out *o);
/* Commits the n finished files of o (NULL entries skipped) with those signals held
   off, so that a signal leaves all or none in place; stops at the first rename that fails,
   removes the temporary files left, and frees them all. */
int sc_out_commit_all(sc_out **o, int n);
/* Removes the temporary file and frees o. Accepts NULL. */
void sc_out_discard(sc_out *o);

#endif
