#!/bin/sh
# Installs this build into a DESTDIR and uses the installed tree alone: the files are where
# they belong, examples/hello.c builds from the installed sortd.pc and headers, and the
# installed sortd (reading the installed sortd.conf with every setting uncommented), sortctl
# and hello work together. meson.build passes the install paths in the environment (absolute,
# as they are without DESTDIR): MESON BUILD BINDIR SBINDIR LIBDIR INCLUDEDIR SYSCONFDIR DOCDIR
# MANDIR MANPAGES UNITDIR SYSUSERSDIR TMPFILESDIR, CC and SANITIZE for the client, and
# PYTHON PYDIR PYTHON_PRELOAD for the Python package (PYTHON empty: not installed or no numpy).
set -u
. "$(dirname "$0")/../support/sortd.sh"

fail() {
        echo "FAIL: $*" >&2
        exit 1
}

if [ -n "$MANPAGES" ] && ! command -v groff >/dev/null; then
        echo "groff not found (Debian package groff-base): cannot check the man pages"
        exit 77
fi

tmp=$(mktemp -d) || exit 1
trap 'sortd_stop; rm -rf "$tmp"' EXIT
dest=$tmp/dest
# No root and no system tools: meson only copies files, and this build has no install script
# (systemd-sysusers and systemd-tmpfiles run when a package is installed, not here).
"$MESON" install -C "$BUILD" --destdir "$dest" --no-rebuild --quiet || fail "meson install"
# Every path meson installed to lies under DESTDIR.
outside=$(awk -v d="$dest" '!/^#/ && $0 != d && index($0, d "/") != 1' \
        "$BUILD/meson-logs/install-log.txt")
[ -z "$outside" ] || fail "installed outside $dest: $outside"

for f in "$SBINDIR/sortd" "$BINDIR/sortctl" "$LIBDIR/libsortd.so" "$LIBDIR/pkgconfig/sortd.pc" \
        "$INCLUDEDIR/sortd/sortd.h" "$INCLUDEDIR/sortd/sortd_types.h" \
        "$INCLUDEDIR/sortd/sortd_counters.h" "$UNITDIR/sortd.service" "$UNITDIR/sortd.socket" \
        "$UNITDIR/sortd-metrics.service" "$UNITDIR/sortd-metrics.timer" \
        "$SYSUSERSDIR/sortd.conf" "$TMPFILESDIR/sortd.conf" "$SYSCONFDIR/sortd/sortd.conf" \
        "$DOCDIR/examples/hello.c"; do
        [ -f "$dest$f" ] || fail "$f is not installed"
done
[ -x "$dest$SBINDIR/sortd" ] && [ -x "$dest$BINDIR/sortctl" ] || fail "binaries not executable"

# The service runs the installed daemon on the installed configuration.
grep -qx "ExecStart=$SBINDIR/sortd --config-if-exists $SYSCONFDIR/sortd/sortd.conf" \
        "$dest$UNITDIR/sortd.service" || fail "sortd.service's ExecStart: $(grep ExecStart \
        "$dest$UNITDIR/sortd.service")"

# The metrics unit runs the installed sortctl.
grep -q "^ExecStart=$BINDIR/sortctl " "$dest$UNITDIR/sortd-metrics.service" ||
        fail "sortd-metrics.service's ExecStart: $(grep ExecStart \
        "$dest$UNITDIR/sortd-metrics.service")"

# The example configuration changes nothing: every line is a comment or empty.
conf=$dest$SYSCONFDIR/sortd/sortd.conf
grep -nv '^#' "$conf" | grep -v '^[0-9]*:$' && fail "$conf sets something (above)"
# ...and each of its settings, uncommented, is one the daemon takes at its default.
sed 's/^#\([a-z-]* =\)/\1/' "$conf" >"$tmp/all.conf"
[ "$(grep -c '^[a-z-]* =' "$tmp/all.conf")" -ge 10 ] || fail "$conf lists too few settings"

