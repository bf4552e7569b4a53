/* The input's buffers and the checks shared by every contestant. */
#include <sys/mman.h>

#include <algorithm>
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
        return t == SORTD_KEY_I32 || t == SORTD_KEY_I64;
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
        if (bytes == 4)
                return static_cast<const uint32_t *>(base)[i];
        return static_cast<const uint64_t *>(base)[i];
}

uint64_t pair_hash(uint64_t key_bits, uint64_t val)
{
        return mix(mix(key_bits + 0x9e3779b97f4a7c15u) ^ val);
}

uint64_t input_hash(const input &in)
{
        const void *keys = in.keys.as<void>();
        uint64_t h = 0;

        for (size_t i = 0; i < in.n; i++) {
                uint64_t v = in.argsort     ? i
                             : in.val_bytes ? load_word(in.vals.as<void>(), i, in.val_bytes)
                                            : 0;
                h += pair_hash(load_word(keys, i, in.key_bytes), v);
        }
        return h;
}

void remove_nans(input &in)
{
        if (in.type == SORTD_KEY_F32) {
                uint32_t *k = in.keys.as<uint32_t>();
                const uint32_t exp = 0x7f800000u, low = 0x00800000u;

                for (size_t i = 0; i < in.n; i++)
                        if ((k[i] & exp) == exp && (k[i] & ~(exp | 0x80000000u)))
                                k[i] &= ~low;
        } else if (in.type == SORTD_KEY_F64) {
                uint64_t *k = in.keys.as<uint64_t>();
                const uint64_t exp = 0x7ff0000000000000u, low = 0x0010000000000000u;

                for (size_t i = 0; i < in.n; i++)
                        if ((k[i] & exp) == exp && (k[i] & ~(exp | 0x8000000000000000u)))
                                k[i] &= ~low;
        }
}

std::vector<uint32_t> reference_perm(const input &in, unsigned threads)
{
        const void *keys = in.keys.as<void>();
        std::vector<uint32_t> perm(in.n);

        /* (image, index) pairs are unique, so their sorted order is the stable order. */
        if (in.key_bytes == 4) {
                std::vector<uint64_t> pairs(in.n);

                for (size_t i = 0; i < in.n; i++)
                        pairs[i] = key_image(load_word(keys, i, 4), in.type, 4) << 32 | i;
                sort_unique(pairs, threads);
                for (size_t i = 0; i < in.n; i++)
                        perm[i] = uint32_t(pairs[i]);
        } else {
                std::vector<wide_ref> pairs(in.n);

                for (size_t i = 0; i < in.n; i++)
                        pairs[i] = {key_image(load_word(keys, i, 8), in.type, 8), i};
                sort_unique(pairs, threads);
                for (size_t i = 0; i < in.n; i++)
                        perm[i] = uint32_t(pairs[i].index);
        }
        return perm;
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
