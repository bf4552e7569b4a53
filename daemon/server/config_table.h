/*
 * The configuration table (config_table.c): its rows, and finding and setting a setting by
 * name. The bottom of the configuration: the loader (config.c), the file reader
 * (config_file.c) and the documentation (config_doc.c) call it, and it calls none of them.
 */
#ifndef SORTD_DAEMON_CONFIG_TABLE_H
#define SORTD_DAEMON_CONFIG_TABLE_H

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
        const char *def;            /* NULL: computed once the rest is read (config.c); "": empty */
        uint64_t min, max;
        const char *unit;
        const char *help;
} sortd__config_option;

extern const sortd__config_option sortd__config_table_options[];
extern const size_t sortd__config_table_n_options;

struct sortd__config;

/* The option of that name, or NULL. */
const sortd__config_option *sortd__config_table_find(const char *name, size_t len);

/* Sets o in cfg from its text; where names the value's origin in an error (FILE:LINE, "command
   line"). 0, or a negative errno (logged): -EINVAL for a value o does not take, -ENAMETOOLONG
   for a string longer than its field, or sortd__access_set's error for a list of users or
   groups. */
int sortd__config_table_set(struct sortd__config *cfg, const sortd__config_option *o,
                            const char *value, const char *where);

/* o's names as a list, "a, b or c". */
void sortd__config_table_format_choices(const sortd__config_option *o, char *buf, size_t len);

#endif
