/*
 * Host<->device copies of pageable memory through a few pinned staging slots,
 * overlapped: the host copies chunk k into a slot while the DMA engine moves
 * chunk k - 1 out of another (uploads), or moves chunk k + 1 into a slot while
 * the host copies chunk k out of its slot (downloads). Memory that is pinned
 * already is DMA'd directly.
 *
 * Why: the driver copies pageable memory through its own bounce buffers at
 * 7.8 GB/s up and 13 GB/s down on our H100 host, pinned memory at 55 GB/s
 * (docs/performance.md, "NVIDIA H100 80GB HBM3": "Copies and pinning").
 *
 * Only the schedule is here, templated on its operations and free of CUDA, so
 * that tests/kernels/cuda/test_staging runs it in CI against operations that
 * record what happens and finish the DMAs whenever they like. The CUDA
 * operations (a stream, one event per slot, copy threads) are in
 * cuda_backend.cuh.
 *
 * Ops:
 *   bool pinned(const void *host, size_t bytes);  // DMA-able as it is
 *   bool host_copy(void *dst, const void *src, size_t bytes, Dir dir); // streamed(dir) or memcpy
 *   bool dma(void *dst, const void *src, size_t bytes, Dir dir); // queued, in order
 *   bool record(unsigned slot);  // marks the last DMA queued, the slot's
 *   bool wait(unsigned slot);    // returns once the slot's marked DMA has finished
 * An op that returns false has recorded its error; the transfer stops there.
 */
#ifndef SORTD_CUDA_STAGING_H
#define SORTD_CUDA_STAGING_H

#include <stddef.h>

#include "staging_copy.h"

namespace sortd_cuda
{

constexpr unsigned MAX_STAGING_SLOTS = 8;

enum class Dir { to_device, to_host };

/* Whether a direction's host copies stream their stores (staging_copy.h says why each does). */
constexpr bool STREAM_UP = SORTD_STREAM_UP;
constexpr bool STREAM_DOWN = SORTD_STREAM_DOWN;

constexpr bool streamed(Dir dir)
{
        return dir == Dir::to_device ? STREAM_UP : STREAM_DOWN;
}

/*
 * The slots and what they may still be doing, kept from one transfer to the next: a DMA that
 * an earlier transfer queued (the values' after the keys', or one a failed sort left behind)
 * may still read or fill a slot, and the host waits for it before it touches that slot.
 */
struct StagingSlots {
        unsigned char *mem;           /* slots * slot_bytes */
        size_t slot_bytes;            /* > 0 */
        unsigned slots;               /* 1 .. MAX_STAGING_SLOTS */
        unsigned next;                /* the slot the next chunk takes: round robin */
        bool busy[MAX_STAGING_SLOTS]; /* a DMA queued on it may not have finished */

        unsigned char *slot(unsigned s) const
        {
                return mem + s * slot_bytes;
        }
};

template <class Ops> class StagedCopy
{
      public:
        StagedCopy(Ops &ops, StagingSlots &s) : ops_(ops), s_(s)
        {
        }

        /* Queues dev[0, bytes) = host[0, bytes); host may be reused on return. */
        bool upload(void *dev, const void *host, size_t bytes)
        {
                if (bytes == 0)
                        return true;
                if (ops_.pinned(host, bytes))
                        return ops_.dma(dev, host, bytes, Dir::to_device);
                for (size_t off = 0; off < bytes; off += s_.slot_bytes) {
                        size_t len = chunk(bytes, off);
                        unsigned s = s_.next;

                        s_.next = (s + 1) % s_.slots;
                        if (!settle(s) ||
                            !ops_.host_copy(s_.slot(s), (const unsigned char *)host + off, len,
                                            Dir::to_device) ||
                            !queue(s, (unsigned char *)dev + off, s_.slot(s), len, Dir::to_device))
                                return false;
                }
                return true;
        }

        /*
         * host[0, bytes) = dev[0, bytes), after everything queued before. Staged, it has arrived
         * on return; pinned host memory is DMA'd directly and has arrived once the stream has.
         */
        bool download(void *host, const void *dev, size_t bytes)
        {
                size_t chunks = (bytes + s_.slot_bytes - 1) / s_.slot_bytes;
                unsigned first = s_.next;

                if (bytes == 0)
                        return true;
                if (ops_.pinned(host, bytes))
                        return ops_.dma(host, dev, bytes, Dir::to_host);
                s_.next = (unsigned)((first + chunks) % s_.slots);
                for (size_t k = 0; k < chunks && k < s_.slots; k++)
                        if (!fetch(dev, bytes, k, first))
                                return false;
                for (size_t k = 0; k < chunks; k++) {
                        size_t off = k * s_.slot_bytes;
                        unsigned s = (unsigned)((first + k) % s_.slots);

                        if (!settle(s) ||
                            !ops_.host_copy((unsigned char *)host + off, s_.slot(s),
                                            chunk(bytes, off), Dir::to_host) ||
                            (k + s_.slots < chunks && !fetch(dev, bytes, k + s_.slots, first)))
                                return false;
                }
                return true;
        }

      private:
        Ops &ops_;
        StagingSlots &s_;

        size_t chunk(size_t bytes, size_t off) const
        {
                return bytes - off < s_.slot_bytes ? bytes - off : s_.slot_bytes;
        }

        /* Waits until no DMA uses slot s: the host may touch it. */
        bool settle(unsigned s)
        {
                if (!s_.busy[s])
                        return true;
                if (!ops_.wait(s))
                        return false;
                s_.busy[s] = false;
                return true;
        }

        /* Busy before the DMA is queued, so no failure leaves a queued DMA on a slot marked
           idle (after any failure the engine also drains its stream). */
        bool queue(unsigned s, void *dst, const void *src, size_t len, Dir dir)
        {
                s_.busy[s] = true;
                return ops_.dma(dst, src, len, dir) && ops_.record(s);
        }

        /* Queues chunk k of a download into its slot; stream order puts it after the slot's
           earlier DMAs, so the host need not wait first. */
        bool fetch(const void *dev, size_t bytes, size_t k, unsigned first)
        {
                size_t off = k * s_.slot_bytes;
                unsigned s = (unsigned)((first + k) % s_.slots);

                return queue(s, s_.slot(s), (const unsigned char *)dev + off, chunk(bytes, off),
                             Dir::to_host);
        }
};

} /* namespace sortd_cuda */

#endif
