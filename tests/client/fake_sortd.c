/* See fake_sortd.h. */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fake_sortd.h"
#include "wire.h"

/* Reads len bytes with recvmsg, so that passed fds are seen. For a header (passed non-NULL) the
   first fd of its first read goes to *passed; every other fd is counted and closed. */
static int read_full(fake_sortd *f, int fd, void *buf, size_t len, int *passed)
{
        char *p = buf;

        while (len > 0) {
                union {
                        struct cmsghdr h;
                        char b[CMSG_SPACE(4 * sizeof(int))];
                } ctl;
                struct iovec iov = {p, len};
                struct msghdr mh = {.msg_iov = &iov,
                                    .msg_iovlen = 1,
                                    .msg_control = ctl.b,
                                    .msg_controllen = sizeof(ctl.b)};
                ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);

                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        return -1;
                for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

                        for (size_t i = 0; cm->cmsg_type == SCM_RIGHTS && i < k; i++) {
                                int got;

                                memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                                if (passed && p == (char *)buf && *passed < 0) {
                                        *passed = got;
                                        f->fds_with_header++;
                                        continue;
                                }
                                if (passed && p == (char *)buf)
                                        f->fds_with_header++;
                                else
                                        f->fds_elsewhere++;
                                close(got);
                        }
                }
                p += r;
                len -= (size_t)r;
        }
        return 0;
}

