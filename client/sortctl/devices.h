/*
 * The devices a daemon serves, as sortctl shows them (status) and names them (sort --device):
 * devices.c.
 */
#ifndef SORTCTL_DEVICES_H
#define SORTCTL_DEVICES_H

#include <stdint.h>
#include <stdio.h>

#include "sortd.h"

/* The rows st holds: its device_count, or SORTD_MAX_DEVICES of them when there are more. */
unsigned sc_devices_shown(const sortd_server_status *st);

/* The rows of st as a table, one line a device under a line of headings; nothing when there
   are none. */
void sc_devices_text(FILE *f, const sortd_server_status *st);

/* The rows of st as a JSON array of objects, one a device. */
void sc_devices_json(FILE *f, const sortd_server_status *st);

/*
 * Whether arg can name a device: a UUID as sc_devices_text prints it (or nvidia-smi -L, GPU-
 * or MIG-) or a decimal ordinal. Records the failure (fail.h) and returns -1 when it cannot.
 */
int sc_device_check_arg(const char *arg);

/*
 * The uuid of the device arg names, a UUID or the ordinal of one of the devices the last Hello
 * on c listed. On failure returns SC_FAIL with the message recorded, uuid untouched.
 */
int sc_device_resolve(const sortd_conn *c, const char *arg, uint8_t uuid[SORTD_DEVICE_UUID_BYTES]);

#endif
