/*
 * Which of an engine's two ping-pong buffers holds a sort's result: one rule
 * per CUDA engine, in a header that compiles without a GPU so that
 * tests/kernels/cuda/test_result_buffer runs it in CI.
 *
 * Why a file of its own: on the first real GPU the cub engine read
 * cub::DoubleBuffer's selector as an index into its own pair when it is
 * relative to the DoubleBuffer's pair; 8- and 16-bit keys, which start in
 * keys[1], came back from the wrong buffer. That code had never run.
 */
#ifndef SORTD_CUDA_RESULT_BUFFER_H
#define SORTD_CUDA_RESULT_BUFFER_H

namespace sortd_cuda
{

/*
 * The cub engine: a cub::DoubleBuffer made over (bufs[first], bufs[first ^ 1])
 * ends with its result in its d_buffers[selector], so in bufs[first ^ selector].
 */
constexpr int cub_result_buffer(int first, int selector)
{
        return first ^ selector;
}

/*
 * Our dispatch: every binning pass, and the widening and narrowing of 8- and
 * 16-bit keys, reads buffer `from` and writes the other one.
 */
constexpr int pass_output(int from)
{
        return from ^ 1;
}

} /* namespace sortd_cuda */

#endif
