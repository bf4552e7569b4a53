/* Reading a sortd.conf (config_file.c) into the settings, through the table (config_table.h). */
#ifndef SORTD_DAEMON_CONFIG_FILE_H
#define SORTD_DAEMON_CONFIG_FILE_H

#include <stdbool.h>

struct sortd__config;

/*
 * The settings of the file at path into cfg; optional: a missing file is the defaults
 * (--config-if-exists). 0, or a negative errno (logged): the error opening or reading the file
 * failed with; -EINVAL for a file that is no regular file, or a line that sets no known
 * setting; -EMSGSIZE for a line longer than 64 KiB; -EILSEQ for a NUL byte; or the table's
 * error for a value it does not take (config_table.h).
 */
int sortd__config_file_load(struct sortd__config *cfg, const char *path, bool optional);

#endif
