/*
 * The SIMT emulator's scheduler: blocks of fibers, barriers and warp
 * exchanges. See simt.h for what it promises.
 */
#include "simt.h"

#include <boost/context/fiber.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace ctx = boost::context;

namespace simt
{

namespace
{

/* Kernels keep a few dozen registers' worth of locals; 64 KiB is ample and
   a thousand resident threads then need 64 MiB. */
constexpr size_t STACK_BYTES = 64 * 1024;
/* Above a GPU's 48 KiB of static shared memory per block, so a kernel that
   fits a GPU fits here. */
constexpr size_t SHARED_BYTES = 64 * 1024;
/* Blocks run at random relative speeds, so a block that took an early tile
   can fall behind later ones and their look-backs must wait for it. */
constexpr unsigned MAX_SPEED = 64;

/* Stacks are reused across blocks and launches: no allocation per thread. */
class stack_pool
{
      public:
        ~stack_pool()
        {
                for (void *p : free_)
                        std::free(p);
        }
        ctx::stack_context allocate()
        {
                void *p;

                if (free_.empty()) {
                        p = std::malloc(STACK_BYTES);
                        if (!p) {
                                std::fprintf(stderr, "simt: out of memory for a fiber stack\n");
                                std::abort();
                        }
                } else {
                        p = free_.back();
                        free_.pop_back();
                }
                ctx::stack_context sc;
                sc.size = STACK_BYTES;
                sc.sp = static_cast<char *>(p) + STACK_BYTES;
                return sc;
        }
        void deallocate(ctx::stack_context &sc)
        {
                free_.push_back(static_cast<char *>(sc.sp) - sc.size);
        }

