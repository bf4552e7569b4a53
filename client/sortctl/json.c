/* See json.h. */
#include "json.h"

void sc_json_str(FILE *f, const char *s)
{
        for (; *s; s++) {
                if (*s == '"' || *s == '\\')
                        fprintf(f, "\\%c", *s);
                else if ((unsigned char)*s < 0x20)
                        fprintf(f, "\\u%04x", *s);
                else
                        putc(*s, f);
        }
}
