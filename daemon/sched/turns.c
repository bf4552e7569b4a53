/*
 * Turns (see turns.h). A turn ends on whichever thread ran it, and wakes the engine threads
 * of every queue the connection's sorts may wait in.
 */
#include <pthread.h>

#include "queue.h"
#include "turns.h"

void sortd__turns_take(sortd__turns *t, sortd__job *j, sortd__queue *const *wake, unsigned n)
{
        uint64_t turn = atomic_load(&t->given);

        /* Set before the first turn's job is queued: the queues' locks publish it. */
        if (turn == 0) {
                t->wake = wake;
                t->n_wake = n;
        }
        j->work.turns = t;
        j->work.turn = turn;
        atomic_store(&t->given, turn + 1);
}

bool sortd__turns_now(const sortd__job *j)
{
        return !j->work.turns || atomic_load(&j->work.turns->done) == j->work.turn;
}

/*
 * The next turn's job may wait in any of the queues, its engine thread asleep for want of
 * work that may start: each is woken under its lock, so none misses the turn. With no next
 * turn handed out yet, nobody waits for this one: the wake-ups (every lane's queue locked, its
 * idle engine thread woken for nothing) would only delay this sort's reply. Both counters are
 * sequentially consistent: if the load below misses a turn taken meanwhile, the increment of
 * done came first, and that turn's job, queued after it was taken, sees it when its queue
 * looks.
 */
void sortd__turns_end(sortd__job *j)
{
        sortd__turns *t = j->work.turns;

        if (!t)
                return;
        if (atomic_fetch_add(&t->done, 1) + 1 == atomic_load(&t->given))
                return;
        for (unsigned i = 0; i < t->n_wake; i++) {
                pthread_mutex_lock(&t->wake[i]->mu);
                pthread_cond_broadcast(&t->wake[i]->cv);
                pthread_mutex_unlock(&t->wake[i]->mu);
        }
}
