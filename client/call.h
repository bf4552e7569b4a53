/*
 * What every call of libsortd shares (call.c), whether its data crosses the socket (client.c)
 * or lies in a region (region.c). It sits on transport.h; nothing here is exported
 * (libsortd.sym).
 */
#ifndef SORTD_CLIENT_CALL_H
#define SORTD_CLIENT_CALL_H

#include <stddef.h>

#include "sortd.h"
#include "transport.h"
#include "wire.h"

/* The checks every call with an argument starts with (c and arg non-NULL, c not broken);
   then the call's deadline starts and its message is cleared. */
sortd_status sortd__call_begin(sortd_conn *c, const void *arg, const char *what);

/*
 * A reply's status: OK, or the daemon's error with its message. SORTD_E_PROTOCOL (the daemon
 * could not make sense of the request, or sent a status this library does not know) says the
 * two sides disagree about the protocol: the daemon keeps the stream in step, but nothing more
 * said on it can be trusted, so it breaks the connection as sortd.h says.
 */
sortd_status sortd__call_reply_status(sortd_conn *c, const Sortd__Wire__Reply *r);

/*
 * One request that carries no payload and whose reply carries none (Hello, Ping, Status, the
 * region calls): sends req with a fresh id (pass_fd >= 0 goes with it as SCM_RIGHTS), reads
 * the reply, and checks its status and that its body is want. On success *out is the reply
 * (free it); on error *out is untouched or NULL and c holds the message.
 */
sortd_status sortd__call_request(sortd_conn *c, Sortd__Wire__Request *req, int pass_fd,
                                 Sortd__Wire__Reply__BodyCase want, Sortd__Wire__Reply **out);

/* The same, with count payload pieces after the request (a region sort's segment offsets);
   the reply still carries none. */
sortd_status sortd__call_request_payload(sortd_conn *c, Sortd__Wire__Request *req, int pass_fd,
                                         const sortd__transport_piece *pieces, int count,
                                         Sortd__Wire__Reply__BodyCase want,
                                         Sortd__Wire__Reply **out);

/* The checks of every sort, wherever its data lies: the descriptor, n's sizes without overflow
   (*sizes), n within the daemon's capacity, the device asked for among those it serves. */
sortd_status sortd__call_check_sort(sortd_conn *c, sortd_key_type t, sortd_payload p,
                                    const sortd_sort_options *o,
                                    const uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES], size_t n,
                                    sortd__wire_sizes *sizes);

/* The fields of a Sort message that every data location shares; its device_uuid points into
   device_uuid, which must outlive sort. */
void sortd__call_sort_msg(Sortd__Wire__Sort *sort, sortd_key_type t, sortd_payload p,
                          const sortd_sort_options *o,
                          const uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES], size_t n);

/* A SortReply's timings into *t (left as they are when the reply has none). */
void sortd__call_timings(const Sortd__Wire__SortReply *r, sortd_timings *t);

#endif
