/* The input's buffers and the checks shared by every contestant. */
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include <ips4o.hpp>

#include "bench.h"

namespace sortbench
{

namespace
{

bool huge_pages;

constexpr size_t huge_page = size_t(2) << 20;

/* splitmix64's finaliser: a bijection that spreads every input bit. */
uint64_t mix(uint64_t z)
{
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        return z ^ (z >> 31);
}

bool is_float(sortd_key_type t)
{
        return t == SORTD_KEY_F32 || t == SORTD_KEY_F64;
}

bool is_signed(sortd_key_type t)
{
        return t == SORTD_KEY_I8 || t == SORTD_KEY_I16 || t == SORTD_KEY_I32 || t == SORTD_KEY_I64;
}

/* The order-preserving unsigned image of a key: engine.h's key order. */
uint64_t key_image(uint64_t bits, sortd_key_type t, unsigned key_bytes)
{
        uint64_t sign = uint64_t(1) << (key_bytes * 8 - 1);
        uint64_t all = sign | (sign - 1);

        if (is_float(t))
                return bits & sign ? bits ^ all : bits ^ sign;
        return is_signed(t) ? bits ^ sign : bits;
}

/* Sorts unique values in parallel: any correct sort gives the one order. */
template <class T> void sort_unique(std::vector<T> &v, unsigned threads)
{
        if (threads < 2) {
                ips4o::sort(v.begin(), v.end());
                return;
        }
        ips4o::parallel::sort(v.begin(), v.end(), std::less<>(),
                              ips4o::StdThreadPool(int(threads)));
}

struct wide_ref {
        uint64_t image;
        uint64_t index;
        bool operator<(const wide_ref &o) const
        {
                return image != o.image ? image < o.image : index < o.index;
        }
};

/*
 * The stable order of the input by the engines' key order: perm[i] is the
 * input position of the key that belongs at i. (image, index) pairs are
 * unique, so their sorted order is the stable order.
 */
std::vector<uint32_t> reference_perm(const input &in, unsigned threads)
{
        const void *keys = in.keys.as<void>();
        std::vector<uint32_t> perm(in.n);

        if (in.key_bytes <= 4) {
                std::vector<uint64_t> pairs(in.n);
                parallel_for(in.n, threads, [&](size_t lo, size_t hi) {
                        for (size_t i = lo; i < hi; i++)
                                pairs[i] = key_image(load_word(keys, i, in.key_bytes), in.type,
                                                     in.key_bytes)
                                                   << 32 |
                                           i;
                });
                sort_unique(pairs, threads);
                parallel_for(in.n, threads, [&](size_t lo, size_t hi) {
                        for (size_t i = lo; i < hi; i++)
                                perm[i] = uint32_t(pairs[i]);
                });
        } else {
                std::vector<wide_ref> pairs(in.n);
                parallel_for(in.n, threads, [&](size_t lo, size_t hi) {
                        for (size_t i = lo; i < hi; i++)
                                pairs[i] = {key_image(load_word(keys, i, 8), in.type, 8), i};
                });
                sort_unique(pairs, threads);
                parallel_for(in.n, threads, [&](size_t lo, size_t hi) {
                        for (size_t i = lo; i < hi; i++)
                                perm[i] = uint32_t(pairs[i].index);
                });
        }
        return perm;
}

/* dst[i] = src[perm[i]] for i in [lo, hi), T being the words' width. */
template <class T>
void gather(void *dst, const void *src, const uint32_t *perm, size_t lo, size_t hi)
{
        T *d = static_cast<T *>(dst);
        const T *s = static_cast<const T *>(src);

        for (size_t i = lo; i < hi; i++)
                d[i] = s[perm[i]];
}

void gather_words(void *dst, const void *src, unsigned bytes, const uint32_t *perm, size_t lo,
                  size_t hi)
{
        switch (bytes) {
        case 1:
                return gather<uint8_t>(dst, src, perm, lo, hi);
        case 2:
                return gather<uint16_t>(dst, src, perm, lo, hi);
        case 4:
                return gather<uint32_t>(dst, src, perm, lo, hi);
        default:
                return gather<uint64_t>(dst, src, perm, lo, hi);
        }
}

/* An argsort's result: the permutation itself, as 4- or 8-byte indices. */
void store_indices(void *dst, unsigned bytes, const uint32_t *perm, size_t lo, size_t hi)
{
        if (bytes == 4)
                std::copy(perm + lo, perm + hi, static_cast<uint32_t *>(dst) + lo);
        else
                std::copy(perm + lo, perm + hi, static_cast<uint64_t *>(dst) + lo);
}

template <class T> void make_nans_finite(void *keys, size_t lo, size_t hi)
{
        const T sign = T(1) << (sizeof(T) * 8 - 1);
        const T low = sizeof(T) == 4 ? T(0x00800000u) : T(0x0010000000000000u);
        const T exp = sizeof(T) == 4 ? T(0x7f800000u) : T(0x7ff0000000000000u);
        T *k = static_cast<T *>(keys);

        for (size_t i = lo; i < hi; i++)
                if ((k[i] & exp) == exp && (k[i] & ~(exp | sign)))
                        k[i] &= ~low;
}

} // namespace

void buffer::use_huge_pages(bool on)
{
        huge_pages = on;
}

void buffer::release::operator()(void *p) const
{
        free(p);
}

buffer::buffer(size_t bytes)
{
        size_t align = bytes >= huge_page ? huge_page : 64;
        size_t rounded = (bytes + align - 1) / align * align;
        void *p = nullptr;

        if (posix_memalign(&p, align, rounded ? rounded : align) != 0)
                throw std::bad_alloc();
        if (huge_pages && rounded >= huge_page)
                madvise(p, rounded, MADV_HUGEPAGE); /* advice only: failure is harmless */
        mem_.reset(p);
        bytes_ = bytes;
}

uint64_t load_word(const void *base, size_t i, unsigned bytes)
{
        switch (bytes) {
        case 1:
                return static_cast<const uint8_t *>(base)[i];
        case 2:
                return static_cast<const uint16_t *>(base)[i];
        case 4:
                return static_cast<const uint32_t *>(base)[i];
        default:
                return static_cast<const uint64_t *>(base)[i];
        }
}

uint64_t pair_hash(uint64_t key_bits, uint64_t val)
{
        return mix(mix(key_bits + 0x9e3779b97f4a7c15u) ^ val);
}

uint64_t input_hash(const input &in, unsigned threads)
{
        const void *keys = in.keys.as<void>();
        std::atomic<uint64_t> h{0};

        /* A sum, so the parts may add theirs in any order. */
        parallel_for(in.n, threads, [&](size_t lo, size_t hi) {
                uint64_t part = 0;
                for (size_t i = lo; i < hi; i++) {
                        uint64_t v = in.argsort     ? i
                                     : in.val_bytes ? load_word(in.vals.as<void>(), i, in.val_bytes)
                                                    : 0;
                        part += pair_hash(load_word(keys, i, in.key_bytes), v);
                }
                h += part;
        });
        return h;
}

void remove_nans(input &in, size_t lo, size_t hi)
{
        if (in.type == SORTD_KEY_F32)
                make_nans_finite<uint32_t>(in.keys.as<void>(), lo, hi);
        else if (in.type == SORTD_KEY_F64)
                make_nans_finite<uint64_t>(in.keys.as<void>(), lo, hi);
}

sorted_result stable_result(const input &in, unsigned threads)
{
        std::vector<uint32_t> perm = reference_perm(in, threads);
        sorted_result r{buffer(in.n * in.key_bytes), buffer(in.n * in.val_bytes)};

        parallel_for(in.n, threads, [&](size_t lo, size_t hi) {
                gather_words(r.keys.as<void>(), in.keys.as<void>(), in.key_bytes, perm.data(), lo,
                             hi);
                if (in.argsort)
                        store_indices(r.vals.as<void>(), in.val_bytes, perm.data(), lo, hi);
                else if (in.val_bytes)
                        gather_words(r.vals.as<void>(), in.vals.as<void>(), in.val_bytes,
                                     perm.data(), lo, hi);
        });
        return r;
}

size_t first_difference(const void *a, const void *b, size_t bytes, unsigned threads)
{
        const unsigned char *x = static_cast<const unsigned char *>(a);
        const unsigned char *y = static_cast<const unsigned char *>(b);
        std::atomic<size_t> first{bytes};

        parallel_for(bytes, threads, [&](size_t lo, size_t hi) {
                if (memcmp(x + lo, y + lo, hi - lo) == 0)
                        return;
                size_t i = lo;
                while (x[i] == y[i])
                        i++;
                size_t seen = first.load();
                while (i < seen && !first.compare_exchange_weak(seen, i)) {
                }
        });
        return first;
}

void fault_in(buffer &b, unsigned threads)
{
        parallel_for(b.bytes(), threads,
                     [&](size_t lo, size_t hi) { memset(b.as<char>() + lo, 0, hi - lo); });
}

size_t work_bytes(const input &in)
{
        /* A {key, value} struct is at most twice its wider member; the SoA layout
           needs key_bytes + val_bytes per element plus alignment slack. */
        if (!in.val_bytes)
                return in.n * in.key_bytes;
        return in.n * 2 * std::max(in.key_bytes, in.val_bytes) + 64;
}

} // namespace sortbench
