/*
 * Sorts repeated at one shape replay a CUDA graph of their launch sequence, instantiated the
 * first time: one submission, where the sequence is a memset or two, a histogram, a scan and a
 * binning launch a digit place, each a few microseconds of launch overhead at the sizes where
 * that overhead is what a sort costs (policy.cuh: GRAPHS).
 *
 * A graph holds its launches' arguments, so a shape is everything they are made of: the
 * request (n, key and payload widths, key map, bit range) and the arrays (the engine's own
 * buffers for a host sort, the caller's for a sort on device memory). A region a client sorts
 * again and again keeps its address, and so its graph. Only sorts with no host wait inside
 * (dispatch.cuh: under ROUND_TRIP_MIN keys) can be captured.
 */
#ifndef SORTD_CUDA_GRAPH_CACHE_H
#define SORTD_CUDA_GRAPH_CACHE_H

#include "cuda_backend.cuh"

namespace sortd_cuda
{

struct GraphShape {
        SortRequest r;
        const void *keys, *vals; /* the caller's device arrays, or NULL for the engine's own */
};

inline bool same_shape(const GraphShape &a, const GraphShape &b)
{
        const SortRequest &x = a.r, &y = b.r;

        return x.n == y.n && x.key_bytes == y.key_bytes && x.val_bytes == y.val_bytes &&
               x.argsort == y.argsort && x.kind == y.kind && x.descending == y.descending &&
               x.begin_bit == y.begin_bit && x.end_bit == y.end_bit && a.keys == b.keys &&
               a.vals == b.vals;
}

/* Whether a sort of shape s can be, and is worth, a graph: Onesweep without the histogram's
   wait; the small sort is one launch already. */
inline bool graph_worth(const GraphShape &s)
{
        return GRAPHS && s.r.n > SMALL_SORT_MAX && s.r.n < ROUND_TRIP_MIN_KEYS;
}

class GraphCache
{
      public:
        /*
         * Queues dispatch(res), a sort of shape s, on be's stream; for a shape worth it, as the
         * graph of an earlier run of that shape: the first run of a shape is captured,
         * instantiated (in place of the least recently used graph) and launched. *res says
         * where the sorted keys and values are, as dispatch left it.
         */
        template <class Dispatch>
        bool run(CudaBackend &be, const GraphShape &s, SortResult *res, Dispatch dispatch)
        {
                if (!graph_worth(s))
                        return dispatch(res);
                Entry *e = find(s);

                if (!e && !(e = capture(be, s, dispatch)))
                        return false;
                e->used = ++clock_;
                *res = e->res;
                return be.check(cudaGraphLaunch(e->exec, be.stream), "cudaGraphLaunch");
        }

        /* Before the engine's stream and memory go: every graph launched has been waited for. */
        void clear()
        {
                for (Entry &e : entries_)
                        if (e.exec) {
                                (void)cudaGraphExecDestroy(e.exec);
                                e.exec = nullptr;
                        }
        }

      private:
        struct Entry {
                GraphShape shape;
                SortResult res;
                cudaGraphExec_t exec;
                uint64_t used;
        };

        Entry *find(const GraphShape &s)
        {
                for (Entry &e : entries_)
                        if (e.exec && same_shape(e.shape, s))
                                return &e;
                return nullptr;
        }

        /* An empty entry, or the least recently used. */
        Entry *victim()
        {
                Entry *v = &entries_[0];

                for (Entry &e : entries_) {
                        if (!e.exec)
                                return &e;
                        if (e.used < v->used)
                                v = &e;
                }
                return v;
        }

        template <class Dispatch> Entry *capture(CudaBackend &be, const GraphShape &s, Dispatch d)
        {
                cudaGraph_t g = nullptr;
                SortResult res;
                Entry *e;

                if (!be.check(cudaStreamBeginCapture(be.stream, cudaStreamCaptureModeThreadLocal),
                              "cudaStreamBeginCapture"))
                        return nullptr;
                bool queued = d(&res);
                cudaError_t rc = cudaStreamEndCapture(be.stream, &g);

                if (!queued || !be.check(rc, "cudaStreamEndCapture")) {
                        if (g)
                                (void)cudaGraphDestroy(g);
                        return nullptr;
                }
                e = victim();
                if (e->exec)
                        (void)cudaGraphExecDestroy(e->exec);
                e->exec = nullptr;
                rc = cudaGraphInstantiate(&e->exec, g, 0);
                (void)cudaGraphDestroy(g);
                if (!be.check(rc, "cudaGraphInstantiate")) {
                        e->exec = nullptr;
                        return nullptr;
                }
                e->shape = s;
                e->res = res;
                return e;
        }

        Entry entries_[GRAPH_CACHE_SIZE] = {};
        uint64_t clock_ = 0;
};

} /* namespace sortd_cuda */

#endif
