/* Connecting sortctl to sortd (connect.c). */
#ifndef SORTCTL_CONNECT_H
#define SORTCTL_CONNECT_H

#include "sortctl.h"

/* Connects as c says; on failure returns the exit code with the message recorded (fail.h). */
int sc_connect(const sc_common *c, sortd_conn **out);

#endif
