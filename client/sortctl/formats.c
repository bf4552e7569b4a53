/* See formats.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fail.h"
#include "fmt_npy.h"
#include "fmt_text.h"
#include "formats.h"
#include "sortctl.h"

/* Reads and writes go in pieces of this size, so that the progress line moves. */
#define CHUNK (8u << 20)

static const char *const NAMES[] = {
        [SC_FMT_NPY] = "npy", [SC_FMT_RAW] = "raw", [SC_FMT_TEXT] = "text"};

int sc_format_parse(const char *name)
{
        for (int f = SC_FMT_NPY; f <= SC_FMT_TEXT; f++)
                if (strcmp(name, NAMES[f]) == 0)
                        return f;
        return -1;
}

sc_format sc_format_of(const char *path, sc_format fallback)
{
        const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');

        if (!dot || (slash && dot < slash))
                return fallback;
        if (strcmp(dot, ".npy") == 0)
                return SC_FMT_NPY;
        if (strcmp(dot, ".txt") == 0)
                return SC_FMT_TEXT;
        if (strcmp(dot, ".bin") == 0 || strcmp(dot, ".raw") == 0)
                return SC_FMT_RAW;
        return fallback;
}

/* Reads len bytes at offset into dst, all of them. */
static int read_at(sc_input *in, void *dst, uint64_t len, uint64_t offset, sc_progress *p)
{
        uint8_t *d = dst;

        while (len > 0) {
                ssize_t r = pread(in->fd, d, len < CHUNK ? len : CHUNK, (off_t)offset);

                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return sc_fail(SC_FAIL, "%s: read: %s", in->path, strerror(errno));
                if (r == 0)
                        return sc_fail(SC_FAIL, "%s: the file shrank while it was read", in->path);
                d += r;
                len -= (uint64_t)r;
                offset += (uint64_t)r;
                sc_progress_add(p, (uint64_t)r);
        }
        return SC_OK;
}

/* A structured file's fields and header, kept for the records' sort and output. */
static int keep_records(sc_input *in, const npy_header *h, const uint8_t *head)
{
        npy_fields *f = malloc(sizeof(*f));
        uint8_t *copy = malloc(h->data_offset);

        if (!f || !copy) {
                free(f);
                free(copy);
                return sc_fail(SC_FAIL, "out of memory");
        }
        *f = h->fields;
        in->fields = f;
        in->head = memcpy(copy, head, h->data_offset);
        in->head_len = h->data_offset;
        return SC_OK;
}

static int open_npy(sc_input *in, uint64_t size, int type, const char *type_option)
{
        uint8_t *head;
        size_t len = size < NPY_MAX_PREAMBLE ? (size_t)size : NPY_MAX_PREAMBLE;
        char why[256];
        npy_header *h = malloc(sizeof(*h)); /* its fields are large for a stack */
        int r;

        head = malloc(len ? len : 1);
        if (!head || !h) {
                free(head);
                free(h);
                return sc_fail(SC_FAIL, "out of memory");
        }
        r = read_at(in, head, len, 0, NULL);
        if (r == SC_OK && npy_parse(head, len, size, h, why, sizeof(why)) < 0)
                r = sc_fail(SC_FAIL, "%s: %s", in->path, why);
        if (r == SC_OK && npy_retype(h, type, type_option, why, sizeof(why)) < 0)
                r = sc_fail(SC_FAIL, "%s %s", in->path, why);
        if (r == SC_OK && h->fields.count)
                r = keep_records(in, h, head);
        if (r == SC_OK) {
                in->type = h->type;
                in->npy = h->layout;
                in->n = h->n;
                in->ndim = h->ndim;
                in->shape[0] = h->shape[0];
                in->shape[1] = h->shape[1];
                in->offset = h->data_offset;
        }
        free(head);
        free(h);
        return r;
}

static int open_raw(sc_input *in, uint64_t size)
{
        size_t ks = sortd_key_size(in->type);

        if (size % ks)
                return sc_fail(SC_FAIL,
                               "%s: %llu bytes are not a whole number of %s elements (%zu bytes "
                               "each): check the type",
                               in->path, (unsigned long long)size, sortd_key_type_name(in->type),
                               ks);
        in->n = size / ks;
        return SC_OK;
}

