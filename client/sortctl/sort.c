/*
 * sortctl sort: a file's keys (and a parallel file of values) sorted through the daemon and
 * written atomically. Inputs are read and checked before the daemon is asked; outputs are
 * written to temporary files and renamed over their destinations only once all of them, and
 * any written in place (a pipe), are complete, so a failed run replaces no file. IN is read
 * whole before OUT is replaced, so OUT may be IN.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "connect.h"
#include "devices.h"
#include "fail.h"
#include "formats.h"
#include "job.h"
#include "records.h"
#include "rows.h"
#include "sortctl.h"

static const char HELP[] =
        "usage: sortctl sort IN -o OUT [--type T] [--desc] [--bits B:E] [--rows LEN]\n"
        "                   [--values FILE --values-out FILE [--values-type T] | --argsort FILE]\n"
        "                   [--via auto|inline|shm] [--format npy|raw|text] [--device D]\n"
        "                   [--quiet]\n"
        "                   [--socket PATH] [--timeout MS]\n"
        "       sortctl sort IN.npy -o OUT --key FIELD[:asc|:desc][:T]... [--argsort FILE]\n"
        "\n"
        "Sorts the keys in IN through sortd and writes them to OUT. The sort is stable; floats\n"
        "follow IEEE totalOrder (-nan < -inf < ... < -0 < +0 < ... < inf < nan). A 2-d .npy\n"
        "array has each row (its last axis) sorted on its own, as np.sort(a, axis=-1), in one\n"
        "request; --rows does the same to any input.\n"
        "\n"
        "  -o, --out OUT      where the sorted keys go (may be IN: IN is read first)\n"
        "  --type T           key type: u8 i8 u16 i16 u32 i32 f32 u64 i64 f64 f16 bf16\n"
        "                     u128 i128; raw and text inputs need it, a .npy file's dtype\n"
        "                     must match it or store it: bf16 in <u2, u128 and i128 in\n"
        "                     |V16 or in <u8 of shape (n, 2), the low word first\n"
        "  --desc             descending order (still stable)\n"
        "  --bits B:E         order by bits [B, E) of the key's order-preserving image only\n"
        "  --key FIELD[:desc] sort the records of a 1-d structured .npy array by FIELD;\n"
        "                     repeat it (up to 8), the first most significant, each\n"
        "                     ascending or :desc. :bf16, :u128 or :i128 reads a <u2,\n"
        "                     |V16 or (2,) <u8 field as that type. Every field moves with\n"
        "                     its row: OUT keeps IN's dtype. Not with --desc, --bits,\n"
        "                     --rows, --values, --type, --via shm or --device\n"
        "  --rows LEN         sort each row of LEN keys on its own (IN holds whole rows); a\n"
        "                     .npy output is 2-d. A 2-d .npy input has rows of its own\n"
        "  --values FILE      values (4- or 8-byte elements, one for each key) that move with\n"
        "                     their keys; written to --values-out FILE\n"
        "  --values-type T    element type of a raw or text values file (u32 i32 f32 u64 i64\n"
        "                     f64)\n"
        "  --argsort FILE     also write the permutation: FILE[i] is the position in IN of the\n"
        "                     key now at OUT[i] (int64; .npy dtype <i8); with rows, the\n"
        "                     position in its row\n"
        "  --via V            auto (default): a shared-memory region when keys and values\n"
        "                     reach 1 MiB, the socket below; inline: through the socket;\n"
        "                     shm: a shared-memory region the daemon sorts in place\n"
        "  --format F         the format of IN and of every output, whatever their names\n"
        "  --device D         sort on this GPU: its UUID (GPU-..., as sortctl status and\n"
        "                     nvidia-smi -L print it) or its ordinal in sortctl status;\n"
        "                     refused when the daemon does not serve it. Default: the\n"
        "                     daemon chooses\n"
        "  --quiet            no progress line\n"
        "\n"
        "Formats, by extension unless --format says: .npy (NumPy; 1-d or 2-d, little- or\n"
        "big-endian, dtypes u1 i1 u2 i2 u4 i4 f4 u8 i8 f8 f2, and as --type says <u2,\n"
        "|V16 and (n, 2) <u8; structured by --key; versions 1.0 to 3.0; a .npy\n"
        "output keeps its input's byte order, --argsort's is <i8), .txt (text: one\n"
        "number per line; decimal integers, 128-bit ones too; floats as strtod reads\n"
        "them, inf and nan included, f16 and bf16 rounded to the nearest, written in the\n"
        "shortest form that reads back exactly),\n"
        ".bin or .raw (little-endian binary; a 128-bit key is 16 bytes, the low 8\n"
        "first). An input with another extension is raw; an\n"
        "output with another extension takes IN's format. Blank lines after a text file's\n"
        "last number are ignored; a bad text line (a blank one before a number included) is\n"
        "reported as IN:LINE and nothing is written.\n"
        "\n"
        "Outputs are written to a temporary file in their directory, fsynced, and renamed\n"
        "over OUT: a failed or interrupted sort leaves OUT and IN as they were. A symlink's\n"
        "target is replaced; an output that is no regular file (a pipe, /dev/stdout) is\n"
        "written in place once the sort has succeeded, after the temporary files, which are\n"
        "renamed only if it was written whole: what reached a pipe cannot be taken back, but\n"
        "no file is replaced by a run that fails. On a terminal\n"
        "a progress line (reading, sending, sorting, receiving, writing; a region's sort has\n"
        "no sending or receiving) appears on stderr for inputs of 16 MiB or more, or once\n"
        "the sort has taken 0.5 s.\n"
        "\n"
        "Exit status: 0 sorted; 1 bad input, usage or refused by sortd; 2 sortd unreachable.\n";

typedef struct sort_args {
        const char *in, *out, *values, *values_out, *argsort, *device;
        int type, values_type, fmt;
        sortd_sort_options opts;
        sc_rows rows;
        sc_via via;
        sc_keys keys;
        bool quiet;
} sort_args;

static int type_value(sc_args *a, const char *name, int *t)
{
        const char *v = sc_args_value(a, name);

        if (!v)
                return -1;
        if ((*t = sortd_key_type_parse(v)) < 0)
                return sc_fail(SC_FAIL,
                               "--%s %s: give one of u8 i8 u16 i16 u32 i32 f32 u64 i64 "
                               "f64 f16 bf16 u128 i128",
                               name, v),
                       -1;
        return 1;
}

static int bits_value(sc_args *a, sortd_sort_options *o)
{
        const char *v = sc_args_value(a, "bits");
        size_t bd, ed;
        unsigned long b, e;

        if (!v)
                return -1;
        /* Digits only: sscanf's %u would take spaces and a sign, and wrap a negative B. */
        bd = strspn(v, "0123456789");
        ed = v[bd] == ':' ? strspn(v + bd + 1, "0123456789") : 0;
        /* strtoul returns ULONG_MAX on overflow: refused as beyond 128. */
        b = bd && ed && !v[bd + 1 + ed] ? strtoul(v, NULL, 10) : ULONG_MAX;
        e = b != ULONG_MAX ? strtoul(v + bd + 1, NULL, 10) : 0;
        if (b >= e || e > 128)
                return sc_fail(SC_FAIL, "--bits %s: give B:E with 0 <= B < E <= the key's bits", v),
                       -1;
        o->begin_bit = (unsigned)b;
        o->end_bit = (unsigned)e;
        return 1;
}

