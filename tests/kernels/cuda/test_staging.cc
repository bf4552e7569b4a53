/*
 * The staged-copy schedule (kernels/cuda/staging.h) without a GPU. The
 * operations here keep queued DMAs and marks in a FIFO "stream" that moves
 * bytes only when a DMA completes; entries complete when the host waits for
 * them or, at random (seeded), on their own. So a host write into a slot
 * before the DMA that reads it has run corrupts the data the checks compare,
 * and each host copy is checked against every DMA still queued.
 *
 * Checked: data lands at the right offsets for sizes around the slot size and
 * over many slots; the host never touches memory a queued DMA uses; chunks go
 * in order, slot_bytes each but the last; the host copy of chunk k overlaps
 * the DMA of chunk k - 1 (uploads) or k + 1 (downloads); transfers in a row
 * (keys, values, then both back) share the slots without draining; pinned
 * memory is DMA'd directly; zero bytes does nothing; a failing operation
 * stops the transfer at once; each host copy names its direction, and so
 * takes that direction's kind of copy (streamed or memcpy: staging_copy.h,
 * which the test's second build flips for uploads).
 */
#include <check.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <random>
#include <vector>

#include "cuda/staging.h"
extern "C" {
#include "suite.h"
}

using sortd_cuda::Dir;
using sortd_cuda::StagedCopy;
using sortd_cuda::StagingSlots;
using sortd_cuda::streamed;

namespace
{

typedef std::vector<unsigned char> bytes_t;

struct Range {
        const unsigned char *lo;
        size_t len;

        bool overlaps(const void *p, size_t n) const
        {
                const unsigned char *q = (const unsigned char *)p;
                return n && len && q < lo + len && lo < q + n;
        }
};

/* One entry of the fake stream: a DMA, or a slot's mark (slot >= 0). */
struct Entry {
        int slot;
        unsigned char *dst;
        const unsigned char *src;
        size_t bytes;
};

class FakeOps
{
      public:
        double progress = 0; /* chance that an op lets some queued entries finish */
        long fail_at = -1;   /* the op (counted from 0) that fails */
        Range pinned_range = {nullptr, 0};
        std::deque<Entry> stream;
        std::vector<Entry> dmas;    /* every DMA queued, in order */
        std::vector<Dir> copy_dirs; /* every host copy's direction, in order */
        long ops = 0, waits = 0, host_copies = 0;
        bool touched_after_failure = false;
        std::mt19937_64 rng{1};

        bool pinned(const void *host, size_t n)
        {
                Range r = pinned_range;
                const unsigned char *p = (const unsigned char *)host;
                return r.len && p >= r.lo && p + n <= r.lo + r.len;
        }

        bool host_copy(void *dst, const void *src, size_t n, Dir dir)
        {
                if (!step())
                        return false;
                host_copies++;
                copy_dirs.push_back(dir);
                for (const Entry &e : stream)
                        if (e.slot < 0) {
                                Range d = {e.dst, e.bytes}, s = {e.src, e.bytes};
                                ck_assert_msg(!d.overlaps(dst, n) && !d.overlaps(src, n) &&
                                                      !s.overlaps(dst, n) && !s.overlaps(src, n),
                                              "the host touches memory a queued DMA uses");
                        }
                std::memcpy(dst, src, n);
                return true;
        }

        bool dma(void *dst, const void *src, size_t n, Dir)
        {
                if (!step())
                        return false;
                Entry e = {-1, (unsigned char *)dst, (const unsigned char *)src, n};
                stream.push_back(e);
                dmas.push_back(e);
                return true;
        }

        bool record(unsigned slot)
        {
                if (!step())
                        return false;
                stream.push_back({(int)slot, nullptr, nullptr, 0});
                return true;
        }

        /* Like cudaEventSynchronize: the slot's latest mark, if one is queued. */
        bool wait(unsigned slot)
        {
                if (!step())
                        return false;
                waits++;
                size_t last = 0;
                for (size_t i = 0; i < stream.size(); i++)
                        if (stream[i].slot == (int)slot)
                                last = i + 1;
                finish(last);
                return true;
        }

        void finish(size_t entries)
        {
                for (size_t i = 0; i < entries; i++) {
                        Entry e = stream.front();
                        stream.pop_front();
                        if (e.slot < 0)
                                std::memcpy(e.dst, e.src, e.bytes);
                }
        }

        void drain()
        {
                finish(stream.size());
        }

        /* Whether a DMA writing dst .. is still queued. */
        bool queued(const void *dst) const
        {
                for (const Entry &e : stream)
                        if (e.slot < 0 && e.dst == dst)
                                return true;
                return false;
        }

      private:
        bool step()
        {
                if (fail_at >= 0 && ops > fail_at)
                        touched_after_failure = true;
                if (ops++ == fail_at)
                        return false;
                if (progress > 0 && std::uniform_real_distribution<>(0, 1)(rng) < progress)
                        finish(std::uniform_int_distribution<size_t>(0, stream.size())(rng));
                return true;
        }
};

constexpr size_t SLOT = 64;

struct Staging {
        bytes_t mem;
        StagingSlots s;