# Man pages: installed, and roff that groff renders without a warning.
for page in $MANPAGES; do
        f=$dest$MANDIR/$page
        [ -f "$f" ] || fail "$MANDIR/$page is not installed"
        out=$(groff -man -ww -z "$f" 2>&1) || fail "groff failed on $page: $out"
        [ -z "$out" ] || fail "groff warns on $page: $out"
done

# The client, from the installed source, pkg-config file and headers only.
mkdir "$tmp/client" && cp "$dest$DOCDIR/examples/hello.c" "$tmp/client/" || exit 1
export PKG_CONFIG_SYSROOT_DIR="$dest" PKG_CONFIG_PATH="$dest$LIBDIR/pkgconfig"
flags=$(pkg-config --cflags --libs sortd) || fail "pkg-config sortd"
for flag in $flags; do
        case $flag in
        -I"$dest"/* | -L"$dest"/* | -l*) ;;
        *) fail "pkg-config gives '$flag', which is not in $dest" ;;
        esac
done
san=
[ "$SANITIZE" = none ] || san=-fsanitize=$SANITIZE # libsortd.so needs the runtime
# shellcheck disable=SC2086
(cd "$tmp/client" && $CC $san -std=c17 -Wall -Wextra -Werror -o hello hello.c $flags) ||
        fail "hello.c does not build against the installed tree"

export LD_LIBRARY_PATH="$dest$LIBDIR" SORTD_SOCKET="$tmp/sortd.sock"
for exe in "$tmp/client/hello" "$dest$BINDIR/sortctl"; do
        lib=$(ldd "$exe" | sed -n 's/.*libsortd\.so[.0-9]* => \([^ ]*\).*/\1/p')
        case $lib in
        "$dest"/*) ;;
        *) fail "$exe loads libsortd from '$lib', not from $dest" ;;
        esac
done

sortd_start "$tmp/sortd.log" "$dest$SBINDIR/sortd" --config "$tmp/all.conf" \
        --socket "$SORTD_SOCKET" --engine cpu --capacity 1M --threads 2 ||
        fail "the installed sortd did not serve with every setting of $conf uncommented"

out=$("$tmp/client/hello") || fail "hello exited $?"
[ "$out" = "-7 -7 0 3 42 1000" ] || fail "hello printed '$out'"

out=$("$dest$BINDIR/sortctl" status) || fail "sortctl status exited $?: $out"
printf '%s\n' "$out" | grep -q 'engine.*cpu' || fail "sortctl status: $out"
printf '%s\n' "$out" | grep -Eq 'sorts ok[^0-9]*1([^0-9]|$)' || fail "sortctl status counts no sort: $out"

# The Python package, from where meson installed it, finds the installed library by itself.
if [ -n "$PYTHON" ]; then
        [ -f "$dest$PYDIR/sortd/_client.py" ] || fail "the Python package is not in $PYDIR"
        out=$(PYTHONPATH="$dest$PYDIR" PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -c \
                'import sortd._config as c; print(c.LIBSORTD)') || fail "import sortd: $out"
        [ "$out" = "$LIBDIR/libsortd.so.0" ] || fail "sortd._config.LIBSORTD is '$out'"
        # The same library, under DESTDIR.
        out=$(PYTHONPATH="$dest$PYDIR" PYTHONDONTWRITEBYTECODE=1 \
                SORTD_LIBRARY="$dest$LIBDIR/libsortd.so.0" LD_PRELOAD="$PYTHON_PRELOAD" \
                ASAN_OPTIONS=detect_leaks=0 "$PYTHON" -c '
import numpy as np, sortd
a = np.array([42, -7, 3, 1000, 0, -7], dtype=np.int32)
sortd.sort(a)
print(*a)') || fail "the installed Python package: $out"
        [ "$out" = "-7 -7 0 3 42 1000" ] || fail "the installed Python package printed '$out'"
fi

sortd_stop || fail "sortd did not stop cleanly: $(cat "$tmp/sortd.log")"
echo "installed into $dest and used from there: OK"
