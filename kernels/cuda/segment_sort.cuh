/*
 * Segmented sort and top-k on the device (engine.h: sortd_engine_sort_segments and
 * sortd_engine_topk) for the cuda engine, over keys and values already in device memory.
 * Templated on a Backend, as dispatch.cuh is.
 *
 * Segments are grouped by size class on the host, from the offsets (which are host memory):
 *   - small (up to SmallSegmentPolicy::TILE keys): one warp a segment, its keys in shared
 *     memory, as many segments a launch as fit one chunk of descriptors;
 *   - medium (up to SegmentPolicy::TILE): one block of 256 threads a segment, every digit
 *     place a pass in shared memory, many segments a launch, as a batch's members;
 *   - large: the Onesweep sort of the engine, on the segment's arrays in place.
 * Both block classes run AgentBlockSort (agent_block_sort.cuh), stable and reading each
 * segment's plan from its descriptor; they differ only in their policy. So a call makes two
 * launches a chunk of descriptors (DescriptorChunk), whatever the segments' number, and
 * Onesweep's launches for each large segment, which are few: n / SegmentPolicy::TILE at most.
 *
 * Top-k of one large segment is a radix select (agent_select.cuh: topk_select); of many, a
 * segmented sort of a copy of the keys (and values), then each segment's first min(k, len)
 * gathered into the packed output (topk_on_device).
 */
#ifndef SORTD_CUDA_SEGMENT_SORT_CUH
#define SORTD_CUDA_SEGMENT_SORT_CUH

#include <stdint.h>

#include "dispatch.cuh"

