/*
 * The stand-in CUDA runtime's graphs (cuda_runtime.h): what an engine that captures its work
 * once and launches it many times relies on, and what must fail so that a test catches an engine
 * that waits inside a capture. No engine here: copies, memsets and a small kernel on one stream.
 */
#include "simt.h" /* first: the kernel compiles against it */

#include "cuda_runtime.h"

#include <check.h>

#include <cstdint>
#include <cstring>

extern "C" {
#include "suite.h"
}

namespace
{

constexpr unsigned N = 64;

/* Adds one to each of N words: its launches are what a graph replays. */
void add_one(uint32_t *p)
{
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x;

        if (i < N)
                p[i] += 1;
}

struct Fixture {
        cudaStream_t s;
        uint32_t *dev, *pinned;
};

Fixture setup()
{
        Fixture f;

        ck_assert_int_eq(cudaStreamCreate(&f.s), cudaSuccess);
        ck_assert_int_eq(cudaMalloc((void **)&f.dev, N * 4), cudaSuccess);
        ck_assert_int_eq(cudaMallocHost((void **)&f.pinned, N * 4), cudaSuccess);
        return f;
}

void teardown(Fixture &f)
{
        cudaFreeHost(f.pinned);
        cudaFree(f.dev);
        cudaStreamDestroy(f.s);
}

/* memset the words to 0, add one, copy them out: one graph. */
cudaGraph_t capture_sequence(Fixture &f)
{
        cudaGraph_t g = nullptr;
        cudaStreamCaptureStatus st;
        uint32_t *dev = f.dev;

        ck_assert_int_eq(cudaStreamBeginCapture(f.s, cudaStreamCaptureModeGlobal), cudaSuccess);
        ck_assert_int_eq(cudaStreamIsCapturing(f.s, &st), cudaSuccess);
        ck_assert_int_eq(st, cudaStreamCaptureStatusActive);
        ck_assert_int_eq(cudaMemsetAsync(dev, 0, N * 4, f.s), cudaSuccess);
        ck_assert_int_eq(launch(f.s, dim3(2), dim3(32), [dev] { add_one(dev); }), cudaSuccess);
        ck_assert_int_eq(cudaMemcpyAsync(f.pinned, dev, N * 4, cudaMemcpyDeviceToHost, f.s),
                         cudaSuccess);
        ck_assert_int_eq(cudaStreamEndCapture(f.s, &g), cudaSuccess);
        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(cudaStreamIsCapturing(f.s, &st), cudaSuccess);
        ck_assert_int_eq(st, cudaStreamCaptureStatusNone);
        return g;
}

void check_words(const uint32_t *p, uint32_t want)
{
        for (unsigned i = 0; i < N; i++)
                ck_assert_uint_eq(p[i], want);
}

/* Captured ops run only when the graph is launched, once per launch, in capture order. */
START_TEST(test_capture_replay)
{
        Fixture f = setup();
        cudaGraphExec_t exec = nullptr;

        memset(f.pinned, 0xee, N * 4);
        reset_counts();
        cudaGraph_t g = capture_sequence(f);

        /* Nothing ran, and nothing was counted as issued, at capture. */
        ck_assert_int_eq(cudaStreamSynchronize(f.s), cudaSuccess);
        check_words(f.pinned, 0xeeeeeeeeu);
        ck_assert_uint_eq(control().launches, 0);
        ck_assert_uint_eq(control().pinned_copies, 0);

        ck_assert_int_eq(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
        ck_assert_int_eq(cudaGraphLaunch(exec, f.s), cudaSuccess);
        ck_assert_int_eq(cudaStreamSynchronize(f.s), cudaSuccess);
        check_words(f.pinned, 1);

        /* Again: the memset comes first, so 1 again, not 2; the ops are issued twice. A second
           launch without the memset would show as 2. */
        memset(f.pinned, 0, N * 4);
        ck_assert_int_eq(cudaGraphLaunch(exec, f.s), cudaSuccess);
        check_words(f.pinned, 0); /* queued, not run before the host waits */
        ck_assert_int_eq(cudaStreamSynchronize(f.s), cudaSuccess);
        check_words(f.pinned, 1);
        ck_assert_uint_eq(control().launches, 2);
        ck_assert_uint_eq(control().pinned_copies, 2);
        ck_assert_uint_eq(control().graph_launches, 2);

        ck_assert_int_eq(cudaGraphExecDestroy(exec), cudaSuccess);
        ck_assert_int_eq(cudaGraphDestroy(g), cudaSuccess);
        teardown(f);
}
END_TEST

/* A kernel without its memset: each launch of the graph adds one more, so the launches of one
   exec are separate runs of the same ops, on any stream of the device. */
START_TEST(test_launch_twice)
{
        Fixture f = setup();
        cudaStream_t other;
        cudaGraph_t g = nullptr;
        cudaGraphExec_t exec = nullptr;
        uint32_t *dev = f.dev;

        ck_assert_int_eq(cudaStreamCreate(&other), cudaSuccess);
        ck_assert_int_eq(cudaMemsetAsync(dev, 0, N * 4, f.s), cudaSuccess);
        ck_assert_int_eq(cudaStreamSynchronize(f.s), cudaSuccess);
        ck_assert_int_eq(cudaStreamBeginCapture(f.s, cudaStreamCaptureModeGlobal), cudaSuccess);
        ck_assert_int_eq(launch(f.s, dim3(2), dim3(32), [dev] { add_one(dev); }), cudaSuccess);
        ck_assert_int_eq(cudaStreamEndCapture(f.s, &g), cudaSuccess);
        ck_assert_int_eq(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
        ck_assert_int_eq(cudaGraphLaunch(exec, f.s), cudaSuccess);
        ck_assert_int_eq(cudaGraphLaunch(exec, f.s), cudaSuccess);
        ck_assert_int_eq(cudaGraphLaunch(exec, other), cudaSuccess);
        ck_assert_int_eq(cudaStreamSynchronize(f.s), cudaSuccess);
        ck_assert_int_eq(cudaStreamSynchronize(other), cudaSuccess);
        ck_assert_int_eq(cudaMemcpyAsync(f.pinned, dev, N * 4, cudaMemcpyDeviceToHost, f.s),
                         cudaSuccess);
        ck_assert_int_eq(cudaStreamSynchronize(f.s), cudaSuccess);
        check_words(f.pinned, 3);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(g);
        cudaStreamDestroy(other);
        teardown(f);
}
END_TEST

/* Every wait for a capturing stream fails and invalidates the capture: no graph comes of it. */
START_TEST(test_wait_invalidates)
{
        Fixture f = setup();
        cudaEvent_t ev;
        cudaGraph_t g = nullptr;
        cudaStreamCaptureStatus st;
        uint32_t pageable[N];
        int i;

        ck_assert_int_eq(cudaEventCreate(&ev), cudaSuccess);
        for (i = 0; i < 3; i++) {
                ck_assert_int_eq(cudaStreamBeginCapture(f.s, cudaStreamCaptureModeGlobal),
                                 cudaSuccess);
                ck_assert_int_eq(cudaMemsetAsync(f.dev, 0, N * 4, f.s), cudaSuccess);
                ck_assert_int_eq(cudaEventRecord(ev, f.s), cudaSuccess);
                if (i == 0)
                        ck_assert_int_eq(cudaStreamSynchronize(f.s),
                                         cudaErrorStreamCaptureUnsupported);
                else if (i == 1)
                        ck_assert_int_eq(cudaEventSynchronize(ev),
                                         cudaErrorStreamCaptureUnsupported);
                else /* pageable memory: the runtime stages it, waiting for the stream */
                        ck_assert_int_eq(cudaMemcpyAsync(pageable, f.dev, N * 4,
                                                         cudaMemcpyDeviceToHost, f.s),
                                         cudaErrorStreamCaptureUnsupported);
                ck_assert_int_eq(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
                ck_assert_int_eq(cudaStreamIsCapturing(f.s, &st), cudaSuccess);
                ck_assert_int_eq(st, cudaStreamCaptureStatusInvalidated);
                /* The stream's calls are refused until the capture ends. */
                ck_assert_int_eq(cudaMemsetAsync(f.dev, 0, N * 4, f.s),
                                 cudaErrorStreamCaptureInvalidated);
                g = (cudaGraph_t)1;
                ck_assert_int_eq(cudaStreamEndCapture(f.s, &g), cudaErrorStreamCaptureInvalidated);
                ck_assert_ptr_null(g);
                ck_assert_int_eq(cudaStreamIsCapturing(f.s, &st), cudaSuccess);
                ck_assert_int_eq(st, cudaStreamCaptureStatusNone);
        }
        /* The stream works again, and an event recorded outside a capture can be waited for. */
        ck_assert_int_eq(cudaEventRecord(ev, f.s), cudaSuccess);
        ck_assert_int_eq(cudaEventSynchronize(ev), cudaSuccess);
        ck_assert_int_eq(cudaStreamSynchronize(f.s), cudaSuccess);
        cudaGetLastError();
        cudaEventDestroy(ev);
        teardown(f);
}
END_TEST

/* End without begin, and begin twice, are the driver's illegal states. */
START_TEST(test_misuse)
{
        Fixture f = setup();
        cudaGraph_t g = nullptr;

        ck_assert_int_eq(cudaStreamEndCapture(f.s, &g), cudaErrorIllegalState);
        ck_assert_ptr_null(g);
        ck_assert_int_eq(cudaStreamBeginCapture(f.s, cudaStreamCaptureModeGlobal), cudaSuccess);
        ck_assert_int_eq(cudaStreamBeginCapture(f.s, cudaStreamCaptureModeRelaxed),
                         cudaErrorIllegalState);
        /* The refused begin left the first capture as it was: empty, and valid. */
        ck_assert_int_eq(cudaStreamEndCapture(f.s, &g), cudaSuccess);
        ck_assert_ptr_nonnull(g);
        cudaGraphDestroy(g);
        cudaGetLastError();
        teardown(f);
}
END_TEST

/* The counters, and an exec that outlives its graph until it is destroyed. */
START_TEST(test_counters_lifetime)
{
        Fixture f = setup();
        cudaGraphExec_t a = nullptr, b = nullptr;
        uint64_t live = control().live_graph_execs;

        reset_counts();
        ck_assert_uint_eq(control().live_graph_execs, live); /* reset_counts keeps it */
        cudaGraph_t g = capture_sequence(f);

        ck_assert_int_eq(cudaGraphInstantiate(&a, g, 0), cudaSuccess);
        ck_assert_int_eq(cudaGraphInstantiate(&b, g, 0), cudaSuccess);
        ck_assert_uint_eq(control().graphs_instantiated, 2);
        ck_assert_uint_eq(control().live_graph_execs, live + 2);
        ck_assert_int_eq(cudaGraphDestroy(g), cudaSuccess);

        memset(f.pinned, 0xee, N * 4);
        ck_assert_int_eq(cudaGraphLaunch(a, f.s), cudaSuccess);
        ck_assert_int_eq(cudaStreamSynchronize(f.s), cudaSuccess);
        check_words(f.pinned, 1);
        ck_assert_uint_eq(control().graph_launches, 1);

        ck_assert_int_eq(cudaGraphExecDestroy(a), cudaSuccess);
        ck_assert_uint_eq(control().live_graph_execs, live + 1);
        ck_assert_int_eq(cudaGraphExecDestroy(b), cudaSuccess);
        ck_assert_uint_eq(control().live_graph_execs, live);
        ck_assert_uint_eq(control().graphs_instantiated, 2);
        teardown(f);
}
END_TEST

/* A fault is decided when a replayed launch is issued, not at capture: fail_launch_at counts
   the graph's launches, and the faulting one loses the device. */
START_TEST(test_replay_faults)
{
        Fixture f = setup();
        cudaGraph_t g = nullptr;
        cudaGraphExec_t exec = nullptr;
        uint32_t *dev = f.dev;

        reset_counts();
        control().fail_launch_at = 2;
        ck_assert_int_eq(cudaStreamBeginCapture(f.s, cudaStreamCaptureModeGlobal), cudaSuccess);
        ck_assert_int_eq(launch(f.s, dim3(2), dim3(32), [dev] { add_one(dev); }), cudaSuccess);
        ck_assert_int_eq(cudaStreamEndCapture(f.s, &g), cudaSuccess);
        ck_assert_uint_eq(control().fail_launch_at, 2); /* the capture launched nothing */
        ck_assert_int_eq(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
        ck_assert_int_eq(cudaGraphLaunch(exec, f.s), cudaSuccess);
        ck_assert_int_eq(cudaStreamSynchronize(f.s), cudaSuccess);
        ck_assert_int_eq(cudaGraphLaunch(exec, f.s), cudaSuccess);
        ck_assert_int_eq(cudaStreamSynchronize(f.s), cudaErrorIllegalAddress);
        ck_assert_int_eq(cudaGraphLaunch(exec, f.s), cudaErrorIllegalAddress);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(g);
        cudaStreamDestroy(f.s);
        /* The device stays lost (sticky) until the runtime starts again: for a run without
           forks (CK_FORK=no), start it again as a new process would. */
        reset_devices();
}
END_TEST

} /* namespace */

int main(void)
{
        Suite *s = suite_create("fake-graphs");
        TCase *tc = tcase_create("graphs");

        tcase_add_test(tc, test_capture_replay);
        tcase_add_test(tc, test_launch_twice);
        tcase_add_test(tc, test_wait_invalidates);
        tcase_add_test(tc, test_misuse);
        tcase_add_test(tc, test_counters_lifetime);
        tcase_add_test(tc, test_replay_faults);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
