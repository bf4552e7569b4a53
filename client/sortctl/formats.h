/*
 * Array files in and out, in the three formats: which one a file is, reading its elements into
 * memory the caller chose (the heap, or a shared-memory region), and writing them as nearly all or
 * none as they allow.
 *
 * A file's format is --format when given; else its extension: .npy (NumPy), .txt (text),
 * .bin or .raw (raw little-endian binary). An input with another extension is raw; an output
 * with another extension takes the input's format. Raw and text files do not say their element
 * type: the command line does (--type, --values-type).
 */
#ifndef SORTCTL_FORMATS_H
#define SORTCTL_FORMATS_H

#include <stdbool.h>
#include <stdint.h>

#include "atomic.h"
#include "fmt_npy.h"
#include "progress.h"
#include "sortd_types.h"

typedef enum sc_format { SC_FMT_AUTO, SC_FMT_NPY, SC_FMT_RAW, SC_FMT_TEXT } sc_format;

/* "npy", "raw", "text"; -1 if unknown. */
int sc_format_parse(const char *name);
/* The format path's extension names, else fallback. */
sc_format sc_format_of(const char *path, sc_format fallback);

typedef struct sc_input {
        const char *path;
        sc_format fmt;
        sortd_key_type type;
        uint64_t n;
        npy_layout npy; /* how a .npy file stores the keys (sc_input_read makes them native);
                           npy_layout_of(type) for other formats */
        unsigned ndim;  /* 2: a 2-d .npy file, of shape[0] rows of shape[1]; else 1 */
        uint64_t shape[2];
        /* A structured .npy file (records): its fields, and its header to write back as it
           was; n counts records, and type is unused. NULL for others. */
        const npy_fields *fields;
        const uint8_t *head;
        uint64_t head_len;
        /* private */
        int fd;
        uint64_t offset; /* of the data in the file */
        void *parsed;    /* text: the elements, parsed when opened */
} sc_input;

/*
 * Opens path in format fmt (AUTO: by its extension). type is the key type the command line
 * gave (-1 for none), named type_option in messages: raw and text files need it, and a .npy
 * file's dtype must match it or store it (npy_retype). Fills in->type and in->n, or
 * in->fields for a structured .npy file. Text is read and parsed here, so that a bad line
 * fails before anything is sent or written.
 */
int sc_input_open(sc_input *in, const char *path, sc_format fmt, int type, const char *type_option,
                  sc_progress *p);
/* Reads the n elements into dst (n * key size bytes, or n records), in native byte order
   (records as they are: their keys are swapped where they are taken out). */
int sc_input_read(sc_input *in, void *dst, sc_progress *p);
void sc_input_close(sc_input *in);

/* One output: n elements of type t at data, for path, in format fmt. */
typedef struct sc_output {
        const char *path;
        sc_format fmt;
        sortd_key_type type;
        const void *data;
        uint64_t n;
        const npy_layout *npy; /* npy: stored as the input was; NULL: npy_layout_of(type) */
        unsigned ndim;         /* npy: 2 writes shape (shape[0], shape[1]); else (n,) */
        uint64_t shape[2];
        /* Records (record_size > 0): data is n records, and a .npy output starts with head,
           the input's header; type, npy and ndim are unused. */
        uint64_t record_size;
        const uint8_t *head;
        uint64_t head_len;
} sc_output;

/*
 * Writes the n outputs as nearly all or none as their kinds allow. Every destination is opened
 * first; then every regular file's temporary is written and fsynced; then every output that is
 * no regular file (a pipe, a terminal, /dev/null) is written in place; and only once all of
 * those succeeded are the temporaries renamed. A failure before the renames replaces no file,
 * though an in-place output may hold what reached it; a rename that fails after others, rare
 * once the destinations opened, is reported with the outputs already written.
 */
int sc_outputs_write(const sc_output *outs, int n, sc_progress *p);

#endif
