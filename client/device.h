/*
 * The devices a daemon lists (device.c): its Device rows into the public struct, and a sort's
 * device hint checked against the last Hello's. Nothing here is exported (libsortd.sym).
 */
#ifndef SORTD_CLIENT_DEVICE_H
#define SORTD_CLIENT_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "sortd.h"
#include "transport.h"
#include "wire.h"

/* The n rows of a HelloReply or StatusReply into out (SORTD_MAX_DEVICES at most), and their
   number, all of them, into *count. */
void sortd__device_rows(Sortd__Wire__Device *const *rows, size_t n, unsigned *count,
                        sortd_device *out);

/* Whether uuid asks for a device (is not all zero). */
bool sortd__device_hinted(const uint8_t uuid[SORTD_DEVICE_UUID_BYTES]);

/*
 * A hint the daemon would refuse, refused here: a device the last Hello did not list as
 * serving. The rows past SORTD_MAX_DEVICES are unknown here, so the daemon judges a hint that
 * may be among them.
 */
sortd_status sortd__device_check_hint(sortd_conn *c, const uint8_t uuid[SORTD_DEVICE_UUID_BYTES]);

#endif
