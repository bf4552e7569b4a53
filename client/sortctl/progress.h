/*
 * The progress line of a long sort on a terminal: the phase (reading, sending, sorting,
 * receiving, writing), bytes done of the phase's total where sortctl can count them, and the
 * time so far, redrawn on stderr with \r by a thread of its own every 100 ms (the library's
 * calls block, so the main thread cannot draw while it waits for the daemon), and at once
 * when the phase changes.
 *
 * It is drawn only when stdout and stderr are both terminals, --quiet is not given, and the
 * input is at least SC_PROGRESS_BYTES or the run has already taken SC_PROGRESS_DELAY_MS: a
 * short run never flickers a line that a long one needs.
 */
#ifndef SORTCTL_PROGRESS_H
#define SORTCTL_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#define SC_PROGRESS_BYTES (16ull << 20)
#define SC_PROGRESS_DELAY_MS 500

typedef struct sc_progress sc_progress;

/* NULL (and every call below a no-op) when no line should be drawn: quiet or not a TTY. */
sc_progress *sc_progress_start(bool quiet, uint64_t input_bytes);
/* A new phase with total bytes to count (0: not counted). */
void sc_progress_phase(sc_progress *p, const char *phase, uint64_t total);
void sc_progress_add(sc_progress *p, uint64_t bytes);
/* The phase's bytes done so far, where the count comes from elsewhere (libsortd). */
void sc_progress_set(sc_progress *p, uint64_t done);
/* Stops the thread and erases the line. Accepts NULL. */
void sc_progress_end(sc_progress *p);

#endif
