/*
 * A sort on the caller's device memory (sortd_engine_sort_device): which of the
 * engine's ping-pong buffers the caller's arrays replace, and the copies
 * that leaves to do. One rule for both CUDA engines, in a header without CUDA
 * so that the emulated-kernel tests (tests/kernels/cuda/test_emulated_kernels)
 * run it in CI with the cuda engine's dispatch.
 *
 * The caller's arrays become buffer 0 and the engine's stay buffer 1: every
 * pass reads one buffer and writes the other, so a sort with an even number of
 * passes ends in the caller's arrays and copies nothing; an odd one ends in the
 * engine's buffer and is copied back on the device. 8- and 16-bit keys are
 * widened to 32 bits and ping-pong at that width, n * 4 bytes a buffer, more
 * than the caller's n * key_bytes: their keys are copied into the engine's
 * buffer 0 and the result back out, while their values still use the
 * caller's array.
 */
#ifndef SORTD_CUDA_CALLER_BUFFERS_H
#define SORTD_CUDA_CALLER_BUFFERS_H

#include <stddef.h>

namespace sortd_cuda
{

/* The caller's side of a sort_device: device arrays, validated by engine.c. */
struct CallerArrays {
        void *keys;
        void *vals; /* NULL without a payload */
        size_t n;
        unsigned key_bytes, val_bytes;
        bool argsort;
};

/*
 * Sorts c on the device with sort(b, &key_buf, &val_buf), an engine's sort of
 * the keys (and values) in b.keys[0] (b.vals[0]) that reports which buffer
 * of b holds each result. Bufs is the engine's set of buffers (members
 * keys[2] and vals[2]); own is the engine's. Backend: bool copy_device(dst,
 * src, bytes) and bool clear(dev, bytes), both asynchronous on the sort's
 * stream. Returns false once a step fails (the backend has the error).
 */
template <class Backend, class Bufs, class Sort>
bool sort_in_caller_buffers(Backend &be, const Bufs &own, const CallerArrays &c, Sort sort)
{
        int key_buf = 0, val_buf = 0;
        Bufs b = own;

        if (c.n < 2) /* nothing moves; an argsort's one index is 0, in either width */
                return !c.argsort || be.clear(c.vals, c.val_bytes);
        if (c.key_bytes >= 4)
                b.keys[0] = c.keys;
        else if (!be.copy_device(b.keys[0], c.keys, c.n * c.key_bytes))
                return false;
        if (c.val_bytes)
                b.vals[0] = c.vals;
        if (!sort(b, &key_buf, &val_buf))
                return false;
        if (b.keys[key_buf] != c.keys &&
            !be.copy_device(c.keys, b.keys[key_buf], c.n * c.key_bytes))
                return false;
        return !c.val_bytes || b.vals[val_buf] == c.vals ||
               be.copy_device(c.vals, b.vals[val_buf], c.n * c.val_bytes);
}

} /* namespace sortd_cuda */

#endif
