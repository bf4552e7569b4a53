/*
 * The configuration table as documentation: --help, and --print-config's three forms, the
 * installed sortd.conf (every setting commented out at its default), docs/operations.md's table and
 * sortd.conf(5)'s list. All of them print the table's rows, so none can drift from it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "config_doc.h"
#include "config_table.h"

/* A setting's default as the documentation gives it; computed names one computed later. */
static const char *default_text(const sortd__config_option *o, const char *computed)
{
        return !o->def ? computed : *o->def ? o->def : "empty";
}

void sortd__config_doc_usage(void)
{
        printf("usage: sortd [--config FILE | --config-if-exists FILE] [--NAME VALUE]... "
               "[--check-config]\n\n"
               "settings (also 'NAME = VALUE' in the config file):\n");
        for (size_t i = 0; i < sortd__config_table_n_options; i++) {
                const sortd__config_option *o = &sortd__config_table_options[i];
                char names[96] = "";

                if (!o->def) { /* computed: its help says how */
                        printf("  --%-20s %s\n", o->name, o->help);
                        continue;
                }
                if (o->type == OPT_CHOICE) {
                        sortd__config_table_format_choices(o, names, sizeof(names) - 2);
                        strcat(names, "; ");
                }
                printf("  --%-20s %s (%sdefault: %s)\n", o->name, o->help, names,
                       default_text(o, NULL));
        }
        printf("  --%-20s %s\n  --%-20s %s\n  --%-20s %s\n  --%-20s %s\n  --%-20s %s\n",
               "config FILE", "read settings from FILE", "config-if-exists FILE",
               "read settings from FILE when it exists", "check-config, -t",
               "read and check the settings as a start would, then exit: 0 when they are valid, "
               "2 when not; creates no engine and binds no socket",
               "print-config[=FORMAT]",
               "print every setting at its default: conf (a commented sortd.conf), markdown or "
               "scdoc; or effective: each as the files and the command line set it, checked as "
               "--check-config checks them (exit 2 when not valid)",
               "version", "print the version");
}

enum doc_format { DOC_CONF, DOC_MARKDOWN, DOC_SCDOC };

/* A bound as the config file takes it: counts in decimal, sizes with their largest exact
   suffix (1T, not 1099511627776). */
static void format_bound(const sortd__config_option *o, uint64_t v, char *buf, size_t len)
{
        static const char suffixes[] = "KMGT";
        const char *suffix = "";

        for (int s = 0; o->type != OPT_COUNT && s < 4 && v >= 1024 && v % 1024 == 0; s++) {
                v /= 1024;
                suffix = &suffixes[s];
        }
        snprintf(buf, len, "%llu%.1s", (unsigned long long)v, suffix);
}

/* What a setting accepts, e.g. "1 to 1T keys", "path". */
static void format_accepts(const sortd__config_option *o, char *buf, size_t len)
{
        char lo[32], hi[32];

        if (o->type == OPT_CHOICE) {
                sortd__config_table_format_choices(o, buf, len);
                return;
        }
        if (o->type == OPT_STRING || o->type == OPT_USERS || o->type == OPT_GROUPS) {
                snprintf(buf, len, "%s", o->unit);
                return;
        }
        format_bound(o, o->min, lo, sizeof(lo));
        format_bound(o, o->max, hi, sizeof(hi));
        snprintf(buf, len, "%s to %s %s%s", lo, hi, o->unit,
                 o->type == OPT_SIZE_AUTO ? ", or auto" : "");
}

/* text with each of the characters in special preceded by a backslash. */
static void print_escaped(const char *text, const char *special)
{
        for (; *text; text++) {
                if (strchr(special, *text))
                        putchar('\\');
                putchar(*text);
        }
}

/* text as '# ' comment lines of at most 79 columns, broken at spaces. */
static void print_comment(const char *text)
{
        while (*text) {
                size_t n = strlen(text);

                if (n > 77) {
                        n = 77;
                        while (n > 0 && text[n] != ' ')
                                n--;
                        if (n == 0)
                                n = strcspn(text, " ");
                }
                printf("# %.*s\n", (int)n, text);
                text += n;
                text += *text == ' ';
        }
}

