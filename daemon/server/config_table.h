/*
 * The configuration table's rows (config.c), shared with the file reader (config_file.c) and
 * the code that prints them as documentation (config_doc.c): --help, and --print-config's
 * sortd.conf, README table and sortd.conf(5).
 */
#ifndef SORTD_DAEMON_CONFIG_TABLE_H
#define SORTD_DAEMON_CONFIG_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * OPT_CHOICE: one of the names in choices, kept as the name in a string field, or in an int
 * field as min + its index. OPT_USERS, OPT_GROUPS: a string of comma-separated names or ids,
 * resolved once, as it is read, into the config's access list (access.c). OPT_SIZE_AUTO: a size, or
 * "auto" (SORTD__CONFIG_AUTO).
 */
enum sortd__config_opt_type {
        OPT_STRING,
        OPT_CHOICE,
        OPT_USERS,
        OPT_GROUPS,
        OPT_SIZE,
        OPT_SIZE_AUTO,
        OPT_COUNT
};

typedef struct sortd__config_option {
        const char *name;
        enum sortd__config_opt_type type;
        size_t offset;
        size_t size;                /* of a string field */
        const char *const *choices; /* OPT_CHOICE's names; NULL ends them */
        const char *def;            /* NULL: computed once the rest is read (check()); "": empty */
        uint64_t min, max;
        const char *unit;
        const char *help;
} sortd__config_option;

extern const sortd__config_option sortd__config_options[];
extern const size_t sortd__config_n_options;

struct sortd__config;

/* The option of that name, or NULL. */
const sortd__config_option *sortd__config_find_option(const char *name, size_t len);
/* Sets o in cfg from its text; where names the value's origin in an error (FILE:LINE, "command
   line"). 0, or -1 (logged). */
int sortd__config_set_option(struct sortd__config *cfg, const sortd__config_option *o,
                             const char *value, const char *where);
/* config_file.c: the settings of the file at path into cfg; optional: a missing file is the
   defaults (--config-if-exists). 0, or -1 (logged). */
int sortd__config_file_load(struct sortd__config *cfg, const char *path, bool optional);

/* o's names as a list, "a, b or c". */
void sortd__config_format_choices(const sortd__config_option *o, char *buf, size_t len);

/* config_doc.c: --help's text; --print-config=FORMAT (conf, markdown or scdoc): 1 when
   printed, -1 (reported) for an unknown format. */
void sortd__config_doc_usage(void);
int sortd__config_doc_print(const char *format_name);

/* --print-config=effective: every setting at its value in cfg, as a sortd.conf would set it. */
void sortd__config_doc_print_effective(const struct sortd__config *cfg);

#endif
