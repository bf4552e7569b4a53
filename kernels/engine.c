/*
 * The engine interface: validation shared by all engines, and dispatch. It names no engine:
 * each engine's operations come with the engine itself (e->ops), made by engine_create.c, so
 * the engines may call down into it (sortd__engine_lose; messages: engine_fail.c). Keys of
 * 16 bytes go to the columns layer (columns/), which sorts them through the engine's own sort.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "columns/columns.h"
#include "engine_impl.h"

int sortd__misaligned(const void *p, size_t align)
{
        return align && (uintptr_t)p % align != 0;
}

int sortd__overlap(const void *a, size_t alen, const void *b, size_t blen)
{
        uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

        return x < y + blen && y < x + alen;
}

static sortd_status check_buffers(sortd_engine *e, const sortd__plan *p, const void *keys,
                                  const void *vals, size_t n)
{
        if (!keys)
                return sortd__engine_fail(e, SORTD_E_INVAL, "keys is NULL");
        if (sortd__misaligned(keys, p->key_bytes))
                return sortd__engine_fail(e, SORTD_E_INVAL, "keys not aligned to %u bytes",
                                          p->key_bytes);
        if (!p->val_bytes)
                return SORTD_OK;
        if (!vals)
                return sortd__engine_fail(e, SORTD_E_INVAL,
                                          "vals is NULL but the payload needs it");
        if (sortd__misaligned(vals, p->val_bytes))
                return sortd__engine_fail(e, SORTD_E_INVAL, "vals not aligned to %u bytes",
                                          p->val_bytes);
        if (sortd__overlap(keys, n * p->key_bytes, vals, n * p->val_bytes))
                return sortd__engine_fail(e, SORTD_E_INVAL, "keys and vals overlap");
        return SORTD_OK;
}

sortd__plan sortd__plan_of(const sortd_sort_desc *d)
{
        const unsigned width = (unsigned)sortd_key_size(d->key_type) * 8;

        return (sortd__plan){
                .key_bytes = width / 8,
                .val_bytes = (unsigned)sortd_payload_size(d->payload),
                .argsort = sortd_payload_is_argsort(d->payload),
                .kind = sortd__key_kind_of(d->key_type),
                .descending = d->order == SORTD_DESCENDING,
                .begin_bit = d->begin_bit,
                .end_bit = d->end_bit ? d->end_bit : width,
        };
}

static sortd_status make_plan(sortd_engine *e, const sortd_sort_desc *d, size_t n, sortd__plan *p)
{
        if (n > e->capacity)
                return sortd__engine_fail(e, SORTD_E_CAPACITY, "n = %zu above capacity %zu", n,
                                          e->capacity);
        if (sortd_sort_desc_check(d, n, e->why, sizeof(e->why)) != SORTD_OK)
                return SORTD_E_INVAL;
        *p = sortd__plan_of(d);
        return SORTD_OK;
}

/* What the device-memory calls say on an engine without a device. */
sortd_status sortd__engine_no_device(sortd_engine *e)
{
        return sortd__engine_fail(e, SORTD_E_UNSUPPORTED,
                                  "the %s engine sorts in host memory and has no device: CUDA "
                                  "device memory needs a GPU engine (cuda, cub)",
                                  e->ops->kind);
}

/* The checks both sorts share; SORTD_OK with *p when the engine has work to do (n >= 2). */
sortd_status sortd__engine_begin(sortd_engine *e, const sortd_sort_desc *desc, const void *keys,
                                 const void *vals, size_t n, sortd__plan *p)
{
        sortd_status s;

        e->why[0] = '\0';
        e->last_device_seconds = 0;
        s = make_plan(e, desc, n, p);
        if (s != SORTD_OK || n == 0)
                return s;
        return check_buffers(e, p, keys, vals, n);
}

void sortd__engine_lose(sortd_engine *e)
{
        if (e->lost)
                return;
        e->lost = true;
        snprintf(e->lost_why, sizeof(e->lost_why), "%s", e->why);
}

/*
 * Every call that reaches an engine's sort passes here: a lost engine fails it, and the test
 * faults (engine.h) are counted and injected.
 */
sortd_status sortd__engine_sorting_call(sortd_engine *e)
{
        const sortd_engine_faults *f = &e->faults;

        if (e->lost)
                return sortd__engine_fail(e, SORTD_E_DEVICE,
                                          "the %s engine lost its device earlier and sorts no "
                                          "more: %s",
                                          e->ops->kind, e->lost_why);
        e->calls++;
        if (!f->every || e->calls % f->every != 0)
                return SORTD_OK;
        sortd__engine_fail(e, f->status, "injected fault (test hook) on sorting call %llu: %s%s",
                           e->calls,
                           f->status == SORTD_E_NOMEM ? "out of device memory" : "device error",
                           f->lose_device ? ", sticky: the device is lost" : "");
        if (f->lose_device)
                sortd__engine_lose(e);
        return f->status;
}

