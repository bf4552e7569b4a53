/*
 * What client.c (the public calls) and region.c (the calls on shared-memory regions) share
 * inside libsortd. Both sit on transport.h; nothing here is exported (libsortd.sym).
 */
#ifndef SORTD_CLIENT_INTERNAL_H
#define SORTD_CLIENT_INTERNAL_H

#include <stddef.h>

#include "sortd.h"
#include "transport.h"
#include "wire.h"

/*
 * One request that carries no payload and whose reply carries none (Hello, Ping, Status, the
 * region calls): sends req with a fresh id (pass_fd >= 0 goes with it as SCM_RIGHTS), reads
 * the reply, and checks its status and that its body is want. On success *out is the reply
 * (free it); on error *out is untouched or NULL and c holds the message.
 */
sortd_status sortd__client_call(sortd_conn *c, Sortd__Wire__Request *req, int pass_fd,
                                Sortd__Wire__Reply__BodyCase want, Sortd__Wire__Reply **out);

/* The checks every call with an argument starts with (c and arg non-NULL, c not broken);
   then the call's deadline starts and its message is cleared. */
sortd_status sortd__client_begin(sortd_conn *c, const void *arg, const char *what);

/* The checks of every sort, wherever its data lies: the descriptor, n's sizes without overflow
   (*sizes), n within the daemon's capacity. */
sortd_status sortd__client_check_sort(sortd_conn *c, const sortd_sort_desc *d, size_t n,
                                      sortd__wire_sizes *sizes);

/* The fields of a Sort message that every data location shares. */
void sortd__client_sort_msg(Sortd__Wire__Sort *sort, sortd_key_type t, sortd_payload p,
                            const sortd_sort_options *o, size_t n);

/* A SortReply's timings into *t (left as they are when the reply has none). */
void sortd__client_timings(const Sortd__Wire__SortReply *r, sortd_timings *t);

/* sortd_close: the daemon drops c's regions with the connection; the client keeps their
   mappings until sortd_region_destroy, which then only unmaps and closes. */
void sortd__client_regions_orphan(sortd_conn *c);

#endif