      private:
        std::vector<void *> free_;
};

/* The allocator a fiber holds: a handle on the pool. */
struct pool_ref {
        stack_pool *pool;
        ctx::stack_context allocate()
        {
                return pool->allocate();
        }
        void deallocate(ctx::stack_context &sc)
        {
                pool->deallocate(sc);
        }
};

struct block_ctx;

} /* namespace */

struct thread_ctx {
        dim3 idx;
        unsigned lane, warp;
        block_ctx *block;
        size_t shared_cursor;
        bool done;
        ctx::fiber self;  /* where the scheduler resumes this thread */
        ctx::fiber sched; /* where this thread returns to the scheduler */
};

namespace
{

/* Two deposit sets, used by alternate generations: the lane that completes
   a collective may run ahead into the next one before its peers have read
   this one's deposits, but never two ahead. */
struct warp_ctx {
        unsigned arrived;
        unsigned mask;
        unsigned gen;
        uint64_t slots[2][32];
        std::vector<thread_ctx *> waiters;
};

struct block_ctx {
        dim3 idx;
        unsigned speed; /* 1..MAX_SPEED: how often its threads get picked */
        unsigned live;
        unsigned barrier_arrived;
        std::vector<thread_ctx *> barrier_waiters;
        std::vector<warp_ctx> warps;
        std::vector<thread_ctx> threads;
        alignas(128) unsigned char shared[SHARED_BYTES];
};

struct grid_state {
        dim3 grid, block;
        const std::function<void()> *body;
        std::vector<thread_ctx *> runnable;
        /* threads in a spin-wait, parked until global memory they may be
           waiting on changes (simt::wake_spinners) */
        std::vector<thread_ctx *> spinning;
        uint64_t rng;
};

config g_config;
stats g_stats;
stack_pool g_stacks;
grid_state *g_grid;
thread_ctx *g_current;

uint64_t next_random(grid_state &g)
{
        /* xorshift64*: reproducible from the seed, good enough to shuffle */
        g.rng ^= g.rng >> 12;
        g.rng ^= g.rng << 25;
        g.rng ^= g.rng >> 27;
        return g.rng * 2685821657736338717ull;
}

[[noreturn]] void die(const char *what)
{
        std::fprintf(stderr, "simt: %s\n", what);
        std::abort();
}

thread_ctx *me()
{
        if (!g_current)
                die("a device function ran outside simt::launch");
        return g_current;
}

/* Back to the scheduler; returns when someone made this thread runnable
   and the scheduler picked it. */
void suspend()
{
        thread_ctx *t = me();

        t->sched = std::move(t->sched).resume();
}

void make_runnable(thread_ctx *t)
{
        g_grid->runnable.push_back(t);
}

std::unique_ptr<block_ctx> start_block(grid_state &g, unsigned linear)
{
        auto b = std::make_unique<block_ctx>();
        unsigned n = g.block.x * g.block.y * g.block.z;

        b->idx = dim3(linear % g.grid.x, linear / g.grid.x % g.grid.y,
                      linear / (g.grid.x * g.grid.y));
        b->speed = 1u << (next_random(g) % 7);
        b->live = n;
        b->barrier_arrived = 0;
        b->warps.resize((n + 31) / 32);
        for (auto &w : b->warps) {
                w.arrived = 0;
                w.mask = 0;
                w.gen = 0;
        }
        b->threads.resize(n);
        for (unsigned i = 0; i < n; i++) {
                thread_ctx *t = &b->threads[i];

                t->idx =
                        dim3(i % g.block.x, i / g.block.x % g.block.y, i / (g.block.x * g.block.y));
                t->lane = i % 32;
                t->warp = i / 32;
                t->block = b.get();
                t->shared_cursor = 0;
                t->done = false;
                t->self = ctx::fiber(std::allocator_arg, pool_ref{&g_stacks},
                                     [t](ctx::fiber &&sched) {
                                             t->sched = std::move(sched);
                                             (*g_grid->body)();
                                             t->done = true;
                                             return std::move(t->sched);
                                     });
                g.runnable.push_back(t);
        }
        return b;
}

} /* namespace */

void set_config(const config &c)
{
        g_config = c;
}
stats &counters()
{
        return g_stats;
}
void reset_counters()
{
        g_stats = stats();
}

void launch(dim3 grid, dim3 block, const std::function<void()> &body)
{
        grid_state g;
        unsigned blocks = grid.x * grid.y * grid.z, next = 0;
        std::vector<std::unique_ptr<block_ctx>> resident;

        if (g_grid)
                die("simt::launch from inside a kernel");
        if ((block.x * block.y * block.z) % 32 != 0)
                die("block size must be a multiple of 32 threads");
        g.grid = grid;
        g.block = block;
        g.body = &body;
        g.rng = g_config.seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull + g_stats.launches;
        g_grid = &g;
        g_stats.launches++;
        cost_launch_begin(block.x * block.y * block.z, blocks);
        /* blocks enter in a shuffled order: hardware promises no order either */
        std::vector<unsigned> order(blocks);
        for (unsigned i = 0; i < blocks; i++)
                order[i] = i;
        for (unsigned i = blocks; i > 1; i--)
                std::swap(order[i - 1], order[next_random(g) % i]);

        for (;;) {
                while (next < blocks && resident.size() < g_config.resident_blocks)
                        resident.push_back(start_block(g, order[next++]));
                if (g.runnable.empty()) {
                        if (!g.spinning.empty())
                                die("deadlock: every resident thread spins or waits at a barrier, "
                                    "and none is left to publish what the spinners wait for");
                        if (!resident.empty())
                                die("deadlock: every resident thread waits at a barrier");
                        break;
                }
                size_t pick;
                thread_ctx *t;
                do {
                        pick = next_random(g) % g.runnable.size();
                        t = g.runnable[pick];
                } while (next_random(g) % MAX_SPEED >= t->block->speed);

                g.runnable[pick] = g.runnable.back();
                g.runnable.pop_back();
                g_current = t;
                g_stats.switches++;
                t->self = std::move(t->self).resume();
                g_current = nullptr;
                if (!t->done)
                        continue;
                block_ctx *b = t->block;
                /* a block leaves when its last thread ends; one that ends while
                   the others wait at __syncthreads would leave them hanging */
                if (--b->live == 0) {
                        for (size_t i = 0; i < resident.size(); i++)
                                if (resident[i].get() == b) {
                                        resident[i] = std::move(resident.back());
                                        resident.pop_back();
                                        break;
                                }
                } else if (b->barrier_arrived && b->barrier_arrived == b->live) {
                        die("a thread exited while its block waits at __syncthreads");
                }
        }
        cost_launch_end();
        g_grid = nullptr;
}

thread_ctx *current()
{
        return g_current;
}
uint64_t warp_key()
{
        const dim3 &b = me()->block->idx;

        return ((uint64_t)(b.z * g_grid->grid.y + b.y) * g_grid->grid.x + b.x) << 8 | me()->warp;
}
const dim3 &thread_idx()
{
        return me()->idx;
}
const dim3 &block_idx()
{
        return me()->block->idx;
}
const dim3 &block_dim()
{
        return g_grid->block;
}
const dim3 &grid_dim()
{
        return g_grid->grid;
}

void *block_shared_bytes(size_t bytes, size_t align)
{
        thread_ctx *t = me();
        size_t off = (t->shared_cursor + align - 1) / align * align;

        if (off + bytes > SHARED_BYTES)
                die("kernel asks for more shared memory than a block has");
        t->shared_cursor = off + bytes;
        return t->block->shared + off;
}

void yield()
{
        make_runnable(me());
        suspend();
}

void spin_pause()
{
        g_stats.spin_yields++;
        g_grid->spinning.push_back(me());
        suspend();
}

void wake_spinners()
{
        grid_state *g = g_grid;

        if (!g)
                return;
        for (thread_ctx *t : g->spinning)
                g->runnable.push_back(t);
        g->spinning.clear();
}

void syncthreads()
{
        thread_ctx *t = me();
        block_ctx *b = t->block;

        if (++b->barrier_arrived < b->live) {
                b->barrier_waiters.push_back(t);
                suspend();
                return;
        }
        b->barrier_arrived = 0;
        for (thread_ctx *w : b->barrier_waiters)
                make_runnable(w);
        b->barrier_waiters.clear();
        yield();
}

const uint64_t *warp_exchange(unsigned mask, uint64_t v)
{
        thread_ctx *t = me();
        warp_ctx &w = t->block->warps[t->warp];
        unsigned bit = 1u << t->lane;
        unsigned set = w.gen & 1;

        if (!(mask & bit))
                die("a lane took part in a warp collective its mask leaves out");
        if (w.arrived && w.mask != mask)
                die("lanes of one warp collective passed different masks");
        w.mask = mask;
        w.slots[set][t->lane] = v;
        w.arrived |= bit;
        if (w.arrived != mask) {
                w.waiters.push_back(t);
                suspend();
                return w.slots[set];
        }
        w.arrived = 0;
        w.gen++;
        for (thread_ctx *x : w.waiters)
                make_runnable(x);
        w.waiters.clear();
        yield();
        return w.slots[set];
}

void note_lookback(unsigned steps)
{
        g_stats.lookbacks++;
        if (steps > 1)
                g_stats.multi_step_lookbacks++;
}

} /* namespace simt */
