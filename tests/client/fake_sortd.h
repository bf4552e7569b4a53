/*
 * A stand-in for sortd that speaks just enough of the protocol (Hello, Ping, RegisterRegion,
 * UnregisterRegion, Sort) to watch libsortd's region calls on the wire without a daemon: which
 * frames arrive, where in the stream each passed fd arrives, the memfd's seals and size, and a
 * CUDA region's bytes. It serves one connection on a thread and never sorts: a Sort is
 * answered with its n and, for an inline one of at most FAKE_ECHO_BYTES, its arrays as they
 * came (unsorted). Hello is answered with engine "fake", capacity 2^20, the limits below,
 * and server_version "fake hello N" for its N-th Hello, and lists f->devices devices (see
 * fake_device_uuid) in it and in Status. A test may script the refusal of RegisterRegion, or
 * one bad reply (a fake_fault) to see libsortd refuse it.
 *
 * Segmented sorts and top-k: the fake keeps what the last Sort said of them (Segments, k,
 * TopkOut) and the first bytes of its payload. An inline segmented sort is answered with its
 * keys and values as they came (not the offsets that followed them), an argsort's indices as
 * fake_result_byte says; an inline top-k with as many results as the request asks for
 * (sortd_topk_results over its segments, offsets read from the payload), every byte of them
 * fake_result_byte's: no sort, but the bytes a client must land in its buffers, in order.
 * A sort by key columns is answered with its columns' buffer and values as they came, or an
 * argsort's permutation alone as fake_result_byte says.
 */
#ifndef SORTD_TESTS_FAKE_SORTD_H
#define SORTD_TESTS_FAKE_SORTD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sortd.pb-c.h"
#include "sortd_types.h"

/*
 * A reply gone wrong, as a buggy or old daemon, or an impostor on the socket, might send it.
 * Only the reply to the first request after Hello goes wrong; the others are right.
 */
typedef enum fake_fault {
        FAKE_FAULT_NONE,
        FAKE_FAULT_WRONG_ID,      /* the reply carries the request's id plus one */
        FAKE_FAULT_WRONG_KIND,    /* a StatusReply body, whatever was asked */
        FAKE_FAULT_NONCE,         /* a PingReply's nonce is the Ping's plus one */
        FAKE_FAULT_GARBAGE,       /* a valid header, then bytes that are no Reply */
        FAKE_FAULT_BAD_MAGIC,     /* the frame's magic is off by one bit */
        FAKE_FAULT_HUGE_MESSAGE,  /* a lone header announcing a message over the limit */
        FAKE_FAULT_PAYLOAD,       /* the reply, then 8 bytes of payload it should not have */
        FAKE_FAULT_SORT_N,        /* a SortReply's n is the Sort's plus one */
        FAKE_FAULT_ERROR_PAYLOAD, /* an error status (no body), with 8 bytes of payload */
        FAKE_FAULT_SILENT,        /* no reply at all; the fake serves on until the client closes */
        FAKE_FAULT_CUT_RESULT,    /* a u32 SortReply whose payload ends after 4 bytes: closes */
        FAKE_FAULT_SLOW_SILENT,   /* reads the request's payload only after 600 ms, then as
                                     FAKE_FAULT_SILENT */
        FAKE_FAULT_REFUSE_PROTOCOL, /* a refusal (no body) with status SORTD_E_PROTOCOL */
        FAKE_FAULT_UNKNOWN_STATUS,  /* a refusal with a status code no libsortd knows (99) */
        FAKE_FAULT_HANG_UP,         /* right after Hello, a last word (id 0, SORTD_E_BUSY), as
                                       the daemon says why it closes; then it closes */
        FAKE_FAULT_REFUSE_CLOSE,    /* as soon as the request's message is in, before its
                                       payload: a refusal with its id (SORTD_E_CAPACITY), then
                                       the close, as the daemon's for a payload too large to
                                       drain (max-drain-bytes) */
        FAKE_FAULT_GARBLED_CLOSE,   /* likewise, but a last word (id 0, SORTD_E_PROTOCOL), as
                                       the daemon's for a stream it cannot parse */
} fake_fault;

#define FAKE_MAX_REQUEST_BYTES (1ull << 30)
#define FAKE_MAX_REGIONS 7
#define FAKE_ECHO_BYTES (64u << 10)
#define FAKE_MAX_DEVICES 80
#define FAKE_KEPT_BYTES 4096

