/*
 * What each frame of a connection becomes (intake.c): dispatch decides, and this carries it
 * out for the connection. conn.c calls it as it parses and as jobs come back; it never calls
 * conn.c, and touches only the connection's parts named below.
 */
#ifndef SORTD_DAEMON_INTAKE_H
#define SORTD_DAEMON_INTAKE_H

#include "conn.h"

/* What c's frame reader reported after a read; at a frame's end, fds it left are refused. */
void sortd__intake_frame_event(sortd__conn *c, sortd__frame_event ev);
/* c's reading sort has its bytes charged: its payload goes to its buffer, or, with no buffer
   to be had, it is dropped, the sort answered with SORTD_E_NOMEM and the bytes given back. */
void sortd__intake_read_payload(sortd__conn *c);
/* j goes to the engines; one small sort of the read being parsed may be sorted at once. */
void sortd__intake_submit(sortd__conn *c, sortd__job *j);
/* A sort came back, or was sorted here: its regions are free again, and it is counted once. */
void sortd__intake_sort_done(sortd__conn *c, sortd__job *j);

#endif