/* A sort of one key: only an argsort has anything to write. */
void sortd__engine_sort_one(const sortd__plan *p, void *vals)
{
        if (p->argsort)
                memset(vals, 0, p->val_bytes); /* index 0, in either width */
}

static sortd_status sort_host(sortd_engine *e, const sortd_sort_desc *desc, void *keys, void *vals,
                              size_t n, bool shared)
{
        sortd__plan p;
        sortd_status s;

        if (!e)
                return SORTD_E_INVAL;
        s = sortd__engine_begin(e, desc, keys, vals, n, &p);
        if (s != SORTD_OK || n == 0)
                return s;
        p.shared = shared;
        if (n == 1) {
                sortd__engine_sort_one(&p, vals);
                return SORTD_OK;
        }
        s = sortd__engine_sorting_call(e);
        if (s != SORTD_OK)
                return s;
        return p.key_bytes == 16 ? sortd__columns_sort_wide(e, &sortd__columns_host, desc, NULL,
                                                            keys, vals, n)
                                 : e->ops->sort(e, &p, keys, vals, n);
}

sortd_status sortd_engine_sort(sortd_engine *e, const sortd_sort_desc *desc, void *keys, void *vals,
                               size_t n)
{
        return sort_host(e, desc, keys, vals, n, false);
}

sortd_status sortd_engine_sort_shared(sortd_engine *e, const sortd_sort_desc *desc, void *keys,
                                      void *vals, size_t n)
{
        return sort_host(e, desc, keys, vals, n, true);
}

/* Members checked and handed to the engine at a time: the jobs live on the stack. */
#define BATCH_CHUNK 128

/* An item with nothing to sort (n < 2), or one that failed its checks, is done here. */
static void finish_item(sortd_engine *e, sortd_engine_batch_item *it, sortd_status s,
                        const sortd__plan *p)
{
        if (s == SORTD_OK && it->n == 1)
                sortd__engine_sort_one(p, it->vals);
        it->status = s;
        snprintf(it->why, sizeof(it->why), "%s", s == SORTD_OK ? "" : e->why);
}

/* Members that a failed engine call leaves unsorted: each gets the call's status and message. */
static void fail_each(sortd_engine *e, sortd__batch_job *jobs, size_t count, sortd_status s)
{
        for (size_t i = 0; i < count; i++) {
                jobs[i].item->status = s;
                snprintf(jobs[i].item->why, sizeof(jobs[i].item->why), "%s", e->why);
        }
}

/* Sorts the members of 16-byte keys, which no engine's batch takes; returns the others, first. */
static size_t sort_wide_members(sortd_engine *e, sortd__batch_job *jobs, size_t count)
{
        size_t narrow = 0;

        for (size_t i = 0; i < count; i++) {
                sortd__batch_job *j = &jobs[i];

                if (j->plan.key_bytes != 16) {
                        jobs[narrow++] = *j;
                        continue;
                }
                e->why[0] = '\0';
                j->item->status = sortd__columns_sort_wide(e, &sortd__columns_host, &j->item->desc,
                                                           NULL, j->keys, j->vals, j->n);
                snprintf(j->item->why, sizeof(j->item->why), "%s",
                         j->item->status == SORTD_OK ? "" : e->why);
        }
        return narrow;
}

static void sort_each(sortd_engine *e, sortd__batch_job *jobs, size_t count)
{
        for (size_t i = 0; i < count; i++) {
                sortd__batch_job *j = &jobs[i];

                e->why[0] = '\0';
                j->item->status = e->ops->sort(e, &j->plan, j->keys, j->vals, j->n);
                snprintf(j->item->why, sizeof(j->item->why), "%s",
                         j->item->status == SORTD_OK ? "" : e->why);
        }
}

sortd_status sortd_engine_sort_batch(sortd_engine *e, sortd_engine_batch_item *items, size_t count)
{
        sortd__batch_job jobs[BATCH_CHUNK];

        if (!e)
                return SORTD_E_INVAL;
        if (!items && count)
                return sortd__engine_fail(e, SORTD_E_INVAL, "items is NULL");
        for (size_t at = 0; at < count;) {
                size_t nj = 0;

                for (; at < count && nj < BATCH_CHUNK; at++) {
                        sortd_engine_batch_item *it = &items[at];
                        sortd__plan p;
                        sortd_status s =
                                sortd__engine_begin(e, &it->desc, it->keys, it->vals, it->n, &p);

                        if (s == SORTD_OK && it->n >= 2)
                                jobs[nj++] = (sortd__batch_job){p, it->keys, it->vals, it->n, it};
                        else
                                finish_item(e, it, s, &p);
                }
                sortd_status s = nj ? sortd__engine_sorting_call(e) : SORTD_OK;

                if (s == SORTD_OK)
                        nj = sort_wide_members(e, jobs, nj);
                if (s != SORTD_OK)
                        fail_each(e, jobs, nj, s);
                else if (!nj)
                        continue;
                else if (e->ops->sort_batch)
                        e->ops->sort_batch(e, jobs, nj);
                else
                        sort_each(e, jobs, nj);
        }
        e->why[0] = '\0';
        e->last_device_seconds = 0;
        for (size_t i = 0; i < count; i++)
                if (items[i].status != SORTD_OK)
                        return sortd__engine_fail(e, items[i].status, "item %zu of %zu: %s", i,
                                                  count, items[i].why);
        return SORTD_OK;
}

