/* JSON output that sortctl's subcommands share (json.c). */
#ifndef SORTCTL_JSON_H
#define SORTCTL_JSON_H

#include <stdio.h>

/* s as a JSON string's contents: the daemon's reasons and names may hold quotes. */
void sc_json_str(FILE *f, const char *s);

#endif
