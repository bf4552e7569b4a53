/*
 * Prints, as JSON, the facts of libsortd's ABI that the Python package restates in ctypes:
 * struct sizes and member offsets, enum values, key type names and the counter list, all taken
 * from the installed headers by the compiler. test_abi.py compares the package against it.
 */
#include <stddef.h>
#include <stdio.h>

#include "sortd.h"

static const char *sep = "";

static void field(const char *s, const char *m, size_t off)
{
        printf("%s\"%s.%s\": %zu", sep, s, m, off);
        sep = ", ";
}

static void value(const char *name, long long v)
{
        printf("%s\"%s\": %lld", sep, name, v);
        sep = ", ";
}

#define OFF(s, m) field(#s, #m, offsetof(s, m))
#define SIZE(s) value(#s, (long long)sizeof(s))
#define ENUM(e) value(#e, (long long)(e))

static void offsets(void)
{
        OFF(sortd_connect_options, client_name);
        OFF(sortd_connect_options, timeout_ms);
        OFF(sortd_info, protocol_version);
        OFF(sortd_info, server_version);
        OFF(sortd_info, engine);
        OFF(sortd_info, device);
        OFF(sortd_info, capacity);
        OFF(sortd_info, max_message_bytes);
        OFF(sortd_info, max_request_bytes);
        OFF(sortd_info, max_inflight_bytes);
        OFF(sortd_info, max_connections);
        OFF(sortd_info, max_regions);
        OFF(sortd_info, max_region_bytes);
        OFF(sortd_info, device_count);
        OFF(sortd_info, devices);
        OFF(sortd_device, uuid);
        OFF(sortd_device, ordinal);
        OFF(sortd_device, numa_node);
        OFF(sortd_device, name);
        OFF(sortd_device, pci_bus_id);
        OFF(sortd_device, reason);
        OFF(sortd_device, state);
        OFF(sortd_device, streams);
        OFF(sortd_device, capacity);
        OFF(sortd_device, sorts);
        OFF(sortd_device, bytes);
        OFF(sortd_device, busy_ns);
        OFF(sortd_device, queued);
        OFF(sortd_sort_options, order);
        OFF(sortd_sort_options, begin_bit);
        OFF(sortd_sort_options, end_bit);
        OFF(sortd_timings, queued_ns);
        OFF(sortd_timings, transfer_ns);
        OFF(sortd_timings, sort_ns);
        OFF(sortd_server_status, engine);
        OFF(sortd_server_status, device);
        OFF(sortd_server_status, capacity);
        OFF(sortd_server_status, uptime_ms);
#define COUNTER_OFF_(name, field, wire_type, label) OFF(sortd_server_status, name);
        SORTD_STATUS_COUNTERS(COUNTER_OFF_)
#undef COUNTER_OFF_
        OFF(sortd_server_status, engine_reason);
        OFF(sortd_server_status, device_count);
        OFF(sortd_server_status, devices);
        OFF(sortd_request, keys);
        OFF(sortd_request, vals);
        OFF(sortd_request, n);
        OFF(sortd_request, key_type);
        OFF(sortd_request, payload);
        OFF(sortd_request, opts);
        OFF(sortd_request, device_uuid);
        OFF(sortd_request, segments);
        OFF(sortd_request, k);
        OFF(sortd_request, out_keys);
        OFF(sortd_request, out_vals);
        OFF(sortd_request, columns);
        OFF(sortd_request, column_count);
        OFF(sortd_request, column_keys);
        OFF(sortd_request, id);
        OFF(sortd_request, timings);
        OFF(sortd_region_sort, keys);
        OFF(sortd_region_sort, keys_offset);
        OFF(sortd_region_sort, vals);
        OFF(sortd_region_sort, vals_offset);
        OFF(sortd_region_sort, n);
        OFF(sortd_region_sort, key_type);
        OFF(sortd_region_sort, payload);
        OFF(sortd_region_sort, opts);
        OFF(sortd_region_sort, device_uuid);
        OFF(sortd_region_sort, segments);
        OFF(sortd_region_sort, offsets_region);
        OFF(sortd_region_sort, offsets_offset);
        OFF(sortd_region_sort, k);
        OFF(sortd_region_sort, out_keys);
        OFF(sortd_region_sort, out_keys_offset);
        OFF(sortd_region_sort, out_vals);
        OFF(sortd_region_sort, out_vals_offset);
        OFF(sortd_region_sort, columns);
        OFF(sortd_region_sort, column_count);
        OFF(sortd_region_sort, timings);
        OFF(sortd_segments, count);
        OFF(sortd_segments, row_len);
        OFF(sortd_segments, offsets);
        OFF(sortd_segments, offset_bytes);
        OFF(sortd_column, key_type);
        OFF(sortd_column, order);
        OFF(sortd_column, begin_bit);
        OFF(sortd_column, end_bit);
}

