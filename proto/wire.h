/*
 * The frame layer of the wire protocol, shared by the daemon and libsortd:
 * the fixed frame header and the checks of a Sort request that both sides
 * make (the client before sending, the daemon before admitting).
 * Internal to the project: not part of libsortd's public header.
 */
#ifndef SORTD_WIRE_H
#define SORTD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "sortd_types.h"
#include "sortd.pb-c.h"

#define SORTD__WIRE_MAGIC 0x44545253u /* "SRTD" read as a little-endian u32 */
#define SORTD__WIRE_VERSION 1
#define SORTD__WIRE_HEADER_SIZE 20
/* Protobuf messages are small and flat: the cap applies before unpack. */
#define SORTD__WIRE_MAX_MESSAGE (64u * 1024u)

typedef struct sortd__wire_header {
        uint32_t magic;
        uint16_t version;
        uint16_t flags; /* reserved, 0 */
        uint32_t message_len;
        uint64_t payload_len;
} sortd__wire_header;

void sortd__wire_header_pack(const sortd__wire_header *h, uint8_t out[SORTD__WIRE_HEADER_SIZE]);
void sortd__wire_header_unpack(const uint8_t in[SORTD__WIRE_HEADER_SIZE], sortd__wire_header *h);

/* Checks magic, version, flags and message_len <= max_message; why gets a message on error. */
sortd_status sortd__wire_header_check(const sortd__wire_header *h, uint32_t max_message, char *why,
                                      size_t why_len);

/* The sizes an inline sort moves, derived from its descriptor and n. */
typedef struct sortd__wire_sizes {
        uint64_t keys_bytes;  /* n x key size */
        uint64_t vals_bytes;  /* n x value or index size (0 without payload) */
        uint64_t request_len; /* payload the client sends: keys, plus values unless argsort */
        uint64_t reply_len;   /* payload the daemon returns: keys_bytes + vals_bytes */
} sortd__wire_sizes;

/*
 * Validates a Sort message (enums, bit range, n, data location: inline or a region) and
 * converts it. On success writes *desc and *sizes (what an inline sort would move); on error
 * returns SORTD_E_INVAL with why.
 */
sortd_status sortd__wire_sort_check(const Sortd__Wire__Sort *s, sortd_sort_desc *desc,
                                    sortd__wire_sizes *sizes, char *why, size_t why_len);

/* The sizes of an inline sort of n keys as desc says; SORTD_E_INVAL if they overflow. */
sortd_status sortd__wire_sizes_of(const sortd_sort_desc *desc, uint64_t n,
                                  sortd__wire_sizes *sizes);

/* A sort by key columns (wire_columns.c): its columns, in the engine's enums. */
typedef struct sortd__wire_columns {
        unsigned count; /* 0: a sort of one key array */
        sortd_column col[SORTD_MAX_COLUMNS];
} sortd__wire_columns;

/*
 * Validates a Sort message with columns as sortd.proto's Sort.columns says (1 to
 * SORTD_MAX_COLUMNS columns, each of a known type and order with a bit range inside its key;
 * key_type unset, order and bit range 0, no segments, no top-k; a data location) and converts
 * it. On success writes *cols, *payload and *sizes (sortd__wire_columns_sizes); on error returns
 * SORTD_E_INVAL with why naming the fault.
 */
sortd_status sortd__wire_columns_check(const Sortd__Wire__Sort *s, sortd__wire_columns *cols,
                                       sortd_payload *payload, sortd__wire_sizes *sizes, char *why,
                                       size_t why_len);

/*
 * The sizes of an inline sort by columns of n rows (after sortd_columns_check): keys_bytes the
 * columns' buffer (sortd_columns_offset), vals_bytes the n values or indices; the request sends
 * the buffer and the values unless an argsort makes them; the reply is the permutation alone
 * for an argsort (the columns are only read), else the buffer and the values. SORTD_E_INVAL
 * when they pass what one request may hold.
 */
sortd_status sortd__wire_columns_sizes(const sortd_column *c, unsigned count, sortd_payload p,
                                       uint64_t n, sortd__wire_sizes *sizes);

/* The socket both sides use by default: $SORTD_SOCKET, else /run/sortd/sortd.sock as root
   (or without $XDG_RUNTIME_DIR), else $XDG_RUNTIME_DIR/sortd.sock. */
void sortd__wire_default_socket(char *out, size_t len);

/* Conversions between engine.h's enums and the wire's (wire = engine + 1; 0 is unset). */
Sortd__Wire__KeyType sortd__wire_key_type(sortd_key_type t);
Sortd__Wire__Payload sortd__wire_payload(sortd_payload p);
Sortd__Wire__StatusCode sortd__wire_status(sortd_status s);
/* Maps an unknown wire code to SORTD_E_PROTOCOL. */
sortd_status sortd__wire_status_from(Sortd__Wire__StatusCode c);

#endif