/* Takes one of sort's own options; see sc_args_option_fn. */
static int option(sc_args *a, const char *name, const char *pos, void *ctx)
{
        sort_args *s = ctx;
        const char **path = NULL;
        const char *v;

        if (pos) {
                if (s->in)
                        return 0;
                s->in = pos;
                return 1;
        }
        if (!strcmp(name, "type") || !strcmp(name, "values-type"))
                return type_value(a, name, name[0] == 't' ? &s->type : &s->values_type);
        if (!strcmp(name, "bits"))
                return bits_value(a, &s->opts);
        if (!strcmp(name, "rows"))
                return sc_rows_value(a, &s->rows);
        if (!strcmp(name, "key"))
                return sc_keys_value(a, &s->keys);
        if (!strcmp(name, "desc")) {
                s->opts.order = SORTD_DESCENDING;
                return 1;
        }
        if (!strcmp(name, "quiet")) {
                s->quiet = true;
                return 1;
        }
        if (!strcmp(name, "device")) {
                s->device = sc_args_value(a, name);
                return s->device && sc_device_check_arg(s->device) == 0 ? 1 : -1;
        }
        path = !strcmp(name, "out")          ? &s->out
               : !strcmp(name, "values")     ? &s->values
               : !strcmp(name, "values-out") ? &s->values_out
               : !strcmp(name, "argsort")    ? &s->argsort
                                             : NULL;
        if (!path && strcmp(name, "via") && strcmp(name, "format"))
                return 0;
        if (!(v = sc_args_value(a, name)))
                return -1;
        if (path) {
                *path = v;
        } else if (name[0] == 'v') {
                int via = sc_via_parse(v);

                if (via < 0)
                        return sc_fail(SC_FAIL, "--via %s: give auto, inline or shm", v), -1;
                s->via = (sc_via)via;
        } else if ((s->fmt = sc_format_parse(v)) < 0) {
                return sc_fail(SC_FAIL, "--format %s: give npy, raw or text", v), -1;
        }
        return 1;
}

