/* sortd: the sort daemon. Everything is in sortd__run (server.c). */
#include "server.h"

int main(int argc, char **argv)
{
        return sortd__run(argc, argv);
}
