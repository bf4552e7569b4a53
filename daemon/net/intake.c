/*
 * What each frame of a connection becomes (see intake.h): dispatch's decision carried out. A
 * sort's bytes are charged (admission), its buffer taken and its payload read into it, its job
 * handed to the engines, and its end counted; a region's fd is taken from those that came with
 * the frame, and any fd left over refused.
 */
#include <errno.h>
#include <stdio.h>

#include "fdpass.h"
#include "intake.h"
#include "log.h"

/* Whether the fds pending on c came with the frame just parsed, not a later one read ahead. */
static bool frame_fds(sortd__conn *c)
{
        return uv_pipe_pending_count(&c->pipe) > 0 && c->fd_mark < c->parsed;
}

/* dispatch's take_fd: the fd that came with the frame just parsed. */
static int take_fd(void *arg)
{
        sortd__conn *c = arg;

        if (!frame_fds(c))
                return -ENOENT;
        return sortd__fdpass_take(&c->pipe);
}

/* What follows j's frame: an inline sort's keys and the values it moves, then the offsets
   that do not lie in a region (a region sort's are the whole payload); its bytes. */
static size_t sink_parts(const sortd__job *j, sortd__frame_part parts[3])
{
        bool moves_vals = j->work.desc.payload == SORTD_PAYLOAD_VALUES32 ||
                          j->work.desc.payload == SORTD_PAYLOAD_VALUES64;

        parts[0] = (sortd__frame_part){j->work.keys, (size_t)j->parts.keys};
        parts[1] = (sortd__frame_part){j->work.vals, moves_vals ? (size_t)j->parts.vals : 0};
        parts[2] = (sortd__frame_part){(uint8_t *)j->work.seg.offsets,
                                       j->offsets_rg ? 0 : (size_t)j->parts.offsets};
        return parts[0].len + parts[1].len + parts[2].len;
}

static void payload_read(sortd__conn *c, sortd__job *j);

/*
 * The reading sort's bytes are charged: its payload goes to its buffer, or, with no buffer
 * to be had, it is dropped and the sort answered with SORTD_E_NOMEM. A region sort whose
 * offsets lie in a region has no payload: its buffer is for their copy, made now.
 */
void sortd__intake_read_payload(sortd__conn *c)
{
        sortd__job *j = c->reading;
        size_t bytes = sortd__job_buffer_bytes(j);
        sortd__frame_part parts[3];
        size_t payload;

        if (sortd__dispatch_buffer(&c->d, j, c->ctx->pool) < 0) {
                c->reading = NULL;
                sortd__region_release_held(j);
                if (c->fr.h.payload_len)
                        sortd__frame_discard(&c->fr);
                sortd__admission_uncharge(c->ctx->adm, bytes);
                return;
        }
        sortd__job_charge(j, c->ctx->adm, bytes);
        payload = sink_parts(j, parts);
        if (payload == 0) {
                c->reading = NULL;
                payload_read(c, j);
                return;
        }
        sortd__frame_sink_parts(&c->fr, parts, 3);
}

/* A sort that came back, or was sorted here: its regions are free again, and the counters
   learn how it went. Each sort ends counted once: a client that left before its reply was
   sent cancelled it, however the engine did. */
void sortd__intake_sort_done(sortd__conn *c, sortd__job *j)
{
        sortd__stats *st = c->ctx->stats;

        sortd__region_release_held(j);
        if (c->state != SORTD__CONN_OPEN) {
                st->cancelled++;
        } else if (j->work.status == SORTD_OK) {
                st->sorts_ok++;
                st->keys_sorted += j->work.n;
        } else {
                st->sorts_failed++;
        }
        st->cpu_path_sorts += j->cpu_path;
        if (j->work.batch_size) {
                st->batched++;
                st->batches += j->work.batch_first;
        }
}

/* j goes to the engines; one small sort of the read being parsed may be sorted here. */
void sortd__intake_submit(sortd__conn *c, sortd__job *j)
{
        bool here = (c->flags & SORTD__CONN_LOOP_SORT) != 0;

        if (sortd__engines_submit(c->ctx->engines, &c->flows, j, here)) {
                c->flags &= ~SORTD__CONN_LOOP_SORT;
                c->ctx->stats->loop_sorts++;
                sortd__intake_sort_done(c, j);
                return;
        }
        c->in_engine++;
}

/* j's payload is in: its offsets are checked, and it goes to the engines, or is refused. */
static void payload_read(sortd__conn *c, sortd__job *j)
{
        if (sortd__dispatch_segments_ready(j) == 0) {
                sortd__intake_submit(c, j);
                return;
        }
        j->work.status = SORTD_E_INVAL;
        j->state = SORTD__JOB_DONE;
        sortd__intake_sort_done(c, j);
}

/* What dispatch decided for the frame's message. */
static void act(sortd__conn *c, sortd__dispatch_action a)
{
        if (a.close)
                c->out.close_after_flush = true;
        if (a.discard)
                sortd__frame_discard(&c->fr);
        if (a.todo == SORTD__DISPATCH_SUBMIT) {
                sortd__intake_submit(c, a.job);
        } else if (a.todo == SORTD__DISPATCH_ADMIT) {
                c->reading = a.job;
                if (sortd__admission_charge(c->ctx->adm, &c->wait, sortd__job_buffer_bytes(a.job),
                                            (uv_stream_t *)&c->pipe))
                        sortd__intake_read_payload(c);
        }
}

static void on_message(sortd__conn *c)
{
        sortd__dispatch_frame f = {
                .msg = c->fr.msg,
                .len = c->fr.h.message_len,
                .payload_len = c->fr.h.payload_len,
                .t_frame = c->fr_started,
                .take_fd = take_fd,
                .take_fd_arg = c,
        };

        act(c, sortd__dispatch_message(&c->d, &f));
}

/*
 * A frame is whole and every fd that came with it has been taken: any of its own left came
 * with a frame that takes none (or more than it takes). Those of a later frame, already read
 * ahead, wait for it (frame_fds).
 */
static void drop_stray_fds(sortd__conn *c)
{
        char why[128];
        unsigned n = frame_fds(c) ? sortd__fdpass_drop_all(&c->pipe) : 0;

        if (n == 0)
                return;
        c->ctx->stats->protocol_errors++;
        snprintf(why, sizeof(why), "%u fd(s) came with a frame that takes none: closed", n);
        sortd__pipeline_refuse(&c->out, 0, SORTD_E_PROTOCOL, why);
}

/* What the frame reader reported after a read. */
void sortd__intake_frame_event(sortd__conn *c, sortd__frame_event ev)
{
        sortd__job *j;

        switch (ev) {
        case SORTD__FRAME_MORE:
                break;
        case SORTD__FRAME_MESSAGE:
                on_message(c);
                break;
        case SORTD__FRAME_PAYLOAD:
                j = c->reading;
                c->reading = NULL;
                if (j)
                        payload_read(c, j);
                break;
        case SORTD__FRAME_ERROR:
                sortd__dispatch_broken(&c->d, c->fr.status, c->fr.why);
                c->out.close_after_flush = true;
                break;
        }
        if (sortd__frame_at_boundary(&c->fr))
                drop_stray_fds(c);
}
