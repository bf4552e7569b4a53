/*
 * The daemon's status counters: the one list behind the daemon's counters, the client's
 * sortd_server_status, its copy from the wire, and sortctl's listing. sortd.proto cannot
 * include it: StatusReply declares them again as fields 6 to 19, in this order, and the
 * tests/proto/test_counters.c checks the two lists against each other.
 *
 * X(name, wire type, label): name is the StatusReply field and the C member (uint64_t on
 * both sides), wire type its protobuf-c type, label what sortctl prints.
 */
#ifndef SORTD_COUNTERS_H
#define SORTD_COUNTERS_H

#define SORTD_STATUS_COUNTERS(X)                                                                   \
        X(connections, UINT32, "connections")                                                      \
        X(connections_total, UINT64, "connections total")                                          \
        X(requests_total, UINT64, "requests")                                                      \
        X(sorts_ok, UINT64, "sorts ok")                                                            \
        X(sorts_failed, UINT64, "sorts failed")                                                    \
        X(rejected, UINT64, "rejected") /* refused by a limit */                                   \
        X(protocol_errors, UINT64, "protocol errors")                                              \
        X(cancelled, UINT64, "cancelled")            /* discarded because their client left */     \
        X(queued, UINT64, "queued")                  /* sorts waiting for the engine */            \
        X(inflight_bytes, UINT64, "in flight bytes") /* request and reply buffers held now */      \
        X(inflight_peak, UINT64, "in flight peak")                                                 \
        X(bytes_in, UINT64, "bytes in")                                                            \
        X(bytes_out, UINT64, "bytes out")                                                          \
        X(keys_sorted, UINT64, "keys sorted")

#endif