/* -o is the one short option: rewritten to --out before parsing. */
static void short_options(int argc, char **argv)
{
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0)
                        break;
                if (strcmp(argv[i], "-o") == 0)
                        argv[i] = "--out";
        }
}

static bool same_inode(const char *a, const char *b)
{
        struct stat sa, sb;

        return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
               sa.st_ino == sb.st_ino;
}

/* One file, whether it exists yet or not: new.txt and ./new.txt are one. */
static bool same_file(const char *a, const char *b)
{
        char da[PATH_MAX], db[PATH_MAX], ba[PATH_MAX], bb[PATH_MAX];

        if (!a || !b)
                return false;
        if (same_inode(a, b))
                return true;
        if (strlen(a) >= PATH_MAX || strlen(b) >= PATH_MAX)
                return strcmp(a, b) == 0;
        strcpy(da, a);
        strcpy(ba, a);
        strcpy(db, b);
        strcpy(bb, b);
        return strcmp(basename(ba), basename(bb)) == 0 && same_inode(dirname(da), dirname(db));
}

static int check_args(const sort_args *s)
{
        if (!s->in || !s->out)
                return sc_fail(SC_FAIL,
                               "sortctl sort needs IN and -o OUT: see sortctl sort --help");
        if (!s->values != !s->values_out)
                return sc_fail(SC_FAIL, "--values and --values-out go together: give both");
        if (s->values && s->argsort)
                return sc_fail(SC_FAIL, "--values and --argsort exclude each other: the daemon "
                                        "moves one payload; run twice");
        if (same_file(s->out, s->values_out) || same_file(s->out, s->argsort))
                return sc_fail(SC_FAIL, "two outputs name the same file: give each its own");
        if (sc_out_check_descriptor(s->out) != SC_OK ||
            (s->values_out && sc_out_check_descriptor(s->values_out) != SC_OK) ||
            (s->argsort && sc_out_check_descriptor(s->argsort) != SC_OK))
                return SC_FAIL;
        return SC_OK;
}

/* --bits against the keys' width, known once IN is open: before anything is read or sent. */
static int check_bits(const sortd_sort_options *o, sortd_key_type t)
{
        unsigned w = (unsigned)sortd_key_size(t) * 8;

        if (o->end_bit > w)
                return sc_fail(SC_FAIL, "--bits %u:%u: %s keys have %u bits: give E <= %u",
                               o->begin_bit, o->end_bit, sortd_key_type_name(t), w, w);
        return SC_OK;
}

/* The values file, checked against the keys before anything is sent. */
static int open_values(const sort_args *s, const sc_input *keys, sc_input *vals, sortd_payload *p,
                       sc_progress *prog)
{
        size_t vs;
        int r;

        if (!s->values) {
                *p = s->argsort ? SORTD_PAYLOAD_ARGSORT64 : SORTD_PAYLOAD_NONE;
                return SC_OK;
        }
        r = sc_input_open(vals, s->values, (sc_format)s->fmt, s->values_type, "--values-type",
                          prog);
        if (r != SC_OK)
                return r;
        if (vals->fields)
                return sc_fail(SC_FAIL,
                               "%s is a structured array (records): values are an "
                               "array of 4- or 8-byte elements",
                               s->values);
        vs = sortd_key_size(vals->type);
        if (vs != 4 && vs != 8)
                return sc_fail(SC_FAIL,
                               "%s holds %s: values must be 4 or 8 bytes wide (u32 i32 "
                               "f32 u64 i64 f64)",
                               s->values, sortd_key_type_name(vals->type));
        if (vals->n != keys->n)
                return sc_fail(SC_FAIL,
                               "%s has %llu values but %s has %llu keys: give one value "
                               "for each key",
                               s->values, (unsigned long long)vals->n, s->in,
                               (unsigned long long)keys->n);
        *p = vs == 4 ? SORTD_PAYLOAD_VALUES32 : SORTD_PAYLOAD_VALUES64;
        return SC_OK;
}

