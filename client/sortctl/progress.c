/* See progress.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

#define REDRAW_MS 100

struct sc_progress {
        pthread_mutex_t lock; /* guards everything below; the thread draws under it */
        pthread_cond_t wake;
        pthread_t thread;
        const char *phase;
        uint64_t done, total;
        double start;
        bool visible, drawn, stop;
};

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void draw(sc_progress *p)
{
        double mib = 1024.0 * 1024.0, t = now_s() - p->start;

        if (!p->visible && t * 1000 < SC_PROGRESS_DELAY_MS)
                return;
        p->visible = true;
        if (p->total)
                fprintf(stderr, "\r\033[Ksortctl: %-9s %8.1f / %.1f MiB %3.0f%%  %6.1f s", p->phase,
                        p->done / mib, p->total / mib, 100.0 * p->done / p->total, t);
        else
                fprintf(stderr, "\r\033[Ksortctl: %-9s %6.1f s", p->phase, t);
        fflush(stderr);
        p->drawn = true;
}

static void *run(void *arg)
{
        sc_progress *p = arg;
        struct timespec until;

        pthread_mutex_lock(&p->lock);
        while (!p->stop) {
                draw(p);
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += REDRAW_MS * 1000000L;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&p->wake, &p->lock, &until);
        }
        if (p->drawn)
                fputs("\r\033[K", stderr);
        fflush(stderr);
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

sc_progress *sc_progress_start(bool quiet, uint64_t input_bytes)
{
        sc_progress *p;

        if (quiet || !isatty(STDOUT_FILENO) || !isatty(STDERR_FILENO))
                return NULL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return NULL; /* the display is a convenience: the sort goes on without it */
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->wake, NULL);
        p->phase = "starting";
        p->start = now_s();
        p->visible = input_bytes >= SC_PROGRESS_BYTES;
        if (pthread_create(&p->thread, NULL, run, p) != 0) {
                pthread_cond_destroy(&p->wake);
                pthread_mutex_destroy(&p->lock);
                free(p);
                return NULL;
        }
        return p;
}

void sc_progress_phase(sc_progress *p, const char *phase, uint64_t total)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->lock);
        p->phase = phase;
        p->done = 0;
        p->total = total;
        draw(p); /* now, so that no phase goes by unseen between two redraws */
        pthread_mutex_unlock(&p->lock);
}

void sc_progress_set(sc_progress *p, uint64_t done)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->lock);
        p->done = done;
        pthread_mutex_unlock(&p->lock);
}

void sc_progress_add(sc_progress *p, uint64_t bytes)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->lock);
        p->done += bytes;
        pthread_mutex_unlock(&p->lock);
}

void sc_progress_end(sc_progress *p)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->lock);
        p->stop = true;
        pthread_cond_signal(&p->wake);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->thread, NULL);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        free(p);
}