sortd_status sortd_engine_sort_device(sortd_engine *e, const sortd_sort_desc *desc, void *keys,
                                      void *vals, size_t n)
{
        sortd__plan p;
        sortd_status s;

        if (!e)
                return SORTD_E_INVAL;
        if (!e->ops->sort_device)
                return sortd__engine_no_device(e);
        s = sortd__engine_begin(e, desc, keys, vals, n, &p);
        if (s == SORTD_OK && p.key_bytes == 16 && !e->ops->columns_device)
                return sortd__engine_fail(e, SORTD_E_UNSUPPORTED,
                                          "the %s engine sorts %s keys in host memory only, not "
                                          "in device memory",
                                          e->ops->kind, sortd_key_type_name(desc->key_type));
        if (s != SORTD_OK || n == 0)
                return s;
        /* n == 1 too: an argsort's index 0 must be written on the device */
        s = sortd__engine_sorting_call(e);
        if (s != SORTD_OK || p.key_bytes != 16)
                return s == SORTD_OK ? e->ops->sort_device(e, &p, keys, vals, n) : s;
        if (n == 1)
                return p.argsort ? e->ops->columns_device->identity(e, vals, p.val_bytes, 1)
                                 : SORTD_OK;
        return sortd__columns_sort_wide(e, e->ops->columns_device, desc, NULL, keys, vals, n);
}

int sortd_engine_lost(const sortd_engine *e)
{
        return e && e->lost;
}

const char *sortd_engine_error(const sortd_engine *e)
{
        return e ? e->why : "no engine";
}

const char *sortd_engine_kind(const sortd_engine *e)
{
        return e->ops->kind;
}

const char *sortd_engine_device(const sortd_engine *e)
{
        return e->device;
}

size_t sortd_engine_capacity(const sortd_engine *e)
{
        return e->capacity;
}

double sortd_engine_peak_bandwidth(const sortd_engine *e)
{
        return e->peak_bandwidth;
}

double sortd_engine_last_device_seconds(const sortd_engine *e)
{
        return e->last_device_seconds;
}

sortd_status sortd_engine_selfcheck(sortd_engine *e, char *report, size_t report_len)
{
        if (!e)
                return SORTD_E_INVAL;
        if (e->ops->selfcheck)
                return e->ops->selfcheck(e, report, report_len);
        if (report_len)
                snprintf(report, report_len,
                         "no self-check: the %s engine is the oracle the others are checked "
                         "against, and CI tests it on every commit",
                         e->ops->kind);
        return SORTD_OK;
}

/* ---- host memory --------------------------------------------------------------------------- */

/* x86-64's transparent huge page: a mapping must cover an aligned 2 MiB to get one. */
#define HUGE_PAGE ((size_t)2 << 20)

static size_t page_size(void)
{
        long p = sysconf(_SC_PAGESIZE);

        return p > 0 ? (size_t)p : 4096;
}

