/* The incremental frame reader (frame.c): socket bytes -> header, message, payload sink. */
#ifndef SORTD_DAEMON_FRAME_H
#define SORTD_DAEMON_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

typedef enum sortd__frame_event {
        SORTD__FRAME_MORE,    /* keep reading */
        SORTD__FRAME_MESSAGE, /* header and message are in: decode, then sink or discard a payload
                               */
        SORTD__FRAME_PAYLOAD, /* the payload is complete in the sink */
        SORTD__FRAME_ERROR,   /* the stream cannot be trusted any more; see status and why */
} sortd__frame_event;

/* Where a piece of a payload goes: an inline sort's keys, its values, its segments' offsets. */
#define SORTD__FRAME_MAX_PARTS 3
typedef struct sortd__frame_part {
        uint8_t *base;
        size_t len;
} sortd__frame_part;

typedef struct sortd__frame_reader {
        enum {
                SORTD__FRAME_HEADER,
                SORTD__FRAME_BODY,
                SORTD__FRAME_AWAIT_SINK,
                SORTD__FRAME_SINK,
                SORTD__FRAME_DISCARD,
                SORTD__FRAME_FAILED
        } state;
        uint32_t max_message;
        uint8_t hdr[SORTD__WIRE_HEADER_SIZE];
        sortd__wire_header h;
        uint8_t *msg; /* max_message bytes; also the scratch of a discarded payload */
        size_t got;   /* bytes of the current header or message */
        sortd__frame_part seg[SORTD__FRAME_MAX_PARTS];
        unsigned cur;  /* segment being filled */
        uint64_t left; /* payload bytes still to come */
        sortd_status status;
        char why[160];
} sortd__frame_reader;

int sortd__frame_init(sortd__frame_reader *fr, uint32_t max_message);
void sortd__frame_free(sortd__frame_reader *fr);
/* Where the next bytes of the stream go; *len == 0 while a sink is awaited or after an error. */
void sortd__frame_buffer(sortd__frame_reader *fr, uint8_t **base, size_t *len);
/* n bytes were written at the place sortd__frame_buffer gave. */
sortd__frame_event sortd__frame_consumed(sortd__frame_reader *fr, size_t n);
/* After SORTD__FRAME_MESSAGE with a payload: it goes to a then b (lengths must add up to it). */
void sortd__frame_sink(sortd__frame_reader *fr, void *a, size_t alen, void *b, size_t blen);
/* The same into n parts (at most SORTD__FRAME_MAX_PARTS), in order; empty ones are skipped. */
void sortd__frame_sink_parts(sortd__frame_reader *fr, const sortd__frame_part *parts, unsigned n);
/* After SORTD__FRAME_MESSAGE with a payload: read it and drop it. */
void sortd__frame_discard(sortd__frame_reader *fr);
/* Between frames (nothing of the next one read yet). */
bool sortd__frame_at_boundary(const sortd__frame_reader *fr);

#endif
