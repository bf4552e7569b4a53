#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "pool.h"

/*
 * Lock order: only one lock, p->lock. Workers sleep on `wake` until the
 * generation changes; the caller sleeps on `done` until `pending` reaches 0.
 */
struct sortd__pool {
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_cond_t done;
        unsigned long generation;
        unsigned pending;
        unsigned active; /* threads taking part in the current run */
        bool stopping;
        sortd__pool_fn fn;
        void *arg;
        unsigned nthreads;
        unsigned started; /* workers created (nthreads - 1 when complete) */
        pthread_t *workers;
};

struct worker_arg {
        sortd__pool *pool;
        unsigned tid;
};

static void *worker_main(void *opaque)
{
        sortd__pool *p = ((struct worker_arg *)opaque)->pool;
        unsigned tid = ((struct worker_arg *)opaque)->tid;
        unsigned long seen = 0;

        free(opaque);
        pthread_mutex_lock(&p->lock);
        for (;;) {
                while (p->generation == seen && !p->stopping)
                        pthread_cond_wait(&p->wake, &p->lock);
                if (p->stopping)
                        break;
                seen = p->generation;
                if (tid >= p->active)
                        continue;
                sortd__pool_fn fn = p->fn;
                void *arg = p->arg;
                unsigned active = p->active;
                pthread_mutex_unlock(&p->lock);
                fn(arg, tid, active);
                pthread_mutex_lock(&p->lock);
                if (--p->pending == 0)
                        pthread_cond_signal(&p->done);
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

unsigned sortd__online_cpus(void)
{
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        return n > 0 ? (unsigned)n : 1;
}

int sortd__pool_create(unsigned nthreads, sortd__pool **out)
{
        sortd__pool *p;

        if (nthreads == 0)
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->nthreads = nthreads;
        p->workers = calloc(nthreads, sizeof(*p->workers));
        if (!p->workers) {
                free(p);
                return -ENOMEM;
        }
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->wake, NULL);
        pthread_cond_init(&p->done, NULL);
        for (unsigned i = 1; i < nthreads; i++) {
                struct worker_arg *a = malloc(sizeof(*a));
                int r = a ? 0 : ENOMEM;

                if (a) {
                        *a = (struct worker_arg){p, i};
                        r = pthread_create(&p->workers[i], NULL, worker_main, a);
                        if (r)
                                free(a);
                }
                if (r) {
                        sortd__pool_destroy(p);
                        return -r;
                }
                p->started++;
        }
        *out = p;
        return 0;
}

void sortd__pool_run(sortd__pool *p, unsigned nthreads, sortd__pool_fn fn, void *arg)
{
        if (nthreads <= 1) {
                fn(arg, 0, 1);
                return;
        }
        pthread_mutex_lock(&p->lock);
        p->fn = fn;
        p->arg = arg;
        p->active = nthreads;
        p->pending = nthreads - 1;
        p->generation++;
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);

        fn(arg, 0, nthreads);

        pthread_mutex_lock(&p->lock);
        while (p->pending)
                pthread_cond_wait(&p->done, &p->lock);
        pthread_mutex_unlock(&p->lock);
}

unsigned sortd__pool_size(const sortd__pool *p)
{
        return p->nthreads;
}

void sortd__pool_destroy(sortd__pool *p)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
        for (unsigned i = 1; i <= p->started; i++)
                pthread_join(p->workers[i], NULL);
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->done);
        pthread_mutex_destroy(&p->lock);
        free(p->workers);
        free(p);
}
