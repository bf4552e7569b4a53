/*
 * A connection's frames to their steps (dispatch.c): a request decoded (request.c) is answered
 * through the pipeline or, a sort, admitted (admission.c); its payload then goes to the fair
 * queue. The connection calls in; nothing here calls the connection back.
 */
#ifndef SORTD_DAEMON_DISPATCH_H
#define SORTD_DAEMON_DISPATCH_H

#include "conn.h"
#include "frame.h"

/* What c's frame reader reported after a read; at a frame's end, fds it left are refused. */
void sortd__dispatch(sortd__conn *c, sortd__frame_event ev);
/* c's reading sort got its memory: its payload is read into its buffer, or dropped. */
void sortd__dispatch_admitted(sortd__conn *c);
/*
 * The engine thread opened or closed a region for c's RegisterRegion or UnregisterRegion job j:
 * the region is ready, or gone, and j holds its reply.
 */
void sortd__dispatch_region_done(sortd__conn *c, sortd__job *j);
/* c is closing: every region it has goes to the engine thread to be closed, after its sorts. */
void sortd__dispatch_closing(sortd__conn *c);

#endif
