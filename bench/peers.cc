/*
 * The CPU sorting peers: Highway's vqsort (best target and AVX2), ips4o, TBB,
 * Boost's block_indirect_sort and spreadsort, and std::sort.
 *
 * Keys only: each sorts the key array in its natural order (operator<).
 * Values and argsort: each sorts an array of {key, value} (or {key, index})
 * structs by key, vqsort through its own K32V32 / K64V64 types.
 */
#include <algorithm>
#include <cstring>
#include <functional>
#include <type_traits>
#include <utility>

#include <boost/sort/block_indirect_sort/block_indirect_sort.hpp>
#include <boost/sort/spreadsort/spreadsort.hpp>
#include <hwy/contrib/sort/vqsort.h>
#include <hwy/targets.h>
#include <ips4o.hpp>
#include <tbb/parallel_sort.h>
#include <tbb/task_arena.h>

#include "bench.h"

namespace sortbench
{

namespace
{

struct no_val {
};

template <class K, class V> struct kv {
        K key;
        V val;
};

/* How a peer's element type holds a key and a value. */
template <class E> struct elem {
        using key_type = E;
        static E key(const E &e)
        {
                return e;
        }
        static uint64_t val(const E &)
        {
                return 0;
        }
        static void set(E &e, E k, uint64_t)
        {
                e = k;
        }
};

template <class K, class V> struct elem<kv<K, V>> {
        using key_type = K;
        static K key(const kv<K, V> &e)
        {
                return e.key;
        }
        static uint64_t val(const kv<K, V> &e)
        {
                return e.val;
        }
        static void set(kv<K, V> &e, K k, uint64_t v)
        {
                e.key = k;
                e.val = V(v);
        }
};

template <class P, class K> struct hwy_pair {
        using key_type = K;
        static K key(const P &e)
        {
                return e.key;
        }
        static uint64_t val(const P &e)
        {
                return e.value;
        }
        static void set(P &e, K k, uint64_t v)
        {
                e.key = k;
                e.value = decltype(e.value)(v);
        }
};

template <> struct elem<hwy::K32V32> : hwy_pair<hwy::K32V32, uint32_t> {
};
template <> struct elem<hwy::K64V64> : hwy_pair<hwy::K64V64, uint64_t> {
};

struct by_key {
        template <class E> bool operator()(const E &a, const E &b) const
        {
                return elem<E>::key(a) < elem<E>::key(b);
        }
};

template <class K> uint64_t bits_of(K k)
{
        std::conditional_t<sizeof(K) == 4, uint32_t, uint64_t> b;

        memcpy(&b, &k, sizeof(b));
        return b;
}

template <class E> using sort_fn = std::function<void(E *, E *)>;

/* Sorts an array of E in the work buffer with one peer's sort function. */
template <class E> class peer_run : public run
{
      public:
        peer_run(const input &in, void *work, sort_fn<E> fn)
            : in_(in), data_(static_cast<E *>(work)), fn_(std::move(fn))
        {
        }

        void load() override
        {
                using K = typename elem<E>::key_type;
                const K *keys = in_.keys.as<K>();
                const void *vals = in_.vals.as<void>();

                for (size_t i = 0; i < in_.n; i++) {
                        uint64_t v = in_.argsort     ? i
                                     : in_.val_bytes ? load_word(vals, i, in_.val_bytes)
                                                     : 0;
                        elem<E>::set(data_[i], keys[i], v);
                }
        }

        outcome sort(std::string &) override
        {
                fn_(data_, data_ + in_.n);
                return outcome::ok;
        }

        /* Unstable peers may order equal keys either way: check order and multiset. */
        bool verify(std::string &why) override
        {
                uint64_t h = 0;

                for (size_t i = 0; i < in_.n; i++) {
                        if (i && by_key()(data_[i], data_[i - 1])) {
                                why = "not sorted at position " + std::to_string(i);
                                return false;
                        }
                        h += pair_hash(bits_of(elem<E>::key(data_[i])), elem<E>::val(data_[i]));
                }
                if (h != in_.hash) {
                        why = "the (key, value) multiset differs from the input";
                        return false;
                }
                return true;
        }

      private:
        const input &in_;
        E *data_;
        sort_fn<E> fn_;
};

template <class E> sort_fn<E> std_sort()
{
        return [](E *b, E *e) { std::sort(b, e, by_key()); };
}

/* One sorter (threads and buffers) per case, as a caller sorting repeatedly would keep. */
template <class E> sort_fn<E> ips4o_sort(unsigned threads)
{
        if (threads < 2)
                return [](E *b, E *e) { ips4o::sort(b, e, by_key()); };
        using sorter_t = decltype(ips4o::parallel::make_sorter<E *>(
                std::declval<ips4o::StdThreadPool>(), by_key()));
        auto sorter = std::make_shared<sorter_t>(
                ips4o::parallel::make_sorter<E *>(ips4o::StdThreadPool(int(threads)), by_key()));
        return [sorter](E *b, E *e) { (*sorter)(b, e); };
}

template <class E> sort_fn<E> tbb_sort(unsigned threads)
{
        auto arena = std::make_shared<tbb::task_arena>(int(threads));

        arena->initialize(); /* its threads start here, not in the first timed sort */

        return [arena](E *b, E *e) {
                arena->execute([b, e] { tbb::parallel_sort(b, e, by_key()); });
        };
}

template <class E> sort_fn<E> bis_sort(unsigned threads)
{
        return [threads](E *b, E *e) {
                boost::sort::block_indirect_sort(b, e, by_key(), uint32_t(threads));
        };
}

template <class E> sort_fn<E> spread_sort()
{
        using K = typename elem<E>::key_type;
        namespace ss = boost::sort::spreadsort;

        if constexpr (std::is_same<E, K>::value) {
                return [](E *b, E *e) { ss::spreadsort(b, e); };
        } else if constexpr (std::is_floating_point<K>::value) {
                using I = std::conditional_t<sizeof(K) == 4, int32_t, int64_t>;
                return [](E *b, E *e) {
                        ss::float_sort(
                                b, e,
                                [](const E &x, unsigned s) {
                                        return ss::float_mem_cast<K, I>(x.key) >> s;
                                },
                                by_key());
                };
        } else {
                return [](E *b, E *e) {
                        ss::integer_sort(
                                b, e, [](const E &x, unsigned s) { return x.key >> s; }, by_key());
                };
        }
}

/*
 * Highway dispatches on a process-wide target mask: forcing AVX2 lasts for
 * one sort and is undone afterwards, because the runs of all engines in a
 * case are alive together (sortbench's repeats go round them) and vqsort's
 * run must not sort under vqsort-avx2's mask. A Sorter sizes its buffer for
 * the target chosen when it is built, so it is built under the mask it will
 * sort with.
 */
class hwy_target_scope
{
      public:
        explicit hwy_target_scope(int64_t target) : forced_(target != 0)
        {
                if (forced_)
                        hwy::SetSupportedTargetsForTest(target);
        }
        ~hwy_target_scope()
        {
                if (forced_)
                        hwy::SetSupportedTargetsForTest(0);
        }
        hwy_target_scope(const hwy_target_scope &) = delete;
        hwy_target_scope &operator=(const hwy_target_scope &) = delete;

