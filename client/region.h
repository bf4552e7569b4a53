/* What libsortd's regions (region.c) offer the rest of the library: nothing here is exported. */
#ifndef SORTD_CLIENT_REGION_H
#define SORTD_CLIENT_REGION_H

#include "sortd.h"

/* sortd_close: the daemon drops c's regions with the connection; the client keeps their
   mappings until sortd_region_destroy, which then only unmaps and closes. */
void sortd__region_orphan_all(sortd_conn *c);

#endif
