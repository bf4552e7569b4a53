/*
 * Dispatch: the host-side sequence of an Onesweep sort over buffers already
 * on the device. Templated on a Backend so the CUDA engine (streams, real
 * launches) and the emulated-kernel tests (tests/kernels/cuda/test_emulated_kernels on
 * tests/support/simt) run the same code:
 *
 *   template <class... P, class... A>
 *   bool launch(void (*kernel)(P...), dim3 grid, dim3 block, A... args);
 *   bool launch_with(size_t dynamic_shared_bytes, kernel, grid, block, args...);
 *   bool clear(void *dev, size_t bytes);              // async memset 0
 *   bool to_host(void *host, const void *dev, size_t bytes); // waits
 *   bool copy_device(void *dst, const void *src, size_t bytes); // async
 *   unsigned sm_count();
 *
 * A backend that returns false has recorded its error; dispatch stops.
 */
#ifndef SORTD_CUDA_DISPATCH_CUH
#define SORTD_CUDA_DISPATCH_CUH

#include <stddef.h>

#include "../keys.h"
#include "caller_buffers.h"
#include "kernels.cuh"
#include "result_buffer.h"
#include "segments.h"

namespace sortd_cuda
{

/* Everything a sort touches on the device, allocated once for a capacity. */
struct DeviceBuffers {
        void *keys[2];          /* capacity * 8 bytes each */
        void *vals[2];          /* capacity * 8 bytes each */
        uint32_t *hist;         /* [MAX_PLACES][RADIX] */
        uint32_t *offsets;      /* [strips][MAX_PLACES][RADIX] */
        uint32_t *tile_tickets; /* [strips][MAX_PLACES] */
        uint32_t *status;       /* status_words(capacity) */
        uint32_t *hist_host;    /* host copy of hist (page-locked on a GPU) */
};

constexpr size_t TABLE = (size_t)MAX_PLACES * RADIX; /* a strip's counters */

template <class P32, class P64> constexpr uint32_t strip_keys()
{
        static_assert(P32::STRIP == P64::STRIP, "one strip size for both key widths");
        return P32::STRIP;
}

/* Strips of a sort of n keys (at least one, so that buffers exist). */
template <class P32, class P64> size_t strip_count(size_t n)
{
        return n > strip_keys<P32, P64>()
                       ? (n + strip_keys<P32, P64>() - 1) / strip_keys<P32, P64>()
                       : 1;
}

/* Status counters for the most tiles of one strip either key width can have, twice: binning
   launches take turns between two halves (OnesweepDispatch::status_half). */
template <class P32, class P64> size_t status_words(size_t capacity)
{
        size_t keys = capacity < strip_keys<P32, P64>() ? capacity : strip_keys<P32, P64>();
        size_t a = (keys + P32::MIN_TILE - 1) / P32::MIN_TILE;
        size_t b = (keys + P64::MIN_TILE - 1) / P64::MIN_TILE;

        return 2 * (a > b ? a : b) * RADIX;
}

/* A request as the kernels see it: keys in keys[0] at their own width,
   values (if any, not argsort) in vals[0]. */
struct SortRequest {
        uint32_t n;
        unsigned key_bytes; /* 1, 2, 4, 8 */
        unsigned val_bytes; /* 0, 4, 8 */
        bool argsort;
        sortd__twiddle tw; /* the key map of the key's own width */
        enum sortd__key_kind kind;
        bool descending;
        unsigned begin_bit, end_bit;
};

/* Where the sorted keys and values ended up. */
struct SortResult {
        int key_buf, val_buf;
};

constexpr unsigned CONVERT_THREADS = 256;

template <class Backend> unsigned elementwise_blocks(Backend &be, uint32_t n)
{
        uint64_t want = ((uint64_t)n + CONVERT_THREADS - 1) / CONVERT_THREADS;
        unsigned cap = be.sm_count() * 8;

        return want < cap ? (unsigned)want : cap;
}

template <class Policy, class K, class V, class Backend> class OnesweepDispatch
{
      public:
        OnesweepDispatch(Backend &be, const DeviceBuffers &b, const SortRequest &r,
                         sortd__twiddle tw, SortResult *res)
            : be_(be), b_(b), r_(r), tw_(tw), res_(res),
              strips_((unsigned)((r.n + (uint64_t)Policy::STRIP - 1) / Policy::STRIP))
        {
        }

        bool run()
        {
                unsigned places = (r_.end_bit - r_.begin_bit + RADIX_BITS - 1) / RADIX_BITS;
                unsigned active[MAX_PLACES], passes = 0;

                bool read_back = r_.n >= Policy::ROUND_TRIP_MIN;

                if (!histogram(places, read_back))
                        return false;
                /* a place whose keys all share one digit changes nothing */
                for (unsigned pl = 0; pl < places; pl++)
                        if (!read_back || !single_bin(b_.hist_host + pl * RADIX))
                                active[passes++] = pl;
                if (passes == 0 && r_.argsort)
                        return iota();
                launches_ = passes * strips_;
                for (unsigned i = 0; i < passes; i++)
                        if (!binning(active[i], i == 0, i + 1 == passes))
                                return false;
                return true;
        }

      private:
        using HP = typename Policy::histogram;
        using Val = typename std::conditional<std::is_same<V, void>::value, NoValue, V>::type;
        using Binning = AgentBinning<Policy, K, Val>;
        using BP = typename Binning::P;

        bool iota()
        {
                if constexpr (std::is_same<Val, NoValue>::value)
                        return true;
                else
                        return be_.launch(iota_kernel<Val>, dim3(elementwise_blocks(be_, r_.n)),
                                          dim3(CONVERT_THREADS), (Val *)b_.vals[res_->val_buf],
                                          r_.n);
        }

        bool single_bin(const uint32_t *h) const
        {
                for (int d = 0; d < RADIX; d++)
                        if (h[d])
                                return h[d] == r_.n;
                return true;
        }

        uint32_t strip_n(unsigned st) const
        {
                uint64_t rest = r_.n - (uint64_t)st * Policy::STRIP;

                return rest < Policy::STRIP ? (uint32_t)rest : Policy::STRIP;
        }

        unsigned tiles_of(unsigned st) const
        {
                return (unsigned)(((uint64_t)strip_n(st) + BP::TILE - 1) / BP::TILE);
        }

        /* The status counters of binning launch l: the two halves of b_.status take turns, so
           that each launch clears the next one's counters (agent_binning.cuh) and no memset
           comes between two launches, which would keep them from overlapping (PDL). A half
           holds the first strip's tiles, the most any strip has. */
        uint32_t *status_half(unsigned l) const
        {
                return b_.status + (size_t)(l % 2) * tiles_of(0) * RADIX;
        }

        /* One histogram of the whole input: its counts fit 32 bits, where
           only the look-back's are 30. Read back by the host (a wait for the
           stream) when read_back. */
        bool histogram(unsigned places, bool read_back)
        {
                unsigned tiles = (unsigned)(((uint64_t)r_.n + HP::TILE - 1) / HP::TILE);
                /* 8 blocks an SM hide the global loads' latency better than
                   2: +4% for a whole u32 sort on an H100 */
                unsigned blocks = be_.sm_count() * 8;

                if (blocks > tiles)
                        blocks = tiles;
                return be_.clear(b_.hist, sizeof(uint32_t) * TABLE) &&
                       be_.clear(b_.tile_tickets, sizeof(uint32_t) * strips_ * MAX_PLACES) &&
                       be_.launch(histogram_kernel<Policy, K>, dim3(blocks), dim3(HP::THREADS),
                                  (const K *)b_.keys[res_->key_buf], r_.n, b_.hist, tw_,
                                  r_.begin_bit, r_.end_bit, places) &&
                       be_.launch(scan_kernel<Policy>, dim3(places), dim3(32),
                                  (const uint32_t *)b_.hist, b_.offsets) &&
                       (!read_back ||
                        be_.to_host(b_.hist_host, b_.hist, sizeof(uint32_t) * places * RADIX));
        }

        /* One launch per strip, in order: a strip's last tile leaves where
           each digit's keys of the next strip go. */
        bool binning(unsigned place, bool first, bool last)
        {
                int kb = res_->key_buf, vb = res_->val_buf;

                for (unsigned st = 0; st < strips_; st++) {
                        size_t base = (size_t)st * Policy::STRIP;
                        uint32_t n = strip_n(st);
                        unsigned tiles = tiles_of(st);
                        BinningParams<K, Val> p;

                        p.keys_in = (const K *)b_.keys[kb] + base;
                        p.keys_out = (K *)b_.keys[pass_output(kb)];
                        p.vals_in = (const Val *)b_.vals[vb] + base;
                        p.vals_out = (Val *)b_.vals[pass_output(vb)];
                        p.n = n;
                        p.index_base = (uint32_t)base;
                        p.bins = b_.offsets + st * TABLE + place * RADIX;
                        p.next_bins = st + 1 < strips_
                                              ? b_.offsets + (st + 1) * TABLE + place * RADIX
                                              : nullptr;
                        p.status = status_half(launch_);
                        p.status_next =
                                launch_ + 1 < launches_ ? status_half(launch_ + 1) : nullptr;
                        p.next_tiles = launch_ + 1 < launches_ ? tiles_of((st + 1) % strips_) : 0;
                        p.tile_ticket = b_.tile_tickets + st * MAX_PLACES + place;
                        p.place = digit_place(r_.begin_bit, r_.end_bit, place);
                        p.tw_load = first ? tw_ : sortd__twiddle_identity();
                        p.tw_store = last ? tw_ : sortd__twiddle_identity();
                        p.gen_index = first && r_.argsort;
                        if ((launch_ == 0 &&
                             !be_.clear(p.status, sizeof(uint32_t) * tiles * RADIX)) ||
                            !be_.launch_with(dynamic_shared_bytes<typename Binning::TempStorage>(),
                                             binning_kernel<Policy, K, Val>, dim3(tiles),
                                             dim3(BP::THREADS), p))
                                return false;
                        launch_++;
                }
                res_->key_buf = pass_output(kb);
                if (!std::is_same<Val, NoValue>::value)
                        res_->val_buf = pass_output(vb);
                return true;
        }

        Backend &be_;
        const DeviceBuffers &b_;
        const SortRequest &r_;
        sortd__twiddle tw_; /* applied by the first pass, undone by the last */
        SortResult *res_;
        unsigned strips_;
        unsigned launch_ = 0, launches_ = 0; /* binning launches made, and to make */
};

template <class Policy, class K, class Backend>
bool dispatch_values(Backend &be, const DeviceBuffers &b, const SortRequest &r, sortd__twiddle tw,
                     SortResult *res)
{
        switch (r.val_bytes) {
        case 4:
                return OnesweepDispatch<Policy, K, uint32_t, Backend>(be, b, r, tw, res).run();
        case 8:
                return OnesweepDispatch<Policy, K, uint64_t, Backend>(be, b, r, tw, res).run();
        default:
                return OnesweepDispatch<Policy, K, void, Backend>(be, b, r, tw, res).run();
        }
}

template <class Narrow, class Backend>
bool convert(Backend &be, const DeviceBuffers &b, const SortRequest &r, SortResult *res, bool widen)
{
        int from = res->key_buf, to = pass_output(from);
        bool ok = widen ? be.launch(convert_keys_kernel<Narrow, uint32_t>,
                                    dim3(elementwise_blocks(be, r.n)), dim3(CONVERT_THREADS),
                                    (const Narrow *)b.keys[from], (uint32_t *)b.keys[to], r.n, r.tw,
                                    false)
                        : be.launch(convert_keys_kernel<uint32_t, Narrow>,
                                    dim3(elementwise_blocks(be, r.n)), dim3(CONVERT_THREADS),
                                    (const uint32_t *)b.keys[from], (Narrow *)b.keys[to], r.n, r.tw,
                                    true);
        if (ok)
                res->key_buf = to;
        return ok;
}

/*
 * Sorts r.n (>= 2, <= MAX_KEYS) keys of r's request. 8- and 16-bit keys are
 * widened to 32 bits (through the key map) first and narrowed after;
 * 32- and 64-bit keys are mapped by the first pass and unmapped by the last.
 */
template <class P32, class P64, class Backend>
bool onesweep_sort(Backend &be, const DeviceBuffers &b, const SortRequest &r, SortResult *res)
{
        res->key_buf = 0;
        res->val_buf = 0;
        switch (r.key_bytes) {
        case 1:
                return convert<uint8_t>(be, b, r, res, true) &&
                       dispatch_values<P32, uint32_t>(be, b, r, sortd__twiddle_identity(), res) &&
                       convert<uint8_t>(be, b, r, res, false);
        case 2:
                return convert<uint16_t>(be, b, r, res, true) &&
                       dispatch_values<P32, uint32_t>(be, b, r, sortd__twiddle_identity(), res) &&
                       convert<uint16_t>(be, b, r, res, false);
        case 4:
                return dispatch_values<P32, uint32_t>(be, b, r, r.tw, res);
        default:
                return dispatch_values<P64, uint64_t>(be, b, r, r.tw, res);
        }
}

/*
 * sort(b, &res), a sort of r's keys in b.keys[0] (values in b.vals[0]), on the caller's device
 * arrays keys and vals (any n <= MAX_KEYS): own's ping-pong buffers with the caller's arrays in
 * place of buffer 0 (caller_buffers.h).
 */
template <class Backend, class Sort>
bool sort_device_with(Backend &be, const DeviceBuffers &own, const SortRequest &r, void *keys,
                      void *vals, Sort sort)
{
        CallerArrays c = {keys, vals, r.n, r.key_bytes, r.val_bytes, r.argsort};

        return sort_in_caller_buffers(be, own, c, [&](DeviceBuffers &b, int *kb, int *vb) {
                SortResult res;
                bool ok = sort(b, &res);

                *kb = res.key_buf;
                *vb = res.val_buf;
                return ok;
        });
}

template <class P32, class P64, class Backend>
bool onesweep_sort_device(Backend &be, const DeviceBuffers &own, const SortRequest &r, void *keys,
                          void *vals)
{
        return sort_device_with(be, own, r, keys, vals,
                                [&](const DeviceBuffers &b, SortResult *res) {
                                        return onesweep_sort<P32, P64>(be, b, r, res);
                                });
}

/* A whole sort as one segment of the segmented kernel (segments.h), at offset 0. */
inline Segment whole_segment(const SortRequest &r)
{
        Segment s;

        s.keys = 0;
        s.vals = 0;
        s.n = (uint16_t)r.n;
        s.key_bytes = (uint8_t)r.key_bytes;
        s.val_bytes = (uint8_t)r.val_bytes;
        s.flags = (uint8_t)((r.argsort ? SEGMENT_ARGSORT : 0) |
                            (r.descending ? SEGMENT_DESCENDING : 0));
        s.kind = (uint8_t)r.kind;
        s.begin_bit = (uint8_t)r.begin_bit;
        s.end_bit = (uint8_t)r.end_bit;
        return s;
}

template <class Policy, class Backend>
bool launch_small(Backend &be, const SortRequest &r, const SegmentedParams &p)
{
        if (r.key_bytes == 8)
                return be.launch(small_sort_kernel<Policy, uint64_t>, dim3(1),
                                 dim3(Policy::THREADS), p, whole_segment(r));
        return be.launch(small_sort_kernel<Policy, uint32_t>, dim3(1), dim3(Policy::THREADS), p,
                         whole_segment(r));
}

/*
 * A sort of 2 <= r.n <= SMALL_SORT_MAX keys (policy.cuh) by one warp or one block, as the
 * segmented kernel sorts a segment, its descriptor in the launch: one launch, where Onesweep makes
 * two memsets, a histogram and a scan launch, a wait for the histogram and a binning launch per
 * digit place, each after the last. Keys are sorted in b.keys[0], the payload goes to b.vals[1].
 */
template <class Backend>
bool small_sort(Backend &be, const DeviceBuffers &b, const SortRequest &r, SortResult *res)
{
        SegmentedParams p = {nullptr, (unsigned char *)b.keys[0], (const unsigned char *)b.vals[0],
                             (unsigned char *)b.vals[1]};

        res->key_buf = 0;
        res->val_buf = 1;
        if (r.n <= (uint32_t)SmallSegmentPolicy::TILE)
                return launch_small<SmallSegmentPolicy>(be, r, p);
        return launch_small<SegmentPolicy>(be, r, p);
}

/* A single sort of r.n >= 2 keys: the small path up to SMALL_SORT_MAX keys, else Onesweep. */
template <class P32, class P64, class Backend>
bool sort_keys(Backend &be, const DeviceBuffers &b, const SortRequest &r, SortResult *res)
{
        if (r.n <= SMALL_SORT_MAX)
                return small_sort(be, b, r, res);
        return onesweep_sort<P32, P64>(be, b, r, res);
}

/* sort_keys on the engine's buffers, and on the caller's device arrays, with the policies of the
   kernels the device runs, which are built for arch (policy.cuh with_tuning). */
template <class Backend>
bool sort_tuned(int arch, Backend &be, const DeviceBuffers &b, const SortRequest &r,
                SortResult *res)
{
        return with_tuning(arch, [&](auto t) {
                using T = decltype(t);
                return sort_keys<typename T::P32, typename T::P64>(be, b, r, res);
        });
}

template <class Backend>
bool sort_device_tuned(int arch, Backend &be, const DeviceBuffers &own, const SortRequest &r,
                       void *keys, void *vals)
{
        return with_tuning(arch, [&](auto t) {
                using T = decltype(t);
                return sort_device_with(
                        be, own, r, keys, vals, [&](const DeviceBuffers &b, SortResult *res) {
                                return sort_keys<typename T::P32, typename T::P64>(be, b, r, res);
                        });
        });
}

/*
 * The segmented kernel over one sub-batch of small members already on the device (segments.h):
 * segs[0, narrow) have keys of up to 4 bytes, segs[narrow, count) 8-byte keys. Keys are sorted
 * in place, payloads go from vals_in to vals_out at the same offsets.
 *
 * One launch per key register width, so at most two for a whole batch, however its members mix.
 * Within a launch each block reads its member's plan at run time (key width, kind, order, bit
 * window, payload): values move once, at the end, through the input indices the passes carry,
 * so payloads need no launch of their own. One kernel for both widths would make it one launch,
 * but would run every block with the registers of 64-bit keys: on sm_90 108 rather than 69
 * (ptxas -v, nvcc 13.0), 2 resident blocks an SM rather than 3, to save one launch of a few
 * microseconds.
 */
template <class Policy, class Backend>
bool segmented_sort(Backend &be, const Segment *segs, unsigned count, unsigned narrow, void *keys,
                    const void *vals_in, void *vals_out)
{
        SegmentedParams p = {segs, (unsigned char *)keys, (const unsigned char *)vals_in,
                             (unsigned char *)vals_out};
        SegmentedParams wide = p;

        wide.segs = segs + narrow;
        return (narrow == 0 || be.launch(segmented_sort_kernel<Policy, uint32_t>, dim3(narrow),
                                         dim3(Policy::THREADS), p)) &&
               (count == narrow || be.launch(segmented_sort_kernel<Policy, uint64_t>,
                                             dim3(count - narrow), dim3(Policy::THREADS), wide));
}

} /* namespace sortd_cuda */

#endif