static void print_setting(const sortd__config_option *o, enum doc_format format)
{
        const char *def = default_text(o, "computed");
        bool literal = o->def && *o->def;
        char accepts[96];

        format_accepts(o, accepts, sizeof(accepts));
        switch (format) {
        case DOC_CONF:
                printf("\n");
                print_comment(o->help);
                printf("# accepts: %s\n#%s =%s%s\n", accepts, o->name, literal ? " " : "",
                       literal ? o->def : "");
                break;
        case DOC_MARKDOWN:
                printf("| `%s` | %s%s%s | %s | ", o->name, literal ? "`" : "", def,
                       literal ? "`" : "", accepts);
                print_escaped(o->help, "|");
                printf(" |\n");
                break;
        case DOC_SCDOC:
                printf("*%s* (", o->name);
                print_escaped(accepts, "\\*_");
                printf("; default: %s)\n\t", def);
                print_escaped(o->help, "\\*_");
                printf("\n\n");
                break;
        }
}

int sortd__config_doc_print(const char *format_name)
{
        static const char *const names[] = {"conf", "markdown", "scdoc"};
        int format = -1;

        for (int i = 0; i < 3; i++)
                if (strcmp(format_name, names[i]) == 0)
                        format = i;
        if (format < 0) {
                fprintf(stderr,
                        "sortd: --print-config: unknown format '%s' (conf, markdown, scdoc or "
                        "effective)\n",
                        format_name);
                return -EINVAL;
        }
        if (format == DOC_CONF)
                print_comment("sortd.conf: the settings of sortd, the sort daemon (sortd.conf(5)). "
                              "Every setting is commented out at its default, so the daemon's own "
                              "defaults apply until a line is uncommented. One 'name = value' a "
                              "line; sizes take K, M, G and T (powers of 1024); the command line "
                              "overrides this file. Written by sortd --print-config.");
        if (format == DOC_MARKDOWN)
                printf("| setting | default | accepts | what it bounds or chooses |\n"
                       "| --- | --- | --- | --- |\n");
        for (size_t i = 0; i < sortd__config_table_n_options; i++)
                print_setting(&sortd__config_table_options[i], (enum doc_format)format);
        return 0;
}

/* The value in effect of o in cfg, as the config file takes it: a string setting's own field,
   at any length it holds, else buf (len bytes) with a number, or "auto". */
static const char *value_text(const sortd__config *cfg, const sortd__config_option *o, char *buf,
                              size_t len)
{
        const char *field = (const char *)cfg + o->offset;
        uint64_t v;

        if (o->type == OPT_CHOICE && !o->size) /* kept as min + the name's index */
                return o->choices[*(const int *)field - (int)o->min];
        switch (o->type) {
        case OPT_CHOICE: /* kept as its name */
        case OPT_STRING:
        case OPT_USERS:
        case OPT_GROUPS:
                return field;
        case OPT_SIZE:
        case OPT_SIZE_AUTO:
        case OPT_COUNT:
                break;
        }
        memcpy(&v, field, sizeof(v));
        if (o->type == OPT_SIZE_AUTO && v == SORTD__CONFIG_AUTO)
                return "auto";
        format_bound(o, v, buf, len);
        return buf;
}

void sortd__config_doc_print_effective(const sortd__config *cfg)
{
        char number[32]; /* a uint64_t in decimal and a suffix */

        printf("# sortd --print-config=effective: the settings after the files and the command "
               "line\n");
        for (size_t i = 0; i < sortd__config_table_n_options; i++) {
                const sortd__config_option *o = &sortd__config_table_options[i];
                const char *value = value_text(cfg, o, number, sizeof(number));

                printf("%s =%s%s\n", o->name, *value ? " " : "", value);
        }
}
