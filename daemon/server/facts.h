/* The server's account of itself for Hello and Status (facts.c). */
#ifndef SORTD_SERVER_FACTS_H
#define SORTD_SERVER_FACTS_H

#include <stdint.h>

#include "server.h"

/* The largest n any lane sorts: what a request is checked against (the engines send it to a
   lane that can take it). */
uint64_t sortd__server_capacity(const sortd__server *srv);

/* dispatch's facts (arg: the server): what Hello and Status report, as it stands now. */
void sortd__server_facts(void *arg, sortd__reply_facts *f);

#endif
