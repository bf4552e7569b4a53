/* A sort of columns from start to end: its groups, its workspace, the passes, the result. */
#include "columns.h"

/* The workspace of one call: a word a row, the permutation, and room to gather columns. */
typedef struct workspace {
        uint64_t *word;
        void *perm;
        void *gather; /* NULL for an argsort that leaves the columns */
        unsigned perm_bytes;
} workspace;

static unsigned widest(const sortd__columns_job *job)
{
        unsigned w = (unsigned)sortd_payload_size(job->payload);

        for (unsigned j = 0; j < job->count; j++) {
                unsigned kb = (unsigned)sortd_key_size(job->cols[j].key_type);

                w = kb > w ? kb : w;
        }
        return w;
}

static void workspace_free(sortd_engine *e, const sortd__columns_mem *mem, workspace *w)
{
        void *parts[] = {w->word, w->perm, w->gather};

        for (unsigned i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
                if (parts[i])
                        mem->release(e, parts[i]);
}

static sortd_status workspace_alloc(sortd_engine *e, const sortd__columns_mem *mem,
                                    const sortd__columns_job *job, workspace *w)
{
        const size_t n = job->n;
        const bool gather = !sortd_payload_is_argsort(job->payload) || job->sort_keys;
        const size_t gather_bytes = gather ? widest(job) : 0;

        *w = (workspace){.perm_bytes = (uint64_t)n - 1 <= UINT32_MAX ? 4 : 8};
        if (n > SIZE_MAX / 16)
                return sortd__engine_fail(e, SORTD_E_NOMEM, "%zu rows are too many to sort", n);
        w->word = mem->alloc(e, n * sizeof(uint64_t));
        w->perm = w->word ? mem->alloc(e, n * w->perm_bytes) : NULL;
        w->gather = w->perm && gather ? mem->alloc(e, n * gather_bytes) : NULL;
        if (w->word && w->perm && (w->gather || !gather))
                return SORTD_OK;
        workspace_free(e, mem, w);
        return sortd__engine_fail(e, SORTD_E_NOMEM,
                                  "cannot allocate the %zu bytes of %s memory to sort %zu rows "
                                  "of %u key columns",
                                  n * (sizeof(uint64_t) + w->perm_bytes + gather_bytes), mem->where,
                                  n, job->count);
}

/* The packed path's one group, or the chained path's group a column, into groups. */
static unsigned make_groups(const sortd__columns_job *job, const sortd__column_map *maps,
                            sortd__column_group *groups)
{
        unsigned count = 0;

        for (unsigned j = 0; j < job->count; j++) {
                if (!job->packed || j == 0)
                        groups[count++] = (sortd__column_group){&maps[j], 0, 0};
                groups[count - 1].count++;
                groups[count - 1].bits += maps[j].width;
        }
        return count;
}

/* A job, whole (seg NULL) or within seg's segments. */
static sortd_status run(sortd_engine *e, const sortd__columns_mem *mem,
                        const sortd__columns_job *job, const sortd_segments *seg)
{
        sortd__column_map maps[SORTD_MAX_COLUMNS];
        sortd__column_group groups[SORTD_MAX_COLUMNS];
        unsigned ngroups;
        workspace w;
        sortd_status s;

        for (unsigned j = 0; j < job->count; j++)
                maps[j] = sortd__column_map_make(&job->cols[j], job->keys[j]);
        ngroups = make_groups(job, maps, groups);
        s = workspace_alloc(e, mem, job, &w);
        if (s != SORTD_OK)
                return s;
        s = sortd__columns_lsd(e, mem, groups, ngroups, seg, w.word, w.perm, w.perm_bytes, job->n);
        if (s == SORTD_OK)
                s = sortd__columns_apply(e, mem, job, w.perm, w.perm_bytes, w.gather);
        /* the rows' indices, less their segment's first: indices within it */
        if (s == SORTD_OK && seg && sortd_payload_is_argsort(job->payload))
                s = mem->rebase(e, job->vals, (unsigned)sortd_payload_size(job->payload), seg,
                                job->n);
        workspace_free(e, mem, &w);
        return s;
}

sortd_status sortd__columns_sort(sortd_engine *e, const sortd__columns_mem *mem,
                                 const sortd__columns_job *job)
{
        return run(e, mem, job, NULL);
}

sortd_status sortd__columns_sort_wide(sortd_engine *e, const sortd__columns_mem *mem,
                                      const sortd_sort_desc *d, const sortd_segments *seg,
                                      void *keys, void *vals, size_t n)
{
        const sortd_column col = {d->key_type, d->order, d->begin_bit, d->end_bit};
        void *const cols[1] = {keys};

        return run(e, mem,
                   &(sortd__columns_job){
                           .cols = &col,
                           .count = 1,
                           .keys = cols,
                           .vals = vals,
                           .n = n,
                           .payload = d->payload,
                           .packed = true,
                           .sort_keys = true,
                   },
                   seg);
}

sortd_status sortd__columns_topk(sortd_engine *e, const sortd__columns_mem *mem,
                                 const sortd_sort_desc *d, const sortd_segments *seg, uint64_t k,
                                 const void *keys, const void *vals, void *out_keys, void *out_vals,
                                 size_t n)
{
        const unsigned vb = (unsigned)sortd_payload_size(d->payload);
        void *kc = mem->alloc(e, n * 16), *vc = kc && vb ? mem->alloc(e, n * vb) : NULL;
        sortd_status s;

        if (!kc || (vb && !vc))
                s = sortd__engine_fail(e, SORTD_E_NOMEM,
                                       "cannot allocate the %zu bytes of %s memory for a copy of "
                                       "%zu keys",
                                       n * (16 + vb), mem->where, n);
        else
                s = mem->copy(e, kc, keys, n * 16);
        if (s == SORTD_OK && vb && !sortd_payload_is_argsort(d->payload))
                s = mem->copy(e, vc, vals, n * vb);
        if (s == SORTD_OK)
                s = sortd__columns_sort_wide(e, mem, d, seg, kc, vc, n);
        if (s == SORTD_OK)
                s = mem->take_firsts(e, seg, k, kc, 16, vc, vb, out_keys, out_vals, n);
        if (vc)
                mem->release(e, vc);
        if (kc)
                mem->release(e, kc);
        return s;
}