namespace sortd_cuda
{

/*
 * Descriptors (Segment, CopyRange: 16 bytes each) one launch reads at most, uploaded from a
 * pinned host chunk of the same size, allocated with the engine: SEGMENT_CHUNK, 512 KiB each
 * side, or fewer for a capacity that cannot have that many segments to sort (each one has a
 * key). More segments take more launches, each after the host has refilled the chunk, which
 * waits for the stream (10-20 us): a chunk of 32Ki 2-key segments takes about as long on the
 * device. The emulated tests take a small chunk (tests/support/fake_cuda/meson.build), to refill.
 */
#ifndef SORTD_SEGMENT_CHUNK
#define SORTD_SEGMENT_CHUNK 32768u
#endif
constexpr unsigned SEGMENT_CHUNK = SORTD_SEGMENT_CHUNK;

/* Descriptors of an engine of capacity keys: a sixteenth of a descriptor a key (one byte, where
   the sort's own buffers take 32), so that capacity=auto's sizing by the sort's bytes a key
   still fits the device; at least a warp's worth. More segments than that take refills. */
inline unsigned chunk_descriptors(size_t capacity)
{
        const size_t want = capacity / 16;

        return want < 32 ? 32u : want < SEGMENT_CHUNK ? (unsigned)want : SEGMENT_CHUNK;
}

/* The descriptor chunk: size descriptors on the device and in pinned host memory. */
struct DescriptorChunk {
        void *dev, *host;
        unsigned size;
        bool pending; /* an upload from host may still be queued: wait before refilling it */
};

/* Device memory a segmented sort of the arrays it sorts may use besides them. */
struct SegmentScratch {
        DeviceBuffers own; /* as onesweep_sort_device takes them: keys[0] / vals[0] unused
                              unless keys are under 4 bytes, then keys[0] and keys[1] each take
                              n widened keys */
        void *vals_copy;   /* n values: what the block classes read their values from */
};

/* A request of the sort: its plan, its segments, its device arrays. */
struct SegmentedArrays {
        const sortd__plan *plan;
        const sortd_segments *seg;
        unsigned char *keys, *vals; /* vals: values, indices, or NULL with no payload */
        size_t n;
};

/* The request Onesweep's dispatch takes for n keys of plan. */
inline SortRequest sort_request(const sortd__plan *plan, size_t n)
{
        SortRequest r;

        r.n = (uint32_t)n;
        r.key_bytes = plan->key_bytes;
        r.val_bytes = plan->val_bytes;
        r.argsort = plan->argsort;
        r.tw = sortd__twiddle_make(plan->key_bytes, plan->kind, plan->descending);
        r.kind = plan->kind;
        r.descending = plan->descending;
        r.begin_bit = plan->begin_bit;
        r.end_bit = plan->end_bit;
        return r;
}

/* Whether a segment of len keys is sorted by a block class: a one-key segment moves nothing
   and has nothing to sort, but an argsort must write its index 0. */
inline bool block_sorted(const sortd__plan *p, uint64_t len, uint64_t lo, uint64_t hi)
{
        return len > lo && len <= hi && (len >= 2 || p->argsort);
}

/* Waits for the chunk's last upload before the host writes it again. */
template <class Backend> bool chunk_free(Backend &be, DescriptorChunk &c)
{
        if (!c.pending)
                return true;
        c.pending = false;
        return be.wait();
}

/*
 * One launch of a block class: fill descriptors of c, for segments whose arrays start at
 * element base. Values (not an argsort's) are read from vals_in, the copy.
 */
template <class Policy, class Backend>
bool launch_class(Backend &be, DescriptorChunk &c, unsigned fill, const SegmentedArrays &a,
                  const unsigned char *vals_in, uint64_t base)
{
        const unsigned kb = a.plan->key_bytes, vb = a.plan->val_bytes;
        SegmentedParams p = {(const Segment *)c.dev, a.keys + base * kb,
                             vals_in ? vals_in + base * vb : nullptr,
                             a.vals ? a.vals + base * vb : nullptr};

        c.pending = true;
        if (!be.copy(c.dev, c.host, sizeof(Segment) * fill, cudaMemcpyHostToDevice))
                return false;
        if (kb == 8)
                return be.launch(segmented_sort_kernel<Policy, uint64_t>, dim3(fill),
                                 dim3(Policy::THREADS), p);
        return be.launch(segmented_sort_kernel<Policy, uint32_t>, dim3(fill), dim3(Policy::THREADS),
                         p);
}

/*
 * The segments of lengths in (lo, hi], Policy::TILE >= hi, by the block sort of Policy. A
 * launch's descriptors hold 32-bit byte offsets from its first segment, so a launch also ends
 * before a segment whose arrays would pass 4 GiB from there.
 */
template <class Policy, class Backend>
bool sort_class(Backend &be, DescriptorChunk &c, const SegmentedArrays &a,
                const unsigned char *vals_in, uint64_t lo, uint64_t hi)
{
        const unsigned kb = a.plan->key_bytes, vb = a.plan->val_bytes;
        const uint64_t width = kb > vb ? kb : vb, window = UINT32_MAX / width;
        Segment *descs = (Segment *)c.host;
        unsigned fill = 0;
        uint64_t base = 0;

        static_assert(Policy::TILE < (1 << 16), "Segment::n");
        for (uint64_t i = 0; i < a.seg->count; i++) {
                uint64_t len = sortd_segment_length(a.seg, i), at = sortd_segment_begin(a.seg, i);

                if (!block_sorted(a.plan, len, lo, hi))
                        continue;
                if (fill && (fill == c.size || at + len - base > window)) {
                        if (!launch_class<Policy>(be, c, fill, a, vals_in, base))
                                return false;
                        fill = 0;
                }
                if (fill == 0) {
                        if (!chunk_free(be, c))
                                return false;
                        base = at;
                }
                sortd__batch_job job = {*a.plan, nullptr, nullptr, (size_t)len, nullptr};
                descs[fill++] = segment_of(&job, (at - base) * kb, (at - base) * vb);
        }
        return fill == 0 || launch_class<Policy>(be, c, fill, a, vals_in, base);
}

/* Segments over SegmentPolicy::TILE keys: Onesweep on each, in place (scratch.own as the
   other side of its ping-pong). */
template <class Backend>
bool sort_large(Backend &be, int arch, const SegmentScratch &scratch, const SegmentedArrays &a)
{
        const unsigned kb = a.plan->key_bytes, vb = a.plan->val_bytes;

        for (uint64_t i = 0; i < a.seg->count; i++) {
                uint64_t len = sortd_segment_length(a.seg, i), at = sortd_segment_begin(a.seg, i);

                if (len <= (uint64_t)SegmentPolicy::TILE)
                        continue;
                if (!sort_device_tuned(arch, be, scratch.own, sort_request(a.plan, len),
                                       a.keys + at * kb, a.vals ? a.vals + at * vb : nullptr))
                        return false;
        }
        return true;
}

/* Whether any segment is sorted by a block class: the values' copy is made only then. */
inline bool any_block_sorted(const SegmentedArrays &a)
{
        if (!a.seg->offsets)
                return block_sorted(a.plan, a.seg->row_len, 0, SegmentPolicy::TILE);
        for (uint64_t i = 0; i < a.seg->count; i++)
                if (block_sorted(a.plan, sortd_segment_length(a.seg, i), 0, SegmentPolicy::TILE))
                        return true;
        return false;
}

/*
 * Sorts each segment of a's device arrays on its own, in place, queued on be's stream. The
 * block classes gather values from a copy: their kernel reads each value once, through its input
 * index, after the keys are sorted, so in place a thread could read a value another has already
 * overwritten. Onesweep's large segments ping-pong and need none.
 */
template <class Backend>
bool sort_segments_on_device(Backend &be, int arch, DescriptorChunk &c,
                             const SegmentScratch &scratch, const SegmentedArrays &a)
{
        const unsigned vb = a.plan->val_bytes;
        const unsigned char *vals_in = nullptr;

        if (vb && !a.plan->argsort && any_block_sorted(a)) {
                if (!be.copy_device(scratch.vals_copy, a.vals, a.n * vb))
                        return false;
                vals_in = (const unsigned char *)scratch.vals_copy;
        }
        return sort_class<SmallSegmentPolicy>(be, c, a, vals_in, 0, SmallSegmentPolicy::TILE) &&
               sort_class<SegmentPolicy>(be, c, a, vals_in, SmallSegmentPolicy::TILE,
                                         SegmentPolicy::TILE) &&
               sort_large(be, arch, scratch, a);
}

/* A 16-byte element moved whole. */
struct alignas(16) Bytes16 {
        uint64_t w[2];
};

/* f(T{}) for T the element of `bytes`: 1, 2, 4 or 8, else 16 (the key columns' 16-byte keys,
   columns_device.cuh). */
template <class F> bool with_width(unsigned bytes, F f)
{
        switch (bytes) {
        case 1:
                return f(uint8_t{});
        case 2:
                return f(uint16_t{});
        case 4:
                return f(uint32_t{});
        case 8:
                return f(uint64_t{});
        default:
                return f(Bytes16{});
        }
}

/* The gather's launch for elements of T: blocks of CONVERT_THREADS split each range. */
constexpr unsigned GATHER_BLOCKS_PER_RANGE_MAX = 64;

template <class T, class Backend>
bool launch_gather(Backend &be, const DescriptorChunk &c, unsigned fill, unsigned per_range,
                   const void *src, void *dst)
{
        return be.launch(gather_kernel<T>, dim3(fill * per_range), dim3(CONVERT_THREADS),
                         (const CopyRange *)c.dev, per_range, (const T *)src, (T *)dst);
}

template <class Backend>
bool launch_gather_width(Backend &be, const DescriptorChunk &c, unsigned fill, unsigned per_range,
                         unsigned bytes, const void *src, void *dst)
{
        return with_width(bytes, [&](auto t) {
                return launch_gather<decltype(t)>(be, c, fill, per_range, src, dst);
        });
}

/* One chunk of ranges: its upload and the gathers of keys and of the payload. */
template <class Backend>
bool gather_chunk(Backend &be, DescriptorChunk &c, unsigned fill, uint64_t longest,
                  const SegmentedArrays &sorted, void *out_keys, void *out_vals)
{
        uint64_t want = (longest + CONVERT_THREADS - 1) / CONVERT_THREADS;
        unsigned per_range =
                want < GATHER_BLOCKS_PER_RANGE_MAX ? (unsigned)want : GATHER_BLOCKS_PER_RANGE_MAX;
        const sortd__plan *p = sorted.plan;

        c.pending = true;
        return be.copy(c.dev, c.host, sizeof(CopyRange) * fill, cudaMemcpyHostToDevice) &&
               launch_gather_width(be, c, fill, per_range, p->key_bytes, sorted.keys, out_keys) &&
               (!p->val_bytes ||
                launch_gather_width(be, c, fill, per_range, p->val_bytes, sorted.vals, out_vals));
}

/* Each sorted segment's first min(k, len) elements, packed into out_keys (and out_vals). */
template <class Backend>
bool gather_topk(Backend &be, DescriptorChunk &c, const SegmentedArrays &sorted, uint64_t k,
                 void *out_keys, void *out_vals)
{
        CopyRange *ranges = (CopyRange *)c.host;
        unsigned fill = 0;
        uint64_t dst = 0, longest = 0;

        for (uint64_t i = 0; i < sorted.seg->count; i++) {
                uint64_t len = sortd_segment_length(sorted.seg, i);
                uint64_t take = k < len ? k : len;

                if (take == 0)
                        continue;
                if (fill == c.size) {
                        if (!gather_chunk(be, c, fill, longest, sorted, out_keys, out_vals))
                                return false;
                        fill = 0;
                        longest = 0;
                }
                if (fill == 0 && !chunk_free(be, c))
                        return false;
                ranges[fill++] = CopyRange{(uint32_t)sortd_segment_begin(sorted.seg, i),
                                           (uint32_t)dst, (uint32_t)take, 0};
                dst += take;
                longest = take > longest ? take : longest;
        }
        return fill == 0 || gather_chunk(be, c, fill, longest, sorted, out_keys, out_vals);
}

/*
 * Radix select (agent_select.cuh): top-k of one large segment. Buffers: hist (RADIX + 1 words:
 * the counts and the kept keys' count) and its pinned host copy, one word a tile of
 * RadixSelectPolicy (the engine's status counters), the levels' kept values (two sides of n
 * 64-bit values), the gathered keys and payload (n of each at most: keys, vals), and own, the
 * other side of their sort (as onesweep_sort_device takes it). The kept values are done with
 * before the gather starts, so they may share its memory.
 */
struct SelectBuffers {
        uint32_t *hist, *hist_host, *tile_counts;
        uint64_t *kept[2];
        void *keys, *vals;
        DeviceBuffers own;
};

/* The digit d whose bucket holds the rem-th key (1-based) of the counts h; *before = the keys
   of the lower digits. */
inline unsigned select_bucket(const uint32_t *h, uint64_t rem, uint64_t *before)
{
        unsigned d = 0;

        *before = 0;
        while (d + 1 < (unsigned)RADIX && *before + h[d] < rem)
                *before += h[d++];
        return d;
}

/* One level's launch: its histogram into hist and, with o.out, its keys kept. Input: the keys,
   or (mapped) the values the level before kept. */
template <class K, class Backend>
bool select_level(Backend &be, const SelectInput &in, bool mapped, const SelectLevel &lv,
                  uint32_t *hist, const SelectOutput &o)
{
        using P = RadixSelectPolicy;
        dim3 grid(elementwise_blocks(be, in.n)), block(P::THREADS);

        if (mapped)
                return be.launch(select_histogram_kernel<P, uint64_t, true>, grid, block, in, lv,
                                 hist, o);
        return be.launch(select_histogram_kernel<P, K, false>, grid, block, in, lv, hist, o);
}

/*
 * The levels of the select, from the value's top digit down, each one histogram launch and its
 * counts on the host, until the k-th key's bucket is the last digit or holds exactly the keys
 * still wanted. From the second level on, a level keeps the keys of its prefix in b.kept (one
 * side, then the other), so that the next reads those (the bucket the level before chose)
 * rather than all n: the first has no prefix to filter by, and keeping all n there would cost
 * what it saves. *cut: the gather's keys; returns the number gathered, or -1 on failure.
 */
template <class K, class Backend>
int64_t select_levels(Backend &be, const SelectBuffers &b, const SelectInput &keys, uint64_t k,
                      SelectCut *cut)
{
        SelectInput in = keys;
        unsigned above = keys.width;
        uint64_t prefix = 0, rem = k, before, matching = keys.n;
        bool mapped = false;

        for (unsigned level = 0;; level++) {
                unsigned shift = above > (unsigned)RADIX_BITS ? above - RADIX_BITS : 0;
                SelectLevel lv = {above, shift, prefix, (1u << (above - shift)) - 1};
                SelectOutput o = {level > 0 && shift > 0 ? b.kept[level % 2] : nullptr,
                                  b.hist + RADIX};

                if (!be.clear(b.hist, sizeof(uint32_t) * (RADIX + 1)) ||
                    !select_level<K>(be, in, mapped, lv, b.hist, o) ||
                    !be.to_host(b.hist_host, b.hist, sizeof(uint32_t) * RADIX))
                        return -1;
                unsigned d = select_bucket(b.hist_host, rem, &before);
                rem -= before;
                prefix = prefix << (above - shift) | d;
                above = shift;
                if (shift == 0 || b.hist_host[d] == rem) {
                        *cut = SelectCut{shift, prefix};
                        return (int64_t)(k - rem + b.hist_host[d]);
                }
                if (o.out) { /* it kept the keys of its own prefix */
                        in.keys = o.out;
                        in.n = (uint32_t)matching;
                        mapped = true;
                }
                matching = b.hist_host[d];
        }
}

/* The stable gather of the keys in cut into b.keys (and the payload into b.vals). */
template <class K, class V, class Backend>
bool select_gather(Backend &be, const SelectBuffers &b, const SelectInput &in, const SelectCut &cut,
                   const sortd__plan *plan, const void *vals)
{
        using P = RadixSelectPolicy;
        uint32_t tiles = (uint32_t)(((uint64_t)in.n + P::TILE - 1) / P::TILE);

        return be.launch(select_count_kernel<P, K>, dim3(tiles), dim3(P::THREADS), in, cut,
                         b.tile_counts) &&
               be.launch(select_scan_kernel<P>, dim3(1), dim3(WARP_THREADS), b.tile_counts,
                         tiles) &&
               be.launch(select_gather_kernel<P, K, V>, dim3(tiles), dim3(P::THREADS), in, cut,
                         (const uint32_t *)b.tile_counts, (const V *)vals, plan->argsort,
                         plan->val_bytes != 0, (K *)b.keys, (V *)b.vals);
}

template <class K, class Backend>
int64_t select_keys(Backend &be, const SelectBuffers &b, const sortd__plan *plan, const void *keys,
                    const void *vals, uint32_t n, uint64_t k)
{
        SelectInput in = {keys, n,
                          sortd__twiddle_make(plan->key_bytes, plan->kind, plan->descending),
                          plan->begin_bit, plan->end_bit - plan->begin_bit};
        SelectCut cut;
        int64_t gathered = select_levels<K>(be, b, in, k, &cut);

        if (gathered < 0)
                return -1;
        bool ok = plan->val_bytes == 8 ? select_gather<K, uint64_t>(be, b, in, cut, plan, vals)
                                       : select_gather<K, uint32_t>(be, b, in, cut, plan, vals);
        return ok ? gathered : -1;
}

/*
 * Top-k (1 <= k < n) of the n keys (and vals, unless an argsort) of one segment at keys, by radix
 * select: the gathered keys and their payload sorted in b.keys and b.vals, the top k first.
 * Their sort moves the gathered payload as values: an argsort's indices were written by the
 * gather.
 */
template <class Backend>
bool topk_select(Backend &be, int arch, const SelectBuffers &b, const sortd__plan *plan,
                 const void *keys, const void *vals, size_t n, uint64_t k)
{
        sortd__plan values = *plan;
        int64_t gathered;

        switch (plan->key_bytes) {
        case 1:
                gathered = select_keys<uint8_t>(be, b, plan, keys, vals, (uint32_t)n, k);
                break;
        case 2:
                gathered = select_keys<uint16_t>(be, b, plan, keys, vals, (uint32_t)n, k);
                break;
        case 4:
                gathered = select_keys<uint32_t>(be, b, plan, keys, vals, (uint32_t)n, k);
                break;
        default:
                gathered = select_keys<uint64_t>(be, b, plan, keys, vals, (uint32_t)n, k);
        }
        values.argsort = false;
        return gathered >= 0 &&
               sort_device_tuned(arch, be, b.own, sort_request(&values, (size_t)gathered), b.keys,
                                 plan->val_bytes ? b.vals : nullptr);
}

/*
 * Top-k of each segment of copy (the keys and values to select from, in device memory the call
 * may overwrite: a copy of the caller's), into out_keys and out_vals (device memory, the packed
 * layout of sortd_types.h). The copy is sorted by segments, then each segment's first k are
 * gathered.
 *
 * Used for many segments; one large segment takes topk_select. Why a segmented sort of a copy
 * there: a segment of the block classes is read once into shared memory and sorted there, so a
 * select would save that block little, and one path keeps every segment's stability, ties, NaNs
 * and bit range the sort's by construction (a segment's top k is its stable sort's first k).
 * Large segments among many are sorted whole by Onesweep: a select for each would need buffers
 * for each segment's candidates at once, or a launch sequence per segment, to save passes on a
 * few segments.
 */
template <class Backend>
bool topk_on_device(Backend &be, int arch, DescriptorChunk &c, const SegmentScratch &scratch,
                    const SegmentedArrays &copy, uint64_t k, void *out_keys, void *out_vals)
{
        return sort_segments_on_device(be, arch, c, scratch, copy) &&
               gather_topk(be, c, copy, k, out_keys, out_vals);
}

} /* namespace sortd_cuda */

#endif