        explicit Staging(unsigned slots) : mem(slots * SLOT)
        {
                s = {mem.data(), SLOT, slots, 0, {}};
        }
};

bytes_t pattern(size_t n, unsigned seed)
{
        bytes_t v(n);
        for (size_t i = 0; i < n; i++)
                v[i] = (unsigned char)(i * 131 + seed * 7 + (i >> 8));
        return v;
}

/* Chunk k of a transfer at base: offset k * SLOT, SLOT bytes but the last. */
void check_chunks(const FakeOps &ops, size_t first, size_t count, const unsigned char *base,
                  size_t n, bool to_device)
{
        for (size_t k = 0; k < count; k++) {
                const Entry &e = ops.dmas[first + k];
                size_t len = n - k * SLOT < SLOT ? n - k * SLOT : SLOT;
                const unsigned char *at = to_device ? e.dst : e.src;

                ck_assert_msg(at == base + k * SLOT && e.bytes == len,
                              "chunk %zu of %zu bytes: offset %td, %zu bytes", k, n, at - base,
                              e.bytes);
        }
}

/* Host copies first .. first + count - 1 go in direction `dir`, with the build's kind of copy for
   it (what CudaStaging passes its backend: streamed(dir)). */
void check_copies(const FakeOps &ops, size_t first, size_t count, Dir dir)
{
        bool stream = dir == Dir::to_device ? SORTD_STREAM_UP : SORTD_STREAM_DOWN;

        ck_assert_uint_ge(ops.copy_dirs.size(), first + count);
        for (size_t k = first; k < first + count; k++)
                ck_assert_msg(ops.copy_dirs[k] == dir && streamed(ops.copy_dirs[k]) == stream,
                              "host copy %zu: %s, %s", k,
                              ops.copy_dirs[k] == Dir::to_device ? "up" : "down",
                              streamed(ops.copy_dirs[k]) ? "streamed" : "memcpy");
}

const size_t SIZES[] = {1, SLOT - 1, SLOT, SLOT + 1, 3 * SLOT + 5, 10 * SLOT, 10 * SLOT + 1};

/* Every size, slot count and completion pace: one upload, then one download. */
START_TEST(test_round_trip)
{
        for (unsigned slots = 1; slots <= 4; slots++)
                for (double progress : {0.0, 0.3, 1.0})
                        for (size_t n : SIZES) {
                                Staging st(slots);
                                FakeOps ops;
                                StagedCopy<FakeOps> copy(ops, st.s);
                                bytes_t host = pattern(n, slots), dev(n + SLOT, 0xee);
                                bytes_t want = host, back(n + SLOT, 0xdd);
                                size_t chunks = (n + SLOT - 1) / SLOT;

                                ops.progress = progress;
                                ops.rng.seed(n * 10 + slots);
                                ck_assert(copy.upload(dev.data(), host.data(), n));
                                std::memset(host.data(), 0x11, n); /* reusable on return */
                                ck_assert(copy.download(back.data(), dev.data(), n));
                                /* a staged download has arrived on return */
                                ck_assert_msg(std::memcmp(back.data(), want.data(), n) == 0,
                                              "%zu bytes, %u slots, progress %.1f: data differs", n,
                                              slots, progress);
                                ck_assert_int_eq(back[n], 0xdd);
                                ops.drain();
                                ck_assert_int_eq(dev[n], 0xee);
                                ck_assert_uint_eq(ops.dmas.size(), 2 * chunks);
                                check_chunks(ops, 0, chunks, dev.data(), n, true);
                                check_chunks(ops, chunks, chunks, dev.data(), n, false);
                                ck_assert_uint_eq(ops.copy_dirs.size(), 2 * chunks);
                                check_copies(ops, 0, chunks, Dir::to_device);
                                check_copies(ops, chunks, chunks, Dir::to_host);
                        }
}
END_TEST

/* Keys and values up, both back, without draining between: the slots carry their state. */
START_TEST(test_transfers_in_a_row)
{
        for (unsigned slots = 1; slots <= 4; slots++)
                for (double progress : {0.0, 0.5})
                        for (size_t nk : SIZES) {
                                size_t nv = 2 * nk + 7;
                                Staging st(slots);
                                FakeOps ops;
                                StagedCopy<FakeOps> copy(ops, st.s);
                                bytes_t k = pattern(nk, 1), v = pattern(nv, 2);
                                bytes_t dk(nk), dv(nv), bk(nk), bv(nv);

                                ops.progress = progress;
                                ops.rng.seed(nk + 1000 * slots);
                                ck_assert(copy.upload(dk.data(), k.data(), nk));
                                ck_assert(copy.upload(dv.data(), v.data(), nv));
                                ck_assert(copy.download(bk.data(), dk.data(), nk));
                                ck_assert(copy.download(bv.data(), dv.data(), nv));
                                ck_assert_msg(bk == k && bv == v, "%zu + %zu bytes, %u slots", nk,
                                              nv, slots);
                        }
}
END_TEST

/*
 * Checks at each host copy of a transfer of `chunks` chunks at dev that the neighbouring chunk's
 * DMA is still queued: chunk k - 1's while chunk k is copied in (upload), chunk k + 1's while
 * chunk k is copied out (download).
 */
class OverlapOps : public FakeOps
{
      public:
        const unsigned char *dev = nullptr;
        size_t chunks = 0, copies = 0;
        bool to_device = true;