static int open_text(sc_input *in, uint64_t size, sc_progress *p)
{
        char *buf;
        text_error err;
        uint64_t n;
        int r;

        if (size > SIZE_MAX / 2)
                return sc_fail(SC_FAIL, "%s: too large to read", in->path);
        buf = malloc(size ? size : 1);
        if (!buf)
                return sc_fail(SC_FAIL, "%s: out of memory reading %llu bytes", in->path,
                               (unsigned long long)size);
        r = read_at(in, buf, size, 0, p);
        n = r == SC_OK ? text_count_lines(buf, size) : 0;
        /* A line holds at least one byte, so n * 8 cannot overflow. */
        if (r == SC_OK && !(in->parsed = malloc(n ? n * sortd_key_size(in->type) : 1)))
                r = sc_fail(SC_FAIL, "%s: out of memory for %llu elements", in->path,
                            (unsigned long long)n);
        if (r == SC_OK && text_parse(buf, size, in->type, in->parsed, &n, &err) < 0)
                r = sc_fail(SC_FAIL, "%s:%llu: %s", in->path, (unsigned long long)err.line,
                            err.what);
        free(buf);
        in->n = n;
        return r;
}

/* The types type_option takes: values travel as 4- or 8-byte elements only. */
static const char *type_choices(const char *type_option)
{
        return strcmp(type_option, "--values-type") == 0
                       ? "u32 i32 f32 u64 i64 f64"
                       : "u8 i8 u16 i16 u32 i32 f32 u64 i64 f64 f16 bf16 u128 i128";
}

int sc_input_open(sc_input *in, const char *path, sc_format fmt, int type, const char *type_option,
                  sc_progress *p)
{
        struct stat st;

        *in = (sc_input){.path = path, .fmt = fmt ? fmt : sc_format_of(path, SC_FMT_RAW), .fd = -1};
        in->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (in->fd < 0)
                return sc_fail(SC_FAIL, "%s: cannot open it: %s: check the path", path,
                               strerror(errno));
        if (fstat(in->fd, &st) < 0 || !S_ISREG(st.st_mode))
                return sc_fail(SC_FAIL, "%s: not a regular file: give a file's path", path);
        if (in->fmt != SC_FMT_NPY && type < 0)
                return sc_fail(SC_FAIL, "%s is %s: give its element type with %s (%s)", path,
                               in->fmt == SC_FMT_TEXT ? "text" : "raw binary", type_option,
                               type_choices(type_option));
        in->type = (sortd_key_type)type;
        in->npy = npy_layout_of(in->type);
        sc_progress_phase(p, "reading", (uint64_t)st.st_size);
        switch (in->fmt) {
        case SC_FMT_NPY:
                return open_npy(in, (uint64_t)st.st_size, type, type_option);
        case SC_FMT_TEXT:
                return open_text(in, (uint64_t)st.st_size, p);
        default:
                return open_raw(in, (uint64_t)st.st_size);
        }
}

int sc_input_read(sc_input *in, void *dst, sc_progress *p)
{
        uint64_t bytes = in->n * (in->fields ? in->fields->itemsize : sortd_key_size(in->type));
        int r;

        if (in->parsed) {
                memcpy(dst, in->parsed, bytes);
                return SC_OK;
        }
        r = read_at(in, dst, bytes, in->offset, p);
        if (r == SC_OK && !in->fields)
                npy_to_native(&in->npy, dst, bytes);
        return r;
}

void sc_input_close(sc_input *in)
{
        if (in->fd >= 0)
                close(in->fd);
        free(in->parsed);
        free((void *)in->fields);
        free((void *)in->head);
        in->fd = -1;
        in->parsed = NULL;
        in->fields = NULL;
        in->head = NULL;
}

