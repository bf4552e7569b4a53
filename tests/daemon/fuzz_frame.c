/*
 * Fuzz target for the bytes sortd reads from a client: the frame reader, then each message
 * through daemon/request/request.c, the decoding and checks the daemon uses (protobuf-c's unpack
 * under our message cap, the Sort checks, the limits), driven the way the connection drives
 * them: a payload goes to a sink when its request is an admissible sort, else it is discarded.
 *
 * libFuzzer:  clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *               -Idaemon/base -Idaemon/net -Idaemon/request -Idaemon/sched -Iproto \
 *               -Ikernels -I<build>/proto -DSORTD_FUZZ_LIBFUZZER \
 *               tests/daemon/fuzz_frame.c daemon/net/frame.c daemon/request/request.c proto/wire.c
 * \
 *               <build>/proto/sortd.pb-c.c <build>/kernels/libsortd-engine.a -lprotobuf-c \
 *               -lm -pthread -o fuzz_frame
 *             ./fuzz_frame -dict=tests/daemon/fuzz_frame.dict tests/daemon/corpus
 * Without -DSORTD_FUZZ_LIBFUZZER it builds a driver that runs the files (or directories of
 * files) named on its command line once each: how `meson test` replays the committed corpus.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The first byte picks the read size, as a socket would split the stream. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static uint8_t sink[1 << 16];
        /* An admitted sort moves at most sizeof(sink) bytes: both halves of its payload fit
           where they are sunk below. */
        static const sortd__request_limits limits = {
                .capacity = UINT64_MAX,
                .max_request_bytes = sizeof(sink),
        };
        sortd__stats stats = {0};
        sortd__frame_reader fr;
        size_t piece;

        if (size == 0 || sortd__frame_init(&fr, SORTD__WIRE_MAX_MESSAGE) < 0)
                return 0;
        piece = (size_t)data[0] + 1;
        data++;
        size--;
        while (size) {
                uint8_t *dst;
                size_t room;
                sortd__frame_event ev;
                sortd__request rq;

                sortd__frame_buffer(&fr, &dst, &room);
                if (room == 0)
                        break;
                room = room < piece ? room : piece;
                room = room < size ? room : size;
                memcpy(dst, data, room);
                data += room;
                size -= room;
                ev = sortd__frame_consumed(&fr, room);
                if (ev == SORTD__FRAME_ERROR)
                        break;
                if (ev != SORTD__FRAME_MESSAGE)
                        continue;
                sortd__request_decode(fr.msg, fr.h.message_len, fr.h.payload_len, &limits, &stats,
                                      &rq);
                /* What the connection relies on: an admitted sort's payload is its size (a
                   region sort's, its offsets). */
                if ((rq.kind == SORTD__REQUEST_SORT || rq.kind == SORTD__REQUEST_REGION_SORT) &&
                    rq.seg.payload_bytes != fr.h.payload_len)
                        abort();
                if (fr.h.payload_len &&
                    (rq.kind == SORTD__REQUEST_SORT || rq.kind == SORTD__REQUEST_REGION_SORT))
                        sortd__frame_sink(&fr, sink, (size_t)fr.h.payload_len / 2, sink + 4096,
                                          (size_t)fr.h.payload_len - (size_t)fr.h.payload_len / 2);
                else if (fr.h.payload_len)
                        sortd__frame_discard(&fr);
        }
        sortd__frame_free(&fr);
        return 0;
}

#ifndef SORTD_FUZZ_LIBFUZZER
static int replay(const char *path)
{
        static uint8_t buf[1 << 20];
        FILE *f = fopen(path, "rb");
        size_t n;

        if (!f) {
                perror(path);
                return -1;
        }
        n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
        return 1;
}

/* Replays files, or every file in the directories, named on the command line. */
int main(int argc, char **argv)
{
        int count = 0;

        for (int i = 1; i < argc; i++) {
                DIR *d = opendir(argv[i]);
                struct dirent *e;
                char path[4096];

                if (!d) {
                        if (replay(argv[i]) < 0)
                                return 1;
                        count++;
                        continue;
                }
                while ((e = readdir(d))) {
                        if (e->d_name[0] == '.')
                                continue;
                        snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
                        if (replay(path) < 0)
                                return 1;
                        count++;
                }
                closedir(d);
        }
        printf("replayed %d inputs\n", count);
        return count ? 0 : 1;
}
#endif