/* The keys, and the values or the permutation, written all or none (see sc_outputs_write). */
static int write_outputs(const sort_args *s, const sc_rows *rows, const sc_input *in,
                         const sc_input *vals, const sc_job *j, sc_progress *p)
{
        const char *second = s->values ? s->values_out : s->argsort;
        /* A .npy output keeps its input's byte order; the permutation is numpy's int64. */
        sc_output o[2] = {
                {.path = s->out,
                 .fmt = (sc_format)s->fmt,
                 .type = j->type,
                 .data = j->keys,
                 .n = j->n,
                 .npy = &in->npy},
                {.path = second,
                 .fmt = (sc_format)s->fmt,
                 .type = s->values ? vals->type : SORTD_KEY_I64,
                 .data = j->vals,
                 .n = j->n,
                 .npy = s->values ? &vals->npy : NULL},
        };

        for (int i = 0; i < 2; i++) {
                if (!o[i].fmt && o[i].path)
                        o[i].fmt = sc_format_of(o[i].path, in->fmt);
                sc_rows_shape(rows, rows->seg.row_len, &o[i]);
        }
        return sc_outputs_write(o, second ? 2 : 1, p);
}

/* A structured .npy file's records, sorted by --key: the options of arrays of keys are
   refused, not ignored. */
static int sort_records(sc_common *c, const sort_args *s, sc_input *in, sc_progress *p)
{
        const sc_records_out o = {.out = s->out, .argsort = s->argsort, .fmt = (sc_format)s->fmt};
        const char *other = s->values              ? "--values"
                            : s->rows.len          ? "--rows"
                            : s->opts.end_bit      ? "--bits"
                            : s->opts.order        ? "--desc (give FIELD:desc)"
                            : s->via == SC_VIA_SHM ? "--via shm"
                            : s->device            ? "--device"
                                                   : NULL;
        sortd_conn *conn = NULL;
        int r;

        if (!in->fields)
                return sc_fail(SC_FAIL,
                               "--key sorts the records of a structured .npy file, but %s is "
                               "an array of %s keys: leave --key out",
                               s->in, sortd_key_type_name(in->type));
        if (other)
                return sc_fail(SC_FAIL, "%s does not apply to records sorted by --key", other);
        r = sc_connect(c, &conn);
        if (r == SC_OK)
                r = sc_records_sort(conn, in, &s->keys, &o, p);
        sortd_close(conn);
        return r;
}

/* Reads the inputs into the job's buffers, sorts them, and writes the outputs. */
static int sort_file(sc_common *c, const sort_args *s, sc_progress *p)
{
        sc_input in = {.fd = -1}, vals = {.fd = -1};
        sc_job j = {.opts = s->opts};
        sc_rows rows = s->rows;
        sortd_conn *conn = NULL;
        int r = sc_input_open(&in, s->in, (sc_format)s->fmt, s->type, "--type", p);

        if (r == SC_OK && (in.fields || s->keys.count)) {
                r = sort_records(c, s, &in, p);
                sc_input_close(&in);
                return r;
        }
        if (r == SC_OK)
                r = check_bits(&s->opts, in.type);
        if (r == SC_OK)
                r = sc_rows_of(&in, &rows);
        j.seg = rows.on ? &rows.seg : NULL;
        if (r == SC_OK)
                r = open_values(s, &in, &vals, &j.payload, p);
        if (r == SC_OK)
                r = sc_connect(c, &conn);
        if (r == SC_OK && s->device)
                r = sc_device_resolve(conn, s->device, j.device_uuid);
        j.type = in.type;
        j.n = (size_t)in.n;
        if (r == SC_OK)
                r = sc_job_alloc(conn, &j, s->via);
        if (r == SC_OK) {
                sc_progress_phase(p, "reading", sc_job_bytes(&j));
                r = sc_input_read(&in, j.keys, p);
        }
        if (r == SC_OK && s->values)
                r = sc_input_read(&vals, j.vals, p);
        if (r == SC_OK)
                r = sc_job_sort(conn, &j, p);
        if (r == SC_OK)
                r = write_outputs(s, &rows, &in, &vals, &j, p);
        sc_job_free(conn, &j);
        sortd_close(conn);
        sc_input_close(&vals);
        sc_input_close(&in);
        return r;
}

int sc_cmd_sort(sc_common *c, int argc, char **argv)
{
        sort_args s = {.type = -1, .values_type = -1, .fmt = SC_FMT_AUTO, .via = SC_VIA_AUTO};
        struct stat st;
        sc_progress *p;
        bool helped;
        int r;

        short_options(argc, argv);
        r = sc_args_parse(c, argc, argv, "sort", HELP, option, &s, &helped);
        if (r != SC_OK || helped || (r = check_args(&s)) != SC_OK)
                return r;
        p = sc_progress_start(s.quiet, stat(s.in, &st) == 0 ? (uint64_t)st.st_size : 0);
        r = sort_file(c, &s, p);
        sc_progress_end(p);
        return r;
}