/* Maps len bytes (a multiple of the page size), 2 MiB-aligned when len has a huge page's worth. */
static void *map_pages(size_t len)
{
        size_t slack = len >= HUGE_PAGE ? HUGE_PAGE - page_size() : 0;
        unsigned char *m =
                mmap(NULL, len + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        unsigned char *p;

        if (m == MAP_FAILED)
                return NULL;
        p = slack ? (unsigned char *)(((uintptr_t)m + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)) : m;
        if (p > m)
                munmap(m, (size_t)(p - m));
        if (m + len + slack > p + len)
                munmap(p + len, (size_t)(m + len + slack - (p + len)));
        return p;
}

/*
 * Faults every page in, after the huge-page advice so the faults take huge pages (8 MiB came
 * back as AnonHugePages in /proc/self/smaps here). The kernel's populate (Linux 5.14) returns an
 * error where a failed touch could only kill the process; older kernels refuse the advice
 * (EINVAL) and get the touch.
 */
static int prefault(unsigned char *p, size_t len)
{
        if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
                return 0;
        if (errno != EINVAL)
                return -1;
        for (size_t i = 0; i < len; i += page_size())
                ((volatile unsigned char *)p)[i] = 0;
        return 0;
}

/* The CPU engine's host memory: any memory will do, so make it fast to sort in. */
static sortd_status map_host(sortd_engine *e, size_t bytes, void **out)
{
        size_t len = (bytes + page_size() - 1) / page_size() * page_size();
        unsigned char *p = map_pages(len);

        if (p)
                (void)madvise(p, len, MADV_HUGEPAGE); /* THP off or "never": small pages do */
        if (!p || prefault(p, len) != 0) {
                int err = errno;

                if (p)
                        munmap(p, len);
                return sortd__engine_fail(e, SORTD_E_NOMEM,
                                          "cannot allocate %zu bytes of host memory: %s", bytes,
                                          strerror(err));
        }
        *out = p;
        return SORTD_OK;
}

sortd_status sortd_engine_host_alloc(sortd_engine *e, size_t bytes, void **out)
{
        if (!e)
                return SORTD_E_INVAL;
        e->why[0] = '\0';
        if (!out)
                return sortd__engine_fail(e, SORTD_E_INVAL, "out is NULL");
        if (bytes == 0 || bytes > (size_t)PTRDIFF_MAX)
                return sortd__engine_fail(e, SORTD_E_INVAL,
                                          "host allocation of %zu bytes: out of range [1, %td]",
                                          bytes, PTRDIFF_MAX);
        return e->ops->host_alloc ? e->ops->host_alloc(e, bytes, out) : map_host(e, bytes, out);
}

void sortd_engine_host_free(sortd_engine *e, void *p, size_t bytes)
{
        if (!e || !p)
                return;
        if (e->ops->host_free)
                e->ops->host_free(e, p, bytes);
        else
                munmap(p, bytes);
}

sortd_status sortd_engine_host_register(sortd_engine *e, void *p, size_t bytes)
{
        if (!e)
                return SORTD_E_INVAL;
        e->why[0] = '\0';
        if (!p)
                return sortd__engine_fail(e, SORTD_E_INVAL, "host memory to register is NULL");
        if (bytes == 0 || bytes > (size_t)PTRDIFF_MAX || bytes > UINTPTR_MAX - (uintptr_t)p)
                return sortd__engine_fail(e, SORTD_E_INVAL,
                                          "cannot register %zu bytes at %p: empty or past the "
                                          "end of the address space",
                                          bytes, p);
        return e->ops->host_register ? e->ops->host_register(e, p, bytes) : SORTD_OK;
}

/* A release on a lost engine succeeds: what it held went with the device. */
static sortd_status release(sortd_engine *e, sortd_status s)
{
        if (s != SORTD_OK && e->lost) {
                e->why[0] = '\0';
                return SORTD_OK;
        }
        return s;
}

sortd_status sortd_engine_host_unregister(sortd_engine *e, void *p)
{
        if (!e)
                return SORTD_E_INVAL;
        e->why[0] = '\0';
        if (!p)
                return sortd__engine_fail(e, SORTD_E_INVAL, "host memory to unregister is NULL");
        return release(e, e->ops->host_unregister ? e->ops->host_unregister(e, p) : SORTD_OK);
}

sortd_status sortd_engine_device_uuid(sortd_engine *e, uint8_t uuid[SORTD_DEVICE_UUID_BYTES])
{
        if (!e)
                return SORTD_E_INVAL;
        e->why[0] = '\0';
        if (!e->ops->device_uuid)
                return sortd__engine_no_device(e);
        if (!uuid)
                return sortd__engine_fail(e, SORTD_E_INVAL, "uuid is NULL");
        return e->ops->device_uuid(e, uuid);
}

sortd_status sortd_engine_ipc_open(sortd_engine *e,
                                   const uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES], void **base,
                                   size_t *bytes)
{
        if (!e)
                return SORTD_E_INVAL;
        e->why[0] = '\0';
        if (!e->ops->ipc_open)
                return sortd__engine_no_device(e);
        if (!handle || !base || !bytes)
                return sortd__engine_fail(e, SORTD_E_INVAL,
                                          "handle, base and bytes must not be NULL");
        return e->ops->ipc_open(e, handle, base, bytes);
}

sortd_status sortd_engine_ipc_close(sortd_engine *e, void *base)
{
        if (!e)
                return SORTD_E_INVAL;
        e->why[0] = '\0';
        if (!e->ops->ipc_close)
                return sortd__engine_no_device(e);
        if (!base)
                return sortd__engine_fail(e, SORTD_E_INVAL, "base is NULL");
        return release(e, e->ops->ipc_close(e, base));
}

void sortd_engine_destroy(sortd_engine *e)
{
        if (e)
                e->ops->destroy(e);
}
