/*
 * sortctl topk: the k smallest (or largest) keys of a file, or of each of its rows, through the
 * daemon, with their positions if asked, written as sort writes its outputs (atomically, all
 * or none). The rows are a 2-d .npy file's or --rows LEN's (rows.c); the results keep them:
 * (rows, min(k, LEN)), in order, as torch.topk gives them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "atomic.h"
#include "connect.h"
#include "devices.h"
#include "fail.h"
#include "formats.h"
#include "job.h"
#include "rows.h"
#include "sortctl.h"

static const char HELP[] =
        "usage: sortctl topk -k K IN -o OUT [--largest] [--type T] [--rows LEN]\n"
        "                   [--indices FILE] [--via auto|inline|shm] [--format npy|raw|text]\n"
        "                   [--device D] [--quiet] [--socket PATH] [--timeout MS]\n"
        "\n"
        "Writes the K smallest keys of IN (--largest: the largest) to OUT, in order, through\n"
        "sortd; of each row on its own when IN has rows (a 2-d .npy array's, or --rows LEN's),\n"
        "K of every row, one request for all. Equal keys go by their position, the first\n"
        "first: the results are the first K of a stable sort. Floats follow IEEE totalOrder\n"
        "(-nan < -inf < ... < -0 < +0 < ... < inf < nan). A row of fewer than K keys gives\n"
        "them all.\n"
        "\n"
        "  -k K               how many keys of each row (at least 1)\n"
        "  -o, --out OUT      where the keys go: (rows, min(K, LEN)) for a .npy output with\n"
        "                     rows, else min(K, n) keys\n"
        "  --largest          the largest keys, largest first (default: the smallest,\n"
        "                     smallest first)\n"
        "  --type T           key type: u8 i8 u16 i16 u32 i32 f32 u64 i64 f64 f16 bf16;\n"
        "                     raw and text inputs need it, a .npy file's dtype must match\n"
        "                     it (or store it: bf16 in <u2). A top-k of u128 or i128 keys\n"
        "                     is refused with the daemon's reason\n"
        "  --rows LEN         the top K of each row of LEN keys (IN holds whole rows)\n"
        "  --indices FILE     also write each result's position in IN (in its row), int64,\n"
        "                     shaped as OUT\n"
        "  --via, --format, --device, --quiet: as for sortctl sort (see sortctl sort --help)\n"
        "\n"
        "IN is only read. Exit status: 0 done; 1 bad input, usage or refused by sortd; 2\n"
        "sortd unreachable.\n";

typedef struct topk_args {
        const char *in, *out, *indices, *device;
        int type, fmt;
        uint64_t k;
        bool largest, quiet;
        sc_rows rows;
        sc_via via;
} topk_args;

static int k_value(sc_args *a, uint64_t *k)
{
        const char *v = sc_args_value(a, "k");

        if (!v)
                return -1;
        if (sc_args_parse_count(v, k) < 0 || *k == 0)
                return sc_fail(SC_FAIL, "-k %s: give how many keys of each row, at least 1", v), -1;
        return 1;
}

/* The options that name a file or a choice: 1 taken, 0 not topk's, -1 bad. */
static int value_option(sc_args *a, const char *name, topk_args *t)
{
        const char **path = !strcmp(name, "out")       ? &t->out
                            : !strcmp(name, "indices") ? &t->indices
                            : !strcmp(name, "device")  ? &t->device
                                                       : NULL;
        const char *v;
        int x;

        if (!path && strcmp(name, "via") && strcmp(name, "format") && strcmp(name, "type"))
                return 0;
        if (!(v = sc_args_value(a, name)))
                return -1;
        if (path) {
                *path = v;
                return path != &t->device || sc_device_check_arg(v) == 0 ? 1 : -1;
        }
        if (!strcmp(name, "via") && (x = sc_via_parse(v)) >= 0)
                return t->via = (sc_via)x, 1;
        if (!strcmp(name, "format") && (t->fmt = sc_format_parse(v)) >= 0)
                return 1;
        if (!strcmp(name, "type") && (t->type = sortd_key_type_parse(v)) >= 0)
                return 1;
        return sc_fail(SC_FAIL, "--%s %s: see sortctl topk --help for what it takes", name, v), -1;
}

/* Takes one of topk's own options; see sc_args_option_fn. */
static int option(sc_args *a, const char *name, const char *pos, void *ctx)
{
        topk_args *t = ctx;

        if (pos) {
                if (t->in)
                        return 0;
                t->in = pos;
                return 1;
        }
        if (!strcmp(name, "k"))
                return k_value(a, &t->k);
        if (!strcmp(name, "rows"))
                return sc_rows_value(a, &t->rows);
        if (!strcmp(name, "largest") || !strcmp(name, "quiet")) {
                *(name[0] == 'l' ? &t->largest : &t->quiet) = true;
                return 1;
        }
        return value_option(a, name, t);
}

