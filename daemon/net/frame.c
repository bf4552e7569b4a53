/*
 * The incremental frame reader. It never allocates per frame: the header and message go to
 * its own buffers (the message capped before any byte of it is read), the payload straight
 * into the sink the connection chose after admission, so a payload is copied once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

int sortd__frame_init(sortd__frame_reader *fr, uint32_t max_message)
{
        *fr = (sortd__frame_reader){.state = SORTD__FRAME_HEADER, .max_message = max_message};
        fr->msg = malloc(max_message);
        return fr->msg ? 0 : -ENOMEM;
}

void sortd__frame_free(sortd__frame_reader *fr)
{
        if (!fr)
                return;
        free(fr->msg);
        fr->msg = NULL;
}

void sortd__frame_buffer(sortd__frame_reader *fr, uint8_t **base, size_t *len)
{
        switch (fr->state) {
        case SORTD__FRAME_HEADER:
                *base = fr->hdr + fr->got;
                *len = SORTD__WIRE_HEADER_SIZE - fr->got;
                return;
        case SORTD__FRAME_BODY:
                *base = fr->msg + fr->got;
                *len = fr->h.message_len - fr->got;
                return;
        case SORTD__FRAME_SINK:
                *base = fr->seg[fr->cur].base;
                *len = fr->seg[fr->cur].len;
                return;
        case SORTD__FRAME_DISCARD:
                *base = fr->msg;
                *len = fr->left < fr->max_message ? (size_t)fr->left : fr->max_message;
                return;
        case SORTD__FRAME_AWAIT_SINK:
        case SORTD__FRAME_FAILED:
                break;
        }
        *base = NULL;
        *len = 0;
}

static sortd__frame_event fail(sortd__frame_reader *fr)
{
        fr->state = SORTD__FRAME_FAILED;
        return SORTD__FRAME_ERROR;
}

static sortd__frame_event header_done(sortd__frame_reader *fr)
{
        sortd__wire_header_unpack(fr->hdr, &fr->h);
        fr->status = sortd__wire_header_check(&fr->h, fr->max_message, fr->why, sizeof(fr->why));
        if (fr->status != SORTD_OK)
                return fail(fr);
        fr->state = SORTD__FRAME_BODY;
        fr->got = 0;
        return SORTD__FRAME_MORE;
}

static sortd__frame_event message_done(sortd__frame_reader *fr)
{
        fr->got = 0;
        fr->left = fr->h.payload_len;
        fr->state = fr->left ? SORTD__FRAME_AWAIT_SINK : SORTD__FRAME_HEADER;
        return SORTD__FRAME_MESSAGE;
}

static sortd__frame_event payload_consumed(sortd__frame_reader *fr, size_t n)
{
        fr->left -= n;
        if (fr->state == SORTD__FRAME_SINK) {
                fr->seg[fr->cur].base += n;
                fr->seg[fr->cur].len -= n;
                while (fr->cur < SORTD__FRAME_MAX_PARTS && fr->seg[fr->cur].len == 0)
                        fr->cur++;
        }
        if (fr->left)
                return SORTD__FRAME_MORE;
        bool sunk = fr->state == SORTD__FRAME_SINK;

        fr->state = SORTD__FRAME_HEADER;
        return sunk ? SORTD__FRAME_PAYLOAD : SORTD__FRAME_MORE;
}

sortd__frame_event sortd__frame_consumed(sortd__frame_reader *fr, size_t n)
{
        switch (fr->state) {
        case SORTD__FRAME_HEADER:
                fr->got += n;
                return fr->got == SORTD__WIRE_HEADER_SIZE ? header_done(fr) : SORTD__FRAME_MORE;
        case SORTD__FRAME_BODY:
                fr->got += n;
                return fr->got == fr->h.message_len ? message_done(fr) : SORTD__FRAME_MORE;
        case SORTD__FRAME_SINK:
        case SORTD__FRAME_DISCARD:
                return payload_consumed(fr, n);
        case SORTD__FRAME_AWAIT_SINK:
        case SORTD__FRAME_FAILED:
                break;
        }
        fr->status = SORTD_E_PROTOCOL;
        strcpy(fr->why, "bytes arrived where none were expected");
        return fail(fr);
}

void sortd__frame_sink_parts(sortd__frame_reader *fr, const sortd__frame_part *parts, unsigned n)
{
        for (unsigned i = 0; i < SORTD__FRAME_MAX_PARTS; i++)
                fr->seg[i] = i < n ? parts[i] : (sortd__frame_part){0};
        fr->cur = 0;
        while (fr->cur < SORTD__FRAME_MAX_PARTS && fr->seg[fr->cur].len == 0)
                fr->cur++;
        fr->state = SORTD__FRAME_SINK;
}

void sortd__frame_sink(sortd__frame_reader *fr, void *a, size_t alen, void *b, size_t blen)
{
        const sortd__frame_part parts[2] = {{a, alen}, {b, blen}};

        sortd__frame_sink_parts(fr, parts, 2);
}

void sortd__frame_discard(sortd__frame_reader *fr)
{
        fr->state = SORTD__FRAME_DISCARD;
}

bool sortd__frame_at_boundary(const sortd__frame_reader *fr)
{
        return fr->state == SORTD__FRAME_HEADER && fr->got == 0;
}
