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

sortd_status sortd__columns_sort(sortd_engine *e, const sortd__columns_mem *mem,
                                 const sortd__columns_job *job)
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
        s = sortd__columns_lsd(e, mem, groups, ngroups, w.word, w.perm, w.perm_bytes, job->n);
        if (s == SORTD_OK)
                s = sortd__columns_apply(e, mem, job, w.perm, w.perm_bytes, w.gather);
        workspace_free(e, mem, &w);
        return s;
}