        bool host_copy(void *dst, const void *src, size_t n, Dir dir)
        {
                size_t k = copies++;

                if (to_device && k > 0)
                        ck_assert_msg(queued_at(dev + (k - 1) * SLOT),
                                      "chunk %zu copied in after chunk %zu's DMA finished", k,
                                      k - 1);
                if (!to_device && k + 1 < chunks)
                        ck_assert_msg(queued_at(dev + (k + 1) * SLOT),
                                      "chunk %zu copied out before chunk %zu's DMA was queued", k,
                                      k + 1);
                return FakeOps::host_copy(dst, src, n, dir);
        }

      private:
        bool queued_at(const unsigned char *at) const
        {
                for (const Entry &e : stream)
                        if (e.slot < 0 && (to_device ? e.dst : e.src) == at)
                                return true;
                return false;
        }
};

/* With two slots or more, progress 0 (a DMA finishes only when the host waits for its slot). */
START_TEST(test_overlap)
{
        const size_t n = 10 * SLOT + 3, chunks = 11;

        for (unsigned slots = 2; slots <= 4; slots++)
                for (int to_device = 0; to_device < 2; to_device++) {
                        Staging st(slots);
                        bytes_t host = pattern(n, 3), dev = pattern(n, 4), back(n);
                        OverlapOps ops;
                        StagedCopy<OverlapOps> copy(ops, st.s);

                        ops.dev = dev.data();
                        ops.chunks = chunks;
                        ops.to_device = to_device;
                        if (to_device) {
                                ck_assert(copy.upload(dev.data(), host.data(), n));
                                /* the first `slots` chunks find their slots free */
                                ck_assert_int_eq(ops.waits, (long)(chunks - slots));
                                ops.drain();
                                ck_assert(dev == host);
                        } else {
                                ck_assert(copy.download(back.data(), dev.data(), n));
                                ck_assert_int_eq(ops.waits, (long)chunks);
                                ck_assert(back == dev);
                        }
                        ck_assert_uint_eq(ops.copies, chunks);
                }
}
END_TEST

START_TEST(test_pinned_and_empty)
{
        Staging st(3);
        FakeOps ops;
        StagedCopy<FakeOps> copy(ops, st.s);
        bytes_t host = pattern(5 * SLOT, 5), dev(5 * SLOT), back(5 * SLOT);

        ck_assert(copy.upload(dev.data(), host.data(), 0));
        ck_assert(copy.download(back.data(), dev.data(), 0));
        ck_assert_int_eq(ops.ops, 0);

        ops.pinned_range = {host.data(), host.size()};
        ck_assert(copy.upload(dev.data(), host.data(), host.size()));
        ck_assert_int_eq(ops.dmas.size(), 1);
        ck_assert(ops.dmas[0].src == host.data() && ops.dmas[0].bytes == host.size());
        ck_assert_int_eq(ops.host_copies, 0);
        ops.pinned_range = {back.data(), back.size()};
        ck_assert(copy.download(back.data(), dev.data(), back.size()));
        ck_assert_int_eq(ops.host_copies, 0);
        ops.drain(); /* direct: arrives with the stream */
        ck_assert(back == host);
        ck_assert(st.s.next == 0);
}
END_TEST

/* Whatever op fails, the transfer reports it and calls nothing more. */
START_TEST(test_failure_stops)
{
        const size_t n = 6 * SLOT + 1;

        for (int download = 0; download < 2; download++)
                for (long at = 0;; at++) {
                        Staging st(2);
                        FakeOps ops;
                        StagedCopy<FakeOps> copy(ops, st.s);
                        bytes_t a = pattern(n, 6), b(n);
                        bool ok;

                        ops.fail_at = at;
                        ok = download ? copy.download(b.data(), a.data(), n)
                                      : copy.upload(b.data(), a.data(), n);
                        ck_assert_msg(!ops.touched_after_failure, "op %ld failed, more followed",
                                      at);
                        if (ok) {
                                ck_assert_msg(ops.ops <= at, "op %ld failed unreported", at);
                                break;
                        }
                }
}
END_TEST

} /* namespace */

int main(void)
{
        Suite *s = suite_create("staging");
        TCase *tc = tcase_create("schedule");

        tcase_add_test(tc, test_round_trip);
        tcase_add_test(tc, test_transfers_in_a_row);
        tcase_add_test(tc, test_overlap);
        tcase_add_test(tc, test_pinned_and_empty);
        tcase_add_test(tc, test_failure_stops);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
