/*
 * The configuration table as documentation (config_doc.c): --help, --print-config's sortd.conf,
 * docs/operations.md's table and sortd.conf(5), and --print-config=effective.
 */
#ifndef SORTD_DAEMON_CONFIG_DOC_H
#define SORTD_DAEMON_CONFIG_DOC_H

struct sortd__config;

/* --help's text. */
void sortd__config_doc_usage(void);

/* --print-config=FORMAT (conf, markdown or scdoc): 0 when printed, -EINVAL (reported) for an
   unknown format. */
int sortd__config_doc_print(const char *format_name);

/* --print-config=effective: every setting at its value in cfg, as a sortd.conf would set it. */
void sortd__config_doc_print_effective(const struct sortd__config *cfg);

#endif
