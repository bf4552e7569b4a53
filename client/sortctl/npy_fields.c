/* See npy_fields.h. */
#include <stdio.h>
#include <string.h>

#include "npy_fields.h"

/* What a record may hold at most: far above any real one, and far from overflowing. */
#define RECORD_MAX (1ull << 40)

/* A sub-array's shape, as the product of its dimensions. */
static int sub_array(npy_cursor *c, const char *name, uint64_t *count)
{
        uint64_t dims[64];
        unsigned ndim;

        if (npy_tuple(c, &ndim, dims, 64, "a field's shape") < 0)
                return -1;
        *count = 1;
        for (unsigned i = 0; i < ndim; i++) {
                if (dims[i] && *count > RECORD_MAX / dims[i])
                        return npy_fail(c, "field '%s' is a sub-array too large for a record",
                                        name);
                *count *= dims[i];
        }
        return 0;
}

/* The field's type: a dtype string (a nested list is refused). */
static int field_type(npy_cursor *c, npy_field *f)
{
        const char *s;
        size_t len;

        npy_skip_space(c);
        if (c->p < c->end && *c->p == '[')
                return npy_fail(c, "field '%s' is itself structured (nested): not supported",
                                f->name);
        if (npy_string(c, &s, &len) < 0)
                return -1;
        if (npy_dtype_parse(s, len, &f->type, c->why, c->why_len) < 0) {
                size_t used = strlen(c->why);

                if (c->why_len > used)
                        (void)snprintf(c->why + used, c->why_len - used, " in field '%s'", f->name);
                return -1;
        }
        return 0;
}

/* One ('name', 'dtype'[, shape]) tuple. */
static int field(npy_cursor *c, npy_fields *out)
{
        npy_field *f = &out->f[out->count];
        const char *name;
        size_t len;

        if (out->count == NPY_MAX_FIELDS)
                return npy_fail(c, "the structured dtype has more than %d fields", NPY_MAX_FIELDS);
        if (!npy_eat(c, '('))
                return npy_fail(c, "a field of the structured dtype is not a tuple");
        npy_skip_space(c);
        if (c->p < c->end && *c->p == '(')
                return npy_fail(c, "a field with a title (('title', 'name')) is not supported");
        if (npy_string(c, &name, &len) < 0)
                return -1;
        if (len >= NPY_MAX_NAME || memchr(name, '\0', len))
                return npy_fail(c, "a field's name is longer than %d bytes or holds a NUL",
                                NPY_MAX_NAME - 1);
        memcpy(f->name, name, len);
        f->name[len] = '\0';
        if (len && npy_fields_find(out, f->name))
                return npy_fail(c, "the structured dtype has the field '%s' twice", f->name);
        if (!npy_eat(c, ','))
                return npy_fail(c, "field '%s' has no dtype", f->name);
        if (field_type(c, f) < 0)
                return -1;
        f->count = 1;
        if (npy_eat(c, ',') && (npy_skip_space(c), c->p < c->end && *c->p == '(')) {
                if (sub_array(c, f->name, &f->count) < 0)
                        return -1;
                (void)npy_eat(c, ',');
        }
        if (!npy_eat(c, ')'))
                return npy_fail(c, "field '%s''s tuple is not closed", f->name);
        if (f->count && f->type.size > RECORD_MAX / f->count)
                return npy_fail(c, "field '%s' is too large for a record", f->name);
        f->offset = out->itemsize;
        out->itemsize += f->type.size * f->count;
        if (out->itemsize > RECORD_MAX)
                return npy_fail(c, "the structured dtype's records are too large");
        out->count++;
        return 0;
}

int npy_fields_parse(npy_cursor *c, npy_fields *out)
{
        out->count = 0;
        out->itemsize = 0;
        if (!npy_eat(c, '['))
                return npy_fail(c, "a structured dtype (a list of fields) was expected");
        while (!npy_eat(c, ']')) {
                if (field(c, out) < 0)
                        return -1;
                if (!npy_eat(c, ',')) {
                        if (!npy_eat(c, ']'))
                                return npy_fail(c, "the structured dtype's list is not closed");
                        break;
                }
        }
        if (out->count == 0)
                return npy_fail(c, "the structured dtype has no fields");
        return 0;
}

const npy_field *npy_fields_find(const npy_fields *fs, const char *name)
{
        for (unsigned i = 0; i < fs->count; i++)
                if (strcmp(fs->f[i].name, name) == 0)
                        return &fs->f[i];
        return NULL;
}