/* -o and -k are the short options: rewritten to --out and --k before parsing. */
static void short_options(int argc, char **argv)
{
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0)
                        break;
                if (strcmp(argv[i], "-o") == 0)
                        argv[i] = "--out";
                else if (strcmp(argv[i], "-k") == 0)
                        argv[i] = "--k";
        }
}

static int check_args(const topk_args *t)
{
        if (!t->in || !t->out || !t->k)
                return sc_fail(SC_FAIL,
                               "sortctl topk needs -k K, IN and -o OUT: see sortctl topk --help");
        if (t->indices && strcmp(t->out, t->indices) == 0)
                return sc_fail(SC_FAIL, "-o and --indices name the same file: give each its own");
        if (sc_out_check_descriptor(t->out) != SC_OK ||
            (t->indices && sc_out_check_descriptor(t->indices) != SC_OK))
                return SC_FAIL;
        return SC_OK;
}

/* The results, and their positions if asked, shaped as the rows say. */
static int write_outputs(const topk_args *t, const sc_rows *rows, const sc_input *in,
                         const sc_job *j, sc_progress *p)
{
        uint64_t width = rows->on ? (t->k < rows->seg.row_len ? t->k : rows->seg.row_len) : 0;
        sc_output o[2] = {
                {.path = t->out,
                 .fmt = (sc_format)t->fmt,
                 .type = j->type,
                 .data = j->out_keys,
                 .n = j->results,
                 .npy = &in->npy},
                {.path = t->indices,
                 .fmt = (sc_format)t->fmt,
                 .type = SORTD_KEY_I64,
                 .data = j->out_vals,
                 .n = j->results},
        };

        for (int i = 0; i < 2; i++) {
                if (!o[i].fmt && o[i].path)
                        o[i].fmt = sc_format_of(o[i].path, in->fmt);
                sc_rows_shape(rows, width, &o[i]);
        }
        return sc_outputs_write(o, t->indices ? 2 : 1, p);
}

/* Reads IN into the job's buffers, asks for its top-k, and writes the results. */
static int topk_file(sc_common *c, const topk_args *t, sc_progress *p)
{
        sc_input in = {.fd = -1};
        sc_job j = {.k = t->k,
                    .payload = t->indices ? SORTD_PAYLOAD_ARGSORT64 : SORTD_PAYLOAD_NONE,
                    .opts = {.order = t->largest ? SORTD_DESCENDING : SORTD_ASCENDING}};
        sc_rows rows = t->rows;
        sortd_conn *conn = NULL;
        int r = sc_input_open(&in, t->in, (sc_format)t->fmt, t->type, "--type", p);

        if (r == SC_OK && in.fields)
                r = sc_fail(SC_FAIL,
                            "%s is a structured array (records): topk takes an array of keys",
                            t->in);
        if (r == SC_OK)
                r = sc_rows_of(&in, &rows);
        j.seg = rows.on ? &rows.seg : NULL;
        if (r == SC_OK)
                r = sc_connect(c, &conn);
        if (r == SC_OK && t->device)
                r = sc_device_resolve(conn, t->device, j.device_uuid);
        j.type = in.type;
        j.n = (size_t)in.n;
        if (r == SC_OK)
                r = sc_job_alloc(conn, &j, t->via);
        if (r == SC_OK) {
                sc_progress_phase(p, "reading", sc_job_bytes(&j));
                r = sc_input_read(&in, j.keys, p);
        }
        if (r == SC_OK && j.n)
                r = sc_job_sort(conn, &j, p);
        if (r == SC_OK)
                r = write_outputs(t, &rows, &in, &j, p);
        sc_job_free(conn, &j);
        sortd_close(conn);
        sc_input_close(&in);
        return r;
}

int sc_cmd_topk(sc_common *c, int argc, char **argv)
{
        topk_args t = {.type = -1, .fmt = SC_FMT_AUTO, .via = SC_VIA_AUTO};
        struct stat st;
        sc_progress *p;
        bool helped;
        int r;

        short_options(argc, argv);
        r = sc_args_parse(c, argc, argv, "topk", HELP, option, &t, &helped);
        if (r != SC_OK || helped || (r = check_args(&t)) != SC_OK)
                return r;
        p = sc_progress_start(t.quiet, stat(t.in, &st) == 0 ? (uint64_t)st.st_size : 0);
        r = topk_file(c, &t, p);
        sc_progress_end(p);
        return r;
}