static int write_text(sc_out *o, sortd_key_type t, const uint8_t *data, uint64_t n, sc_progress *p)
{
        char line[TEXT_MAX_FORMATTED];
        size_t ks = sortd_key_size(t);

        for (uint64_t i = 0; i < n; i++) {
                size_t len = text_format(t, data + i * ks, line);

                if (sc_out_write(o, line, len) != SC_OK)
                        return SC_FAIL;
                if ((i & 0xffff) == 0xffff)
                        sc_progress_add(p, 0x10000 * ks);
        }
        return SC_OK;
}

/* An output's .npy header: a records' as their input had it; else 2-d as it says, or of its
   n elements. */
static size_t npy_header_of(const sc_output *d, uint8_t head[NPY_HEADER_OUT])
{
        const uint64_t one[2] = {d->n, 0};
        npy_layout l = d->npy ? *d->npy : npy_layout_of(d->type);

        return d->ndim == 2 ? npy_format(&l, 2, d->shape, head) : npy_format(&l, 1, one, head);
}

static uint64_t element_size(const sc_output *d)
{
        return d->record_size ? d->record_size : sortd_key_size(d->type);
}

/* Raw data, or .npy's header and data; big-endian data is swapped a piece at a time in a copy,
   so that the keys in memory stay as they are and are never copied whole. */
static int write_binary(sc_out *o, const sc_output *d, sc_progress *p)
{
        uint8_t head[NPY_HEADER_OUT];
        bool npy = d->fmt == SC_FMT_NPY;
        uint64_t bytes = d->n * element_size(d);
        bool swap = npy && !d->record_size && d->npy && d->npy->big_endian && bytes;
        uint8_t *copy = swap ? malloc(bytes < CHUNK ? bytes : CHUNK) : NULL;
        int r = SC_OK;

        if (swap && !copy)
                return sc_fail(SC_FAIL, "%s: out of memory", d->path);
        if (npy && d->record_size)
                r = sc_out_write(o, d->head, d->head_len) == SC_OK ? SC_OK : SC_FAIL;
        else if (npy)
                r = sc_out_write(o, head, npy_header_of(d, head)) == SC_OK ? SC_OK : SC_FAIL;
        /* CHUNK is a multiple of every key size: a piece swaps whole keys. */
        for (uint64_t at = 0; at < bytes && r == SC_OK; at += CHUNK) {
                size_t len = bytes - at < CHUNK ? (size_t)(bytes - at) : CHUNK;
                const uint8_t *piece = (const uint8_t *)d->data + at;

                if (copy) {
                        piece = memcpy(copy, piece, len);
                        npy_to_native(d->npy, copy, len);
                }
                r = sc_out_write(o, piece, len) == SC_OK ? SC_OK : SC_FAIL;
                sc_progress_add(p, len);
        }
        free(copy);
        return r;
}

static int write_output(sc_out *o, const sc_output *d, sc_progress *p)
{
        int r;

        sc_progress_phase(p, "writing", d->n * element_size(d));
        r = d->fmt == SC_FMT_TEXT ? write_text(o, d->type, d->data, d->n, p)
                                  : write_binary(o, d, p);
        return r == SC_OK ? sc_out_finish(o) : r;
}

/* Pass 0 writes the temporary files, pass 1 the outputs written in place: a pipe's reader
   that goes away, or a full disk, must fail the run before a file is replaced. */
int sc_outputs_write(const sc_output *outs, int n, sc_progress *p)
{
        sc_out *o[SC_MAX_OUTPUTS] = {NULL};
        int r = n <= SC_MAX_OUTPUTS ? SC_OK : sc_fail(SC_FAIL, "internal: too many outputs");

        for (int i = 0; i < n && r == SC_OK; i++)
                r = sc_out_open(outs[i].path, &o[i]);
        for (int pass = 0; pass < 2; pass++)
                for (int i = 0; i < n && r == SC_OK; i++)
                        if (sc_out_in_place(o[i]) == pass) {
                                /* What already reached a pipe cannot be taken back: say so. */
                                if (pass)
                                        sc_out_written_before(o[i], o, i);
                                r = write_output(o[i], &outs[i], p);
                        }
        if (r == SC_OK)
                return sc_out_commit_all(o, n);
        for (int i = 0; i < n; i++)
                sc_out_discard(o[i]);
        return r;
}
