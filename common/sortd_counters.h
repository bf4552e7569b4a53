/*
 * The daemon's status counters: the one list behind the daemon's counters, the client's
 * sortd_server_status, its copy from the wire, and sortctl's listing. sortd.proto cannot
 * include it: StatusReply declares them again, numbered as the list says, and
 * tests/proto/test_counters.c checks the two lists against each other.
 *
 * X(name, field, wire type, label): name is the StatusReply field and the C member (uint64_t
 * on both sides), field its number there, wire type its protobuf-c type, label what sortctl
 * prints.
 */
#ifndef SORTD_COUNTERS_H
#define SORTD_COUNTERS_H

#define SORTD_STATUS_COUNTERS(X)                                                                   \
        X(connections, 6, UINT32, "connections")                                                   \
        X(connections_total, 7, UINT64, "connections total")                                       \
        X(requests_total, 8, UINT64, "requests")                                                   \
        X(sorts_ok, 9, UINT64, "sorts ok")          /* n = 0 too */                                \
        X(sorts_failed, 10, UINT64, "sorts failed") /* or no buffer to be had */                   \
        X(rejected, 11, UINT64, "rejected")         /* sorts refused by a limit */                 \
        X(protocol_errors, 12, UINT64, "protocol errors")                                          \
        X(cancelled, 13, UINT64, "cancelled")            /* discarded because their client left */ \
        X(queued, 14, UINT64, "queued")                  /* sorts waiting for the engine */        \
        X(inflight_bytes, 15, UINT64, "in flight bytes") /* request and reply buffers held now */  \
        X(inflight_peak, 16, UINT64, "in flight peak")                                             \
        X(bytes_in, 17, UINT64, "bytes in")                                                        \
        X(bytes_out, 18, UINT64, "bytes out")                                                      \
        X(keys_sorted, 19, UINT64, "keys sorted")                                                  \
        X(regions, 22, UINT64, "regions")           /* shared-memory regions registered now */     \
        X(region_bytes, 23, UINT64, "region bytes") /* mapped for them */                          \
        X(host_pool_bytes, 24, UINT64, "host pool bytes")   /* engine memory for requests */       \
        X(host_pool_misses, 25, UINT64, "host pool misses") /* requests it had no room for */      \
        X(batches, 26, UINT64, "batches")                   /* engine calls that sorted several */ \
        X(batched, 27, UINT64, "sorts in batches")                                                 \
        X(cpu_path_keys, 28, UINT64, "cpu path up to keys") /* 0: none (cpu-path-keys) */          \
        X(cpu_path_sorts, 29, UINT64, "sorts on the cpu path")                                     \
        X(timed_out, 30, UINT64, "connections timed out") /* frame-, idle-, write-timeout-ms */    \
        X(engines_lost, 31, UINT64, "engines lost")       /* replaced or not: on-device-loss */    \
        X(sort_requests, 32, UINT64, "sort requests") /* = ok + failed + rejected + cancelled */   \
        X(loop_sorts, 33, UINT64, "sorts on the loop thread") /* loop-sort-keys */                 \
        X(host_pool_used, 34, UINT64, "host pool used")       /* bytes of it requests hold now */  \
        X(host_pool_peak, 35, UINT64, "host pool peak")       /* the most they have held */        \
        X(connections_refused, 36, UINT64, "connections refused") /* access, limit, memory */

/*
 * What each counter is to a monitoring system, in the list's order: X(name, kind, help). kind
 * is COUNTER (it only grows while the daemon runs) or GAUGE (a level now); help is one line,
 * Prometheus' HELP. sortctl status --format=prometheus prints them (a counter as
 * sortd_NAME_total); tests/proto/test_counters.c checks that they name every counter, in order.
 */
#define SORTD_STATUS_COUNTER_KINDS(X)                                                              \
        X(connections, GAUGE, "Client connections open now.")                                      \
        X(connections_total, COUNTER, "Client connections accepted.")                              \
        X(requests_total, COUNTER, "Requests read, of every kind.")                                \
        X(sorts_ok, COUNTER, "Sorts answered with their result.")                                  \
        X(sorts_failed, COUNTER, "Sorts that failed in the engine, or found no buffer.")           \
        X(rejected, COUNTER, "Sorts refused by a limit.")                                          \
        X(protocol_errors, COUNTER, "Malformed or unexpected frames and messages.")                \
        X(cancelled, COUNTER, "Sorts discarded because their client left.")                        \
        X(queued, GAUGE, "Sorts waiting for an engine now.")                                       \
        X(inflight_bytes, GAUGE, "Request and reply buffer bytes held now.")                       \
        X(inflight_peak, GAUGE, "The most request and reply buffer bytes held at once.")           \
        X(bytes_in, COUNTER, "Bytes read from clients.")                                           \
        X(bytes_out, COUNTER, "Bytes written to clients.")                                         \
        X(keys_sorted, COUNTER, "Keys of the sorts answered with their result.")                   \
        X(regions, GAUGE, "Shared-memory regions registered now.")                                 \
        X(region_bytes, GAUGE, "Bytes of shared-memory regions mapped now.")                       \
        X(host_pool_bytes, GAUGE, "Engine host memory that requests are received into.")           \
        X(host_pool_misses, COUNTER, "Requests the host pool had no room for.")                    \
        X(batches, COUNTER, "Engine calls that sorted several requests at once.")                  \
        X(batched, COUNTER, "Sorts that were members of a batch.")                                 \
        X(cpu_path_keys, GAUGE, "Sorts of up to this many keys take the CPU path (0: none).")      \
        X(cpu_path_sorts, COUNTER, "Sorts on the CPU path.")                                       \
        X(timed_out, COUNTER, "Connections closed by a timeout.")                                  \
        X(engines_lost, COUNTER, "Engines that lost their device.")                                \
        X(sort_requests, COUNTER, "Sort requests read.")                                           \
        X(loop_sorts, COUNTER, "Sorts run on the loop thread.")                                    \
        X(host_pool_used, GAUGE, "Host pool bytes requests hold now.")                             \
        X(host_pool_peak, GAUGE, "The most host pool bytes requests have held at once.")           \
        X(connections_refused, COUNTER, "Connections refused (access, a limit, memory).")

#endif