/* Seals and size of a received memfd, and a mark in its last byte through a mapping. */
static void note_memfd(fake_sortd *f, int fd, uint64_t size)
{
        struct stat st;
        uint8_t *m;

        f->region_size = size;
        f->seals = fd >= 0 ? fcntl(fd, F_GET_SEALS) : -1;
        f->memfd_size = fd >= 0 && fstat(fd, &st) == 0 ? (int64_t)st.st_size : -1;
        if (f->memfd_size <= 0)
                return;
        m = mmap(NULL, (size_t)f->memfd_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
                return;
        m[f->memfd_size - 1] = 0xA5;
        munmap(m, (size_t)f->memfd_size);
}

/* Keeps the bytes of a bytes field in buf (at most cap of them) and how many came. */
static size_t keep_bytes(uint8_t *buf, size_t cap, ProtobufCBinaryData b)
{
        if (b.len)
                memcpy(buf, b.data, b.len < cap ? b.len : cap);
        return b.len;
}

/* What RegisterRegion said, whatever its kind. */
static void note_register(fake_sortd *f, const Sortd__Wire__RegisterRegion *r)
{
        f->region_kind = (int)r->kind;
        f->region_offset = r->offset;
        f->ipc_handle_len = keep_bytes(f->ipc_handle, sizeof(f->ipc_handle), r->cuda_ipc_handle);
        f->device_uuid_len = keep_bytes(f->device_uuid, sizeof(f->device_uuid), r->device_uuid);
}

static void send_all(int fd, const uint8_t *p, size_t len)
{
        while (len > 0) {
                ssize_t w = send(fd, p, len, MSG_NOSIGNAL);

                if (w <= 0 && errno != EINTR)
                        return;
                p += w > 0 ? (size_t)w : 0;
                len -= w > 0 ? (size_t)w : 0;
        }
}

/*
 * Sends rep as one frame, bent as the frame-level faults say, with echo_len bytes of payload
 * from echo. MSG_NOSIGNAL: a client that gave up on a bad reply and closed makes the send fail;
 * SIGPIPE would end the whole test.
 */
static void send_reply(int fd, const Sortd__Wire__Reply *rep, fake_fault fault, const uint8_t *echo,
                       size_t echo_len)
{
        /* Each byte says "more follows", so the tag is a varint without an end: no Reply. */
        static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
        uint8_t buf[SORTD__WIRE_HEADER_SIZE + (16 << 10) + 8], *msg = buf + SORTD__WIRE_HEADER_SIZE;
        size_t len = sortd__wire__reply__get_packed_size(rep);
        sortd__wire_header h = {.magic = SORTD__WIRE_MAGIC,
                                .version = SORTD__WIRE_VERSION,
                                .payload_len = echo_len};

        sortd__wire__reply__pack(rep, msg);
        if (fault == FAKE_FAULT_GARBAGE) {
                len = sizeof(garbage);
                memcpy(msg, garbage, len);
        }
        h.message_len = (uint32_t)len;
        if (fault == FAKE_FAULT_BAD_MAGIC)
                h.magic ^= 1;
        if (fault == FAKE_FAULT_HUGE_MESSAGE) {
                h.message_len = SORTD__WIRE_MAX_MESSAGE + 1;
                len = 0;
        }
        if (fault == FAKE_FAULT_PAYLOAD || fault == FAKE_FAULT_ERROR_PAYLOAD) {
                h.payload_len = 8;
                memset(msg + len, 0x5a, 8);
                len += 8;
        }
        if (fault == FAKE_FAULT_CUT_RESULT) {
                h.payload_len = rep->sort->n * sizeof(uint32_t);
                memset(msg + len, 0x5a, 4);
                len += 4;
                echo_len = 0;
        }
        sortd__wire_header_pack(&h, buf);
        send_all(fd, buf, SORTD__WIRE_HEADER_SIZE + len);
        send_all(fd, echo, echo_len);
        if (fault == FAKE_FAULT_CUT_RESULT)
                shutdown(fd, SHUT_WR);
}

/* The message-level faults: a reply that is well framed and parses, but says the wrong thing. */
static void bend_reply(fake_fault fault, Sortd__Wire__Reply *rep, Sortd__Wire__StatusReply *status)
{
        switch (fault) {
        case FAKE_FAULT_WRONG_ID:
                rep->id++;
                break;
        case FAKE_FAULT_WRONG_KIND:
                rep->body_case = SORTD__WIRE__REPLY__BODY_STATUS_REPLY;
                rep->status_reply = status;
                break;
        case FAKE_FAULT_NONCE:
                if (rep->body_case == SORTD__WIRE__REPLY__BODY_PING)
                        rep->ping->nonce++;
                break;
        case FAKE_FAULT_SORT_N:
                if (rep->body_case == SORTD__WIRE__REPLY__BODY_SORT)
                        rep->sort->n++;
                break;
        case FAKE_FAULT_ERROR_PAYLOAD:
                rep->status = SORTD__WIRE__STATUS_CODE__E_SYSTEM;
                rep->error = "the fake failed on purpose";
                rep->body_case = SORTD__WIRE__REPLY__BODY__NOT_SET;
                break;
        case FAKE_FAULT_REFUSE_PROTOCOL:
                rep->status = SORTD__WIRE__STATUS_CODE__E_PROTOCOL;
                rep->error = "the fake could not parse the request, on purpose";
                rep->body_case = SORTD__WIRE__REPLY__BODY__NOT_SET;
                break;
        case FAKE_FAULT_UNKNOWN_STATUS:
                rep->status = (Sortd__Wire__StatusCode)99;
                rep->error = "a status from a newer sortd";
                rep->body_case = SORTD__WIRE__REPLY__BODY__NOT_SET;
                break;
        default:
                break;
        }
}

void fake_device_uuid(unsigned i, uint8_t uuid[SORTD_DEVICE_UUID_BYTES])
{
        uuid[0] = (uint8_t)(i + 1);
        for (unsigned b = 1; b < SORTD_DEVICE_UUID_BYTES; b++)
                uuid[b] = (uint8_t)(0xd0 + b);
}

/* The device rows of Hello and Status, as fake_device_uuid says; they live as long as it. */
typedef struct fake_rows {
        Sortd__Wire__Device row[FAKE_MAX_DEVICES], *ptr[FAKE_MAX_DEVICES];
        uint8_t uuid[FAKE_MAX_DEVICES][SORTD_DEVICE_UUID_BYTES];
        char name[FAKE_MAX_DEVICES][32], pci[FAKE_MAX_DEVICES][32];
} fake_rows;

static void make_row(fake_rows *t, unsigned i)
{
        Sortd__Wire__Device *d = &t->row[i];

        sortd__wire__device__init(d);
        fake_device_uuid(i, t->uuid[i]);
        snprintf(t->name[i], sizeof(t->name[i]), "fake GPU %u", i);
        snprintf(t->pci[i], sizeof(t->pci[i]), "0000:%02x:00.0", 0x10 + i);
        d->ordinal = i;
        d->uuid = (ProtobufCBinaryData){.len = SORTD_DEVICE_UUID_BYTES, .data = t->uuid[i]};
        d->name = t->name[i];
        d->pci_bus_id = t->pci[i];
        d->numa_node = (int32_t)(i % 2);
        d->capacity = (1u << 20) + i;
        d->state = i == 1 ? SORTD__WIRE__DEVICE_STATE__DEVICE_FAILED
                          : SORTD__WIRE__DEVICE_STATE__DEVICE_SERVING;
        d->reason = i == 1 ? "self-check failed: the fake says so" : "self-check passed";
        d->sorts = 10 * i + 1;
        d->bytes = 1000 * i + 7;
        d->busy_ns = 3000000ull * i + 5;
        d->queued = i;
        d->streams = 2;
        t->ptr[i] = d;
}

static fake_rows *make_rows(unsigned n)
{
        fake_rows *t = calloc(1, sizeof(*t));

        ck_assert_ptr_nonnull(t);
        for (unsigned i = 0; i < n && i < FAKE_MAX_DEVICES; i++)
                make_row(t, i);
        return t;
}

/* What the last Sort said of segments and top-k, and its payload's first bytes. */
static void note_sort(fake_sortd *f, const Sortd__Wire__Sort *s, const uint8_t *payload,
                      size_t kept, uint64_t total)
{
        const Sortd__Wire__Segments *seg = s->segments;
        const Sortd__Wire__TopkOut *out = s->topk_out;

        f->has_segments = seg != NULL;
        f->seg_count = seg ? seg->count : 0;
        f->seg_row_len = seg ? seg->row_len : 0;
        f->seg_offset_type = seg ? (int)seg->offset_type : -1;
        f->seg_offsets_region_id = seg ? seg->offsets_region_id : 0;
        f->seg_offsets_offset = seg ? seg->offsets_offset : 0;
        f->k = s->k;
        f->has_topk_out = out != NULL;
        f->out_keys_region_id = out ? out->keys_region_id : 0;
        f->out_keys_offset = out ? out->keys_offset : 0;
        f->out_vals_region_id = out ? out->vals_region_id : 0;
        f->out_vals_offset = out ? out->vals_offset : 0;
        f->n_columns = (unsigned)s->n_columns;
        for (size_t i = 0; i < s->n_columns && i < SORTD_MAX_COLUMNS; i++)
                f->columns[i] = *s->columns[i];
        f->sort_key_type = (int)s->key_type;
        f->sort_payload_len = total;
        memcpy(f->sort_payload, payload, kept < FAKE_KEPT_BYTES ? kept : FAKE_KEPT_BYTES);
}

/* The results of an inline top-k: sortd_topk_results over its segments, whose offsets (if
   any) follow the keys and values at sent in the payload. 0 for offsets that do not check. */
static uint64_t topk_results(const Sortd__Wire__Sort *s, const uint8_t *payload, size_t len,
                             size_t sent)
{
        static uint64_t offsets[FAKE_ECHO_BYTES / 8];
        const Sortd__Wire__Segments *seg = s->segments;
        sortd_segments view;

        if (!seg)
                return sortd_topk_results(NULL, s->n, s->k);
        view = (sortd_segments){.count = seg->count, .row_len = seg->row_len};
        if (seg->offset_type != SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_NONE) {
                view.offset_bytes =
                        seg->offset_type == SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U32 ? 4 : 8;
                if (seg->count >= FAKE_ECHO_BYTES ||
                    (seg->count + 1) * view.offset_bytes != len - sent)
                        return 0;
                /* The offsets follow keys of any width: copied to where they are aligned. */
                memcpy(offsets, payload + sent, len - sent);
                view.offsets = offsets;
        }
        if (sortd_segments_check(&view, s->n, NULL, 0) != SORTD_OK)
                return 0;
        return sortd_topk_results(&view, s->n, s->k);
}

/*
 * The payload of the reply to an inline Sort (fake_sortd.h) into out (cap bytes): its length,
 * 0 when the request's payload was not kept whole or the reply would not fit.
 */
static size_t sort_result(const Sortd__Wire__Sort *s, const uint8_t *payload, size_t len,
                          uint8_t *out, size_t cap)
{
        sortd_payload p = (sortd_payload)(s->payload - 1);
        uint64_t ks = sortd_key_size((sortd_key_type)(s->key_type - 1)), vs = sortd_payload_size(p);
        uint64_t sent = s->n * ks + (sortd_payload_is_argsort(p) ? 0 : s->n * vs);
        uint64_t rlen = s->k ? 0 : s->n * (ks + vs);
        sortd__wire_columns cols;
        sortd__wire_sizes z;
        char why[256];

        if (s->n_columns) { /* the columns' buffer, then the values; an argsort: its indices */
                if (sortd__wire_columns_check(s, &cols, &p, &z, why, sizeof(why)) != SORTD_OK)
                        return 0;
                sent = z.request_len;
                rlen = z.reply_len;
        }
        if (len < sent || s->n > FAKE_ECHO_BYTES)
                return 0;
        if (s->k)
                rlen = topk_results(s, payload, len, (size_t)sent) * (ks + vs);
        if (rlen > cap)
                return 0;
        for (uint64_t i = 0; i < rlen; i++)
                out[i] = !s->k && i < sent && !(s->n_columns && sortd_payload_is_argsort(p))
                                 ? payload[i]
                                 : fake_result_byte(i);
        return (size_t)rlen;
}

/* Answers req; payload holds the kept bytes of its payload (payload_len of them, of total). */
static void answer(fake_sortd *f, int fd, const Sortd__Wire__Request *req, int passed,
                   const uint8_t *payload, size_t payload_len, uint64_t total)
{
        static uint8_t result[16 * FAKE_ECHO_BYTES];
        Sortd__Wire__Reply rep = SORTD__WIRE__REPLY__INIT;
        Sortd__Wire__HelloReply hello = SORTD__WIRE__HELLO_REPLY__INIT;
        Sortd__Wire__Limits limits = SORTD__WIRE__LIMITS__INIT;
        char version[32];
        Sortd__Wire__PingReply ping = SORTD__WIRE__PING_REPLY__INIT;
        Sortd__Wire__RegisterRegionReply reg = SORTD__WIRE__REGISTER_REGION_REPLY__INIT;
        Sortd__Wire__UnregisterRegionReply unreg = SORTD__WIRE__UNREGISTER_REGION_REPLY__INIT;
        Sortd__Wire__SortReply sort = SORTD__WIRE__SORT_REPLY__INIT;
        Sortd__Wire__StatusReply status = SORTD__WIRE__STATUS_REPLY__INIT;
        fake_fault fault = f->frames == 2 ? f->fault : FAKE_FAULT_NONE; /* Hello is frame 1 */
        unsigned devices = f->devices < FAKE_MAX_DEVICES ? f->devices : FAKE_MAX_DEVICES;
        fake_rows *rows = make_rows(devices);

        rep.id = req->id;
        switch (req->body_case) {
        case SORTD__WIRE__REQUEST__BODY_HELLO:
                snprintf(f->client_name, sizeof(f->client_name), "%s",
                         req->hello->client_name ? req->hello->client_name : "");
                snprintf(version, sizeof(version), "fake hello %u", ++f->hellos);
                hello.protocol_version = SORTD__WIRE_VERSION;
                hello.server_version = version;
                hello.engine = "fake";
                hello.capacity = 1u << 20;
                limits.max_request_bytes =
                        f->max_request_bytes ? f->max_request_bytes : FAKE_MAX_REQUEST_BYTES;
                limits.max_regions = FAKE_MAX_REGIONS;
                hello.limits = &limits;
                hello.n_devices = devices;
                hello.devices = rows->ptr;
                rep.body_case = SORTD__WIRE__REPLY__BODY_HELLO;
                rep.hello = &hello;
                break;
        case SORTD__WIRE__REQUEST__BODY_PING:
                ping.nonce = req->ping->nonce;
                rep.body_case = SORTD__WIRE__REPLY__BODY_PING;
                rep.ping = &ping;
                break;
        case SORTD__WIRE__REQUEST__BODY_REGISTER_REGION:
                note_memfd(f, passed, req->register_region->size);
                note_register(f, req->register_region);
                if (f->refuse_register != SORTD_OK) {
                        rep.status = sortd__wire_status(f->refuse_register);
                        rep.error = (char *)f->refuse_message;
                        break;
                }
                reg.region_id = ++f->next_id;
                rep.body_case = SORTD__WIRE__REPLY__BODY_REGISTER_REGION;
                rep.register_region = &reg;
                break;
        case SORTD__WIRE__REQUEST__BODY_UNREGISTER_REGION:
                f->unregistered = req->unregister_region->region_id;
                rep.body_case = SORTD__WIRE__REPLY__BODY_UNREGISTER_REGION;
                rep.unregister_region = &unreg;
                break;
        case SORTD__WIRE__REQUEST__BODY_SORT:
                if (req->sort->data_case == SORTD__WIRE__SORT__DATA_REGION) {
                        f->region_id = req->sort->region->region_id;
                        f->keys_offset = req->sort->region->keys_offset;
                        f->vals_offset = req->sort->region->vals_offset;
                        f->vals_region_id = req->sort->region->vals_region_id;
                }
                f->sorts++;
                note_sort(f, req->sort, payload, payload_len, total);
                if (req->sort->data_case == SORTD__WIRE__SORT__DATA_INLINE_DATA) {
                        payload_len = sort_result(req->sort, payload, payload_len, result,
                                                  sizeof(result));
                        payload = result;
                }
                f->sort_device_uuid_len = keep_bytes(
                        f->sort_device_uuid, sizeof(f->sort_device_uuid), req->sort->device_uuid);
                sort.n = req->sort->n;
                rep.body_case = SORTD__WIRE__REPLY__BODY_SORT;
                rep.sort = &sort;
                break;
        case SORTD__WIRE__REQUEST__BODY_STATUS:
                status.engine = "fake";
                status.capacity = 1u << 20;
                status.n_devices = devices;
                status.devices = rows->ptr;
                rep.body_case = SORTD__WIRE__REPLY__BODY_STATUS_REPLY;
                rep.status_reply = &status;
                break;
        default:
                rep.status = SORTD__WIRE__STATUS_CODE__E_UNSUPPORTED;
                rep.error = "not served by the fake";
        }
        if (fault != FAKE_FAULT_SILENT && fault != FAKE_FAULT_SLOW_SILENT) {
                bend_reply(fault, &rep, &status);
                if (rep.body_case != SORTD__WIRE__REPLY__BODY_SORT ||
                    req->sort->data_case != SORTD__WIRE__SORT__DATA_INLINE_DATA)
                        payload_len = 0;
                send_reply(fd, &rep, fault, payload, payload_len);
                atomic_fetch_add(&f->replies, 1);
        }
        free(rows);
}

/* The daemon's last word on a connection it closes: id 0, and why. */
static void hang_up(int fd)
{
        Sortd__Wire__Reply rep = SORTD__WIRE__REPLY__INIT;

        rep.status = SORTD__WIRE__STATUS_CODE__E_BUSY;
        rep.error = "the fake hangs up on purpose, as a daemon at one of its limits says why "
                    "before it closes";
        send_reply(fd, &rep, FAKE_FAULT_NONE, NULL, 0);
}

/* Whether the fake refuses the request whose message it just read, payload unread, and
   closes: f->fault's reply goes out here. */
static bool refused_unread(fake_sortd *f, int fd, const uint8_t *msg, size_t len)
{
        Sortd__Wire__Reply rep = SORTD__WIRE__REPLY__INIT;
        Sortd__Wire__Request *req;

        if (f->frames != 1 + f->refuse_after ||
            (f->fault != FAKE_FAULT_REFUSE_CLOSE && f->fault != FAKE_FAULT_GARBLED_CLOSE))
                return false;
        req = sortd__wire__request__unpack(NULL, len, msg);
        f->frames++;
        if (f->fault == FAKE_FAULT_REFUSE_CLOSE) {
                rep.id = req ? req->id : 0;
                rep.status = SORTD__WIRE__STATUS_CODE__E_CAPACITY;
                rep.error = "the fake refuses this request and closes rather than drain its "
                            "payload";
        } else {
                rep.status = SORTD__WIRE__STATUS_CODE__E_PROTOCOL;
                rep.error = "the fake cannot parse this stream, on purpose";
        }
        sortd__wire__request__free_unpacked(req, NULL);
        send_reply(fd, &rep, FAKE_FAULT_NONE, NULL, 0);
        return true;
}

/* Reads a request's payload of len bytes: kept in echo (returns len) when it fits, else
   dropped (returns 0). */
static size_t read_payload(fake_sortd *f, int fd, uint64_t len, uint8_t echo[FAKE_ECHO_BYTES])
{
        static uint8_t drop[1 << 16];

        if (len <= FAKE_ECHO_BYTES)
                return read_full(f, fd, echo, (size_t)len, NULL) < 0 ? 0 : (size_t)len;
        for (uint64_t left = len, k; left > 0; left -= k) {
                k = left < sizeof(drop) ? left : sizeof(drop);
                if (read_full(f, fd, drop, (size_t)k, NULL) < 0)
                        break;
        }
        return 0;
}

static void *serve(void *arg)
{
        static uint8_t msg[SORTD__WIRE_MAX_MESSAGE], echo[FAKE_ECHO_BYTES];
        fake_sortd *f = arg;
        int fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);

        for (;;) {
                uint8_t hdr[SORTD__WIRE_HEADER_SIZE];
                sortd__wire_header h;
                Sortd__Wire__Request *req;
                int passed = -1;
                size_t kept;

                if (fd < 0 || read_full(f, fd, hdr, sizeof(hdr), &passed) < 0)
                        break;
                sortd__wire_header_unpack(hdr, &h);
                if (h.message_len > sizeof(msg) || read_full(f, fd, msg, h.message_len, NULL) < 0) {
                        if (passed >= 0)
                                close(passed);
                        break;
                }
                if (f->fault == FAKE_FAULT_SLOW_SILENT && f->frames == 1) /* after Hello */
                        usleep(600 * 1000);
                if (refused_unread(f, fd, msg, h.message_len)) {
                        if (passed >= 0)
                                close(passed);
                        break;
                }
                kept = read_payload(f, fd, h.payload_len, echo);
                req = sortd__wire__request__unpack(NULL, h.message_len, msg);
                f->frames++;
                if (req)
                        answer(f, fd, req, passed, echo, kept, h.payload_len);
                sortd__wire__request__free_unpacked(req, NULL);
                if (passed >= 0)
                        close(passed);
                if (f->fault == FAKE_FAULT_HANG_UP && f->frames == 1) {
                        hang_up(fd);
                        break;
                }
        }
        if (fd >= 0)
                close(fd);
        return NULL;
}

void fake_start(fake_sortd *f)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};

        *f = (fake_sortd){0};
        snprintf(f->dir, sizeof(f->dir), "/tmp/sortd-fake-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(f->dir));
        snprintf(f->sock, sizeof(f->sock), "%s/fake.sock", f->dir);
        strcpy(sa.sun_path, f->sock);
        f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(f->listen_fd, 0);
        ck_assert_int_eq(bind(f->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(f->listen_fd, 1), 0);
        ck_assert_int_eq(pthread_create(&f->thread, NULL, serve, f), 0);
}

void fake_stop(fake_sortd *f)
{
        pthread_join(f->thread, NULL);
        close(f->listen_fd);
        unlink(f->sock);
        rmdir(f->dir);
}
