/* Sorts six keys through sortd. cc hello.c $(pkg-config --cflags --libs sortd) */
#include <sortd.h>
#include <stdio.h>

int main(void)
{
        int32_t keys[] = {42, -7, 1000, 0, -7, 3};
        char err[256];
        sortd_conn *c;

        /* NULL: the socket in $SORTD_SOCKET, else the default path (sortd.h) */
        if (sortd_connect(NULL, NULL, &c, err, sizeof(err)) != SORTD_OK) {
                fprintf(stderr, "hello: %s\n", err);
                return 2;
        }
        if (sortd_sort(c, keys, 6, SORTD_KEY_I32, NULL) != SORTD_OK) {
                fprintf(stderr, "hello: %s\n", sortd_error_message(c));
                sortd_close(c);
                return 1;
        }
        for (int i = 0; i < 6; i++)
                printf("%d%c", keys[i], i < 5 ? ' ' : '\n');
        sortd_close(c);
        return 0;
}
