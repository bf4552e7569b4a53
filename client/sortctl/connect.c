/* Connecting to sortd as the common options say, and why that failed, from what is at the path. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "connect.h"
#include "fail.h"
#include "sortctl.h"
#include "wire.h"

/* Why connecting to path failed, from what is at path. */
static int unreachable(const char *path, sortd_status s, const char *err)
{
        struct stat st;

        if (s == SORTD_E_IO && stat(path, &st) < 0 && errno == ENOENT)
                return sc_fail(SC_UNREACHABLE,
                               "sortd is not running at %s: start it with systemctl start "
                               "sortd.socket (or sortd --socket %s), or point --socket or "
                               "SORTD_SOCKET at the right socket",
                               path, path);
        if (s == SORTD_E_IO && access(path, W_OK) < 0 && errno == EACCES)
                return sc_fail(SC_UNREACHABLE,
                               "no permission to connect to %s: join its group (usermod -aG "
                               "sortd $USER, then log in again)",
                               path);
        if (s == SORTD_E_IO && strstr(err, "refused"))
                return sc_fail(SC_UNREACHABLE,
                               "nothing listens on %s (sortd stopped and left its socket): start "
                               "it with systemctl start sortd.socket",
                               path);
        if (s == SORTD_E_DENIED)
                return sc_fail(SC_UNREACHABLE, "%s: %s", err, sc_fail_advice(s));
        return sc_fail(s == SORTD_E_INVAL ? SC_FAIL : SC_UNREACHABLE,
                       "cannot reach sortd at %s: %s%s%s", path, err, sc_fail_advice(s) ? ": " : "",
                       sc_fail_advice(s) ? sc_fail_advice(s) : "");
}

int sc_connect(const sc_common *c, sortd_conn **out)
{
        sortd_connect_options o = {.client_name = "sortctl", .timeout_ms = c->timeout_ms};
        char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 64], err[256];
        sortd_status s;

        if (c->socket)
                snprintf(path, sizeof(path), "%s", c->socket);
        else
                sortd__wire_default_socket(path, sizeof(path));
        s = sortd_connect(path, &o, out, err, sizeof(err));
        return s == SORTD_OK ? SC_OK : unreachable(path, s, err);
}
