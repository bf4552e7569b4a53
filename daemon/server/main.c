/* sortd: the sort daemon. Everything is in sortd__server_run (server.c). */
#include "server.h"

int main(int argc, char **argv)
{
        return sortd__server_run(argc, argv);
}