static void sizes(void)
{
        SIZE(sortd_connect_options);
        SIZE(sortd_info);
        SIZE(sortd_device);
        SIZE(sortd_sort_options);
        SIZE(sortd_timings);
        SIZE(sortd_server_status);
        SIZE(sortd_request);
        SIZE(sortd_region_sort);
        SIZE(sortd_segments);
        SIZE(sortd_column);
        SIZE(sortd_status);
        SIZE(sortd_key_type);
        SIZE(sortd_payload);
        SIZE(sortd_order);
        SIZE(sortd_device_state);
}

static void enums(void)
{
        ENUM(SORTD_OK);
        ENUM(SORTD_E_INVAL);
        ENUM(SORTD_E_CAPACITY);
        ENUM(SORTD_E_NOMEM);
        ENUM(SORTD_E_NODEV);
        ENUM(SORTD_E_DEVICE);
        ENUM(SORTD_E_SYSTEM);
        ENUM(SORTD_E_UNSUPPORTED);
        ENUM(SORTD_E_PROTOCOL);
        ENUM(SORTD_E_IO);
        ENUM(SORTD_E_TIMEOUT);
        ENUM(SORTD_E_BUSY);
        ENUM(SORTD_E_SELFCHECK);
        ENUM(SORTD_E_DENIED);
        ENUM(SORTD_PAYLOAD_NONE);
        ENUM(SORTD_PAYLOAD_VALUES32);
        ENUM(SORTD_PAYLOAD_VALUES64);
        ENUM(SORTD_PAYLOAD_ARGSORT32);
        ENUM(SORTD_PAYLOAD_ARGSORT64);
        ENUM(SORTD_ASCENDING);
        ENUM(SORTD_DESCENDING);
        ENUM(SORTD_CUDA_IPC_HANDLE_BYTES);
        ENUM(SORTD_DEVICE_UUID_BYTES);
        ENUM(SORTD_DEVICE_UUID_TEXT);
        ENUM(SORTD_MAX_DEVICES);
        ENUM(SORTD_MAX_COLUMNS);
        ENUM(SORTD_DEVICE_UNKNOWN);
        ENUM(SORTD_DEVICE_SERVING);
        ENUM(SORTD_DEVICE_FAILED);
        ENUM(SORTD_DEVICE_LOST);
}

int main(void)
{
        printf("{\"offsetof\": {");
        offsets();
        printf("}, \"sizeof\": {");
        sep = "";
        sizes();
        printf("}, \"enums\": {");
        sep = "";
        enums();
        printf("}, \"key_types\": [");
        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                printf("%s\"%s\"", t ? ", " : "", sortd_key_type_name((sortd_key_type)t));
        printf("], \"counters\": [");
        sep = "";
#define COUNTER_NAME_(name, field, wire_type, label)                                               \
        printf("%s\"%s\"", sep, #name);                                                            \
        sep = ", ";
        SORTD_STATUS_COUNTERS(COUNTER_NAME_)
#undef COUNTER_NAME_
        printf("]}\n");
        return 0;
}
