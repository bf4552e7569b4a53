/*
 * Who the daemon serves (access.c). The socket's mode (0660, or what systemd gives it) is the
 * first gate; allow-uid and allow-gid are an optional second one, checked with the peer's
 * credentials from the kernel (SO_PEERCRED, SO_PEERGROUPS) when it connects: with either list
 * set, a peer is served when its uid is in allow-uid, or its primary or any supplementary gid
 * is in allow-gid.
 */
#ifndef SORTD_DAEMON_ACCESS_H
#define SORTD_DAEMON_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SORTD__ACCESS_MAX_IDS 64

typedef struct sortd__access {
        bool on; /* a list was given: only those it names are served */
        uid_t uids[SORTD__ACCESS_MAX_IDS];
        gid_t gids[SORTD__ACCESS_MAX_IDS];
        size_t nuids, ngids;
} sortd__access;

/*
 * Sets a's users (group: groups) to one setting's list, names or numeric ids separated by
 * commas (blanks around each ignored; an empty entry is an error, a blank list is none),
 * names resolved now, replacing what it held. The config loader calls it on the line that sets
 * the list, so that an error names the line, and the daemon serves with what it resolved there:
 * each name is looked up once. Returns 0, or a negative errno with why naming the entry at
 * fault and a as it was: -EINVAL for an empty entry, -E2BIG for more than SORTD__ACCESS_MAX_IDS
 * entries, -ENAMETOOLONG for a list over 1023 bytes, -ENOENT for a name nobody has, or the
 * error the lookup of a name failed with. An access of all zeros serves everyone.
 */
int sortd__access_set(sortd__access *a, bool group, const char *list, char *why, size_t why_len);

/* Whether the peer connected on fd is served; when not, why says who it is and why not. */
bool sortd__access_allows(const sortd__access *a, int fd, char *why, size_t why_len);

#endif
