/*
 * The devices setting (devices.c): which of the CUDA devices the process sees the daemon
 * serves. auto: all of them. Else a comma-separated list of CUDA ordinals and UUIDs as
 * nvidia-smi -L prints them (GPU-..., MIG-... for a MIG instance; a unique prefix will do, as
 * the driver takes in CUDA_VISIBLE_DEVICES). The driver applies CUDA_VISIBLE_DEVICES before
 * the daemon sees a device, so ordinals count the visible devices only.
 */
#ifndef SORTD_DAEMON_DEVICES_H
#define SORTD_DAEMON_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* The most entries a list may have: the daemon serves at most this many devices. */
#define SORTD__DEVICES_MAX 16

/* Whether spec is auto (every device, none an error). */
bool sortd__devices_auto(const char *spec);

/* spec's form, before any device is known: 0, or -EINVAL with why (an empty list or entry, an
   entry that is neither an ordinal nor a UUID, one written twice, too many). */
int sortd__devices_check(const char *spec, char *why, size_t why_len);

/*
 * The devices of list (count of them, as sortd_devices_list gives them) that spec names, in
 * its order (auto: all, in order), as indices into list in out (room for SORTD__DEVICES_MAX):
 * their number, or -EINVAL with why naming the entry that names no device or more than one, or
 * two entries that name the same device.
 */
int sortd__devices_resolve(const char *spec, const sortd_device_info *list, size_t count,
                           unsigned out[SORTD__DEVICES_MAX], char *why, size_t why_len);

/*
 * capacity=auto for a device with free_bytes free and streams engines: half its free memory
 * (the rest for CUDA IPC buffers and other processes) over the engines, each key costing
 * SORTD__DEVICES_BYTES_PER_KEY; no more than max_request_bytes lets one sort have (1-byte
 * keys) nor 2^40. 0 when not even one key fits.
 */
#define SORTD__DEVICES_BYTES_PER_KEY 32 /* 64-bit keys and values, in and out */
uint64_t sortd__devices_auto_capacity(uint64_t free_bytes, unsigned streams,
                                      uint64_t max_request_bytes);

#endif