      private:
        bool forced_;
};

template <class E> sort_fn<E> vq_sort(int64_t target)
{
        std::shared_ptr<hwy::Sorter> sorter;

        {
                hwy_target_scope scope(target);
                sorter = std::make_shared<hwy::Sorter>();
        }
        return [target, sorter](E *b, E *e) {
                hwy_target_scope scope(target);
                (*sorter)(b, size_t(e - b), hwy::SortAscending());
        };
}

/* vqsort's element type for (K, V): K alone, K32V32, K64V64, or void (no form). */
template <class K, class V> struct vq_elem {
        using type = void;
};
template <class K> struct vq_elem<K, no_val> {
        using type = K;
};
template <> struct vq_elem<uint32_t, uint32_t> {
        using type = hwy::K32V32;
};
template <> struct vq_elem<uint64_t, uint64_t> {
        using type = hwy::K64V64;
};

/*
 * Forms of vqsort that give wrong results in Highway 1.0.3 (Debian 12), found
 * by this bench's checks and confirmed by standalone repros: both targets
 * return unsorted float arrays for skewed keys (q2 and lower entropy at
 * n = 70001); the AVX2 target's K32V32 sort loses values of equal keys (even
 * uniform u32 keys); K64V64 overwrites the values of keys equal to UINT64_MAX
 * (its padding) for small n (2 to about 120).
 */
template <class K, class E>
const char *vqsort_known_bug([[maybe_unused]] bool avx2, [[maybe_unused]] const input &in)
{
#ifdef SORTBENCH_VQSORT_1_0_3
        if (std::is_floating_point<K>::value)
                return "Highway 1.0.3's vqsort returns unsorted float arrays for skewed keys";
        if (avx2 && std::is_same<E, hwy::K32V32>::value)
                return "Highway 1.0.3's AVX2 K32V32 sort loses values of equal keys";
        if (std::is_same<E, hwy::K64V64>::value) {
                const uint64_t *k = in.keys.as<uint64_t>();
                if (std::find(k, k + in.n, UINT64_MAX) != k + in.n)
                        return "Highway 1.0.3's K64V64 sort overwrites values of UINT64_MAX keys, "
                               "which this data has";
        }
#endif
        return nullptr;
}

template <class K, class V>
std::unique_ptr<run> vqsort_prepare(bool avx2, const input &in, void *work, std::string &why)
{
        using E = typename vq_elem<K, V>::type;

        if constexpr (std::is_void<E>::value) {
                why = "vqsort sorts pairs only as K32V32 (u32 keys, v32/argsort32) and "
                      "K64V64 (u64 keys, v64/argsort64)";
                return nullptr;
        } else {
                if (const char *bug = vqsort_known_bug<K, E>(avx2, in)) {
                        why = bug;
                        return nullptr;
                }
                if (std::is_same<K, double>::value && !hwy::Sorter::HaveFloat64()) {
                        why = "this Highway build cannot sort f64";
                        return nullptr;
                }
                if (avx2 && !(hwy::SupportedTargets() & HWY_AVX2)) {
                        why = "this CPU has no AVX2";
                        return nullptr;
                }
                return std::make_unique<peer_run<E>>(in, work, vq_sort<E>(avx2 ? HWY_AVX2 : 0));
        }
}

template <class K, class V>
std::unique_ptr<run> prepare_typed(const std::string &name, const input &in, unsigned threads,
                                   void *work, std::string &why)
{
        using E = std::conditional_t<std::is_same<V, no_val>::value, K, kv<K, V>>;
        sort_fn<E> fn;

        if (name == "vqsort" || name == "vqsort-avx2")
                return vqsort_prepare<K, V>(name == "vqsort-avx2", in, work, why);
        if (name == "ips4o")
                fn = ips4o_sort<E>(threads);
        else if (name == "tbb")
                fn = tbb_sort<E>(threads);
        else if (name == "boost-bis")
                fn = bis_sort<E>(threads);
        else if (name == "spreadsort")
                fn = spread_sort<E>();
        else if (name == "std")
                fn = std_sort<E>();
        else {
                why = "unknown peer";
                return nullptr;
        }
        return std::make_unique<peer_run<E>>(in, work, std::move(fn));
}

template <class K>
std::unique_ptr<run> prepare_key(const std::string &name, const input &in, unsigned threads,
                                 void *work, std::string &why)
{
        switch (in.val_bytes) {
        case 0:
                return prepare_typed<K, no_val>(name, in, threads, work, why);
        case 4:
                return prepare_typed<K, uint32_t>(name, in, threads, work, why);
        default:
                return prepare_typed<K, uint64_t>(name, in, threads, work, why);
        }
}

} // namespace

const std::vector<std::string> &peer_names()
{
        static const std::vector<std::string> names = {
                "vqsort", "vqsort-avx2", "ips4o", "tbb", "boost-bis", "spreadsort", "std",
        };
        return names;
}

bool peer_is_threaded(const std::string &name)
{
        return name == "ips4o" || name == "tbb" || name == "boost-bis";
}

std::unique_ptr<run> peer_prepare(const std::string &name, const input &in, unsigned threads,
                                  void *work, std::string &why)
{
        switch (in.type) {
        case SORTD_KEY_U32:
                return prepare_key<uint32_t>(name, in, threads, work, why);
        case SORTD_KEY_I32:
                return prepare_key<int32_t>(name, in, threads, work, why);
        case SORTD_KEY_F32:
                return prepare_key<float>(name, in, threads, work, why);
        case SORTD_KEY_U64:
                return prepare_key<uint64_t>(name, in, threads, work, why);
        case SORTD_KEY_I64:
                return prepare_key<int64_t>(name, in, threads, work, why);
        case SORTD_KEY_F64:
                return prepare_key<double>(name, in, threads, work, why);
        default:
                why = "the peers sort 32- and 64-bit keys only";
                return nullptr;
        }
}

} // namespace sortbench
