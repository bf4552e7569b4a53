/* See access.h. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "access.h"

/* A group (user) entry larger than this is no entry of a sane system: the lookup gives up. */
#define LOOKUP_MAX_BYTES (64u << 20)

/* The id of a user (group) name, found with buf of len bytes: 0, -ENOENT when nobody has the
   name, -ERANGE when the entry does not fit, or what the lookup failed with. */
static int lookup_in(const char *name, bool group, char *buf, size_t len, uint32_t *out)
{
        bool found;
        int r;

        if (group) {
                struct group g, *gp = NULL;

                r = getgrnam_r(name, &g, buf, len, &gp);
                found = r == 0 && gp;
                if (found)
                        *out = (uint32_t)gp->gr_gid;
        } else {
                struct passwd p, *pp = NULL;

                r = getpwnam_r(name, &p, buf, len, &pp);
                found = r == 0 && pp;
                if (found)
                        *out = (uint32_t)pp->pw_uid;
        }
        /* POSIX lets a lookup say "no such name" with these as well as with no entry. */
        if (found)
                return 0;
        return r == 0 || r == ENOENT || r == ESRCH ? -ENOENT : -r;
}

/* The same with a buffer of its own: a group's entry holds its member list, so the buffer
   grows until the entry fits (a group of a few hundred members takes more than 4 KiB). */
static int lookup(const char *name, bool group, uint32_t *out)
{
        size_t len = 4096;
        int r;

        for (;;) {
                char *buf = malloc(len);

                if (!buf)
                        return -ENOMEM;
                r = lookup_in(name, group, buf, len, out);
                free(buf);
                if (r != -ERANGE || len >= LOOKUP_MAX_BYTES)
                        return r;
                len *= 2;
        }
}

/* A numeric id, or the id of a name that lookup resolves: 0 or lookup's error. */
static int resolve(const char *s, bool group, uint32_t *out)
{
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (*s >= '0' && *s <= '9' && !*end && !errno && v < UINT32_MAX) {
                *out = (uint32_t)v;
                return 0;
        }
        return lookup(s, group, out);
}

/* s with the blanks (spaces, tabs) around it cut off, in place. */
static char *strip(char *s)
{
        char *e;

        s += strspn(s, " \t");
        e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
                *--e = '\0';
        return s;
}

/*
 * One setting's list into ids (uid_t and gid_t are both 32-bit on Linux): entries separated by
 * commas, blanks around each ignored ("alice, bob"). A blank list is none (everyone is
 * served), but an empty entry is an error: taken, "allow-uid = ," would be no list at all,
 * which serves everyone, and "alice,,bob" a typo passed over. 0, or sortd__access_set's errors.
 */
static int parse_list(const char *list, bool group, uint32_t *ids, size_t *n, char *why,
                      size_t why_len)
{
        const char *name = group ? "allow-gid" : "allow-uid", *kind = group ? "group" : "user";
        char copy[1024], *rest, *t;

        *n = 0;
        if (strlen(list) >= sizeof(copy)) {
                snprintf(why, why_len, "%s is too long", name);
                return -ENAMETOOLONG;
        }
        strcpy(copy, list);
        rest = strip(copy);
        if (!*rest)
                return 0;
        while (rest) {
                t = strip(strsep(&rest, ","));
                if (!*t) {
                        snprintf(why, why_len, "%s: entry %zu is empty (a comma too many?)", name,
                                 *n + 1);
                        return -EINVAL;
                }
                if (*n == SORTD__ACCESS_MAX_IDS) {
                        snprintf(why, why_len, "%s lists more than %d entries", name,
                                 SORTD__ACCESS_MAX_IDS);
                        return -E2BIG;
                }
                int r = resolve(t, group, &ids[*n]);

                if (r == -ENOENT) {
                        snprintf(why, why_len, "%s: '%s' is no %s id nor a known %s name", name, t,
                                 kind, kind);
                        return r;
                }
                if (r < 0) {
                        snprintf(why, why_len, "%s: cannot look up the %s name '%s': %s", name,
                                 kind, t, strerror(-r));
                        return r;
                }
                ++*n;
        }
        return 0;
}

_Static_assert(sizeof(uid_t) == sizeof(uint32_t) && sizeof(gid_t) == sizeof(uint32_t),
               "ids are 32-bit");

int sortd__access_set(sortd__access *a, bool group, const char *list, char *why, size_t why_len)
{
        uint32_t ids[SORTD__ACCESS_MAX_IDS];
        size_t n;
        int r = parse_list(list, group, ids, &n, why, why_len);

        if (r < 0)
                return r;
        if (group) {
                memcpy(a->gids, ids, n * sizeof(ids[0]));
                a->ngids = n;
        } else {
                memcpy(a->uids, ids, n * sizeof(ids[0]));
                a->nuids = n;
        }
        a->on = a->nuids || a->ngids;
        return 0;
}

static bool has_gid(const sortd__access *a, gid_t g)
{
        for (size_t i = 0; i < a->ngids; i++)
                if (a->gids[i] == g)
                        return true;
        return false;
}

/* Whether any of the peer's supplementary groups is listed. Most users have a few; the kernel
   says how many when they do not fit, and a user in many groups is asked again with room for
   them all, so that the listed group is never missed for lack of room. */
static bool in_supplementary(const sortd__access *a, int fd)
{
        gid_t few[64], *groups = few;
        socklen_t len = sizeof(few);
        bool found = false;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
                if (errno != ERANGE || !(groups = malloc(len)))
                        return false;
                if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
                        len = 0;
        }
        for (size_t i = 0; i < len / sizeof(groups[0]) && !found; i++)
                found = has_gid(a, groups[i]);
        if (groups != few)
                free(groups);
        return found;
}

bool sortd__access_allows(const sortd__access *a, int fd, char *why, size_t why_len)
{
        struct ucred cred;
        socklen_t len = sizeof(cred);

        if (!a->on)
                return true;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                snprintf(why, why_len, "the peer's credentials are unknown (%s)", strerror(errno));
                return false;
        }
        for (size_t i = 0; i < a->nuids; i++)
                if (a->uids[i] == cred.uid)
                        return true;
        if (has_gid(a, cred.gid))
                return true;
        if (a->ngids && in_supplementary(a, fd))
                return true;
        snprintf(why, why_len,
                 "uid %u (gid %u) is not served: neither in allow-uid nor, by any of its "
                 "groups, in allow-gid",
                 (unsigned)cred.uid, (unsigned)cred.gid);
        return false;
}