/* Byte i of a reply's payload that the fake makes up (a top-k's results, argsort indices). */
static inline uint8_t fake_result_byte(uint64_t i)
{
        return (uint8_t)(0x80 ^ (i * 13));
}

/*
 * The uuid of the fake's device i: bytes i+1, 0xd1, 0xd2, ... The rows say name "fake GPU i",
 * PCI bus id 0000:(0x10+i):00.0, NUMA node i % 2, capacity 2^20 + i, 2 streams, sorts 10i+1,
 * bytes 1000i+7, busy_ns 3000000i+5, queued i; device 1 failed its self-check, the others
 * serve.
 */
void fake_device_uuid(unsigned i, uint8_t uuid[SORTD_DEVICE_UUID_BYTES]);

typedef struct fake_sortd {
        char dir[64];
        char sock[128];
        int listen_fd;
        pthread_t thread;
        /* What it saw: each is written before the reply to the frame it comes from. */
        unsigned frames;          /* requests received */
        unsigned hellos;          /* of them Hello */
        atomic_uint replies;      /* answers to them sent whole: in the client's socket */
        unsigned fds_with_header; /* fds that arrived with a frame's first bytes */
        unsigned fds_elsewhere;   /* fds that arrived with any other bytes */
        int seals;                /* F_GET_SEALS of the last memfd */
        int64_t memfd_size;       /* its fstat size */
        uint64_t region_size;     /* the size RegisterRegion announced */
        int region_kind;          /* its kind (the wire's enum value) */
        uint64_t region_offset;   /* its offset */
        uint8_t ipc_handle[SORTD_CUDA_IPC_HANDLE_BYTES]; /* its first bytes of cuda_ipc_handle */
        size_t ipc_handle_len;                           /* and how many came */
        uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES];    /* likewise device_uuid */
        size_t device_uuid_len;
        char client_name[80]; /* Hello's */
        uint64_t region_id;   /* the id of the last sort's keys region */
        uint64_t keys_offset, vals_offset, vals_region_id;
        uint64_t unregistered;                             /* the id of the last UnregisterRegion */
        uint8_t sort_device_uuid[SORTD_DEVICE_UUID_BYTES]; /* the last Sort's device_uuid */
        size_t sort_device_uuid_len;
        unsigned sorts; /* Sorts received */
        /* The last Sort's segments (has_segments: it had some), k and TopkOut (has_topk_out),
           and its payload: how many bytes, the first FAKE_KEPT_BYTES of them. */
        int has_segments;
        uint64_t seg_count, seg_row_len, seg_offsets_region_id, seg_offsets_offset;
        int seg_offset_type; /* the wire's enum value */
        uint64_t k;
        int has_topk_out;
        uint64_t out_keys_region_id, out_keys_offset, out_vals_region_id, out_vals_offset;
        uint64_t sort_payload_len;
        uint8_t sort_payload[FAKE_KEPT_BYTES];
        /* The last Sort's key columns (their number, and each as sent) and key_type */
        unsigned n_columns;
        Sortd__Wire__Column columns[SORTD_MAX_COLUMNS];
        int sort_key_type;
        uint64_t next_id; /* region ids handed out: 1, 2, ... */
        /* Set by the test: RegisterRegion is refused with this status and message (SORTD_OK:
           accepted). */
        sortd_status refuse_register;
        const char *refuse_message;
        /* Set by the test before it connects (fake_start clears them). */
        fake_fault fault;
        unsigned refuse_after;      /* FAKE_FAULT_REFUSE_CLOSE and FAKE_FAULT_GARBLED_CLOSE: the
                                       requests after Hello answered before the one refused */
        unsigned devices;           /* listed in Hello and Status: FAKE_MAX_DEVICES at most */
        uint64_t max_request_bytes; /* said in Hello; 0: FAKE_MAX_REQUEST_BYTES */
} fake_sortd;

/* Listens on a fresh socket (f->sock) and serves the first connection until it closes. Each
   memfd received gets 0xA5 written into its last byte, through the fake's own mapping. */
void fake_start(fake_sortd *f);
/* Waits until the connection has closed, then removes the socket. */
void fake_stop(fake_sortd *f);

#endif
