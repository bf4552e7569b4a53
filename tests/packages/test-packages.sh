#!/bin/sh
# usage: tests/packages/test-packages.sh [SOURCE]
# Builds sortd's Debian packages from a copy of SOURCE's tracked files (the nocuda profile and
# nocheck: the suites ran already, and the CUDA build is scripts/gpu-check's), has lintian
# report no error, unpacks them into a scratch root with dpkg -x, and checks what ended up
# where: the sysusers and tmpfiles entries, the units (systemd-analyze verify), the conffile,
# libsortd through pkg-config, `import sortd`; the maintainer scripts, by reading them; then
# runs the unpacked sortd and sortctl against each other, and hello.c built against the
# unpacked headers and library.
set -eu
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
work=$(mktemp -d)
daemon_pid=
cleanup() {
        [ -z "$daemon_pid" ] || kill "$daemon_pid" 2>/dev/null || true
        rm -rf "$work"
}
trap cleanup EXIT
fail() {
        echo "test-packages: FAIL: $*" >&2
        exit 1
}

# ---- build ----
mkdir "$work/src"
if [ -d "$src/.git" ]; then
        git -C "$src" ls-files -z | (cd "$src" && xargs -0 cp --parents -t "$work/src")
else
        cp -r "$src/." "$work/src"
fi
# Debian's python3 and tools, not another one first on PATH (pyenv's).
(cd "$work/src" && PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
        dpkg-buildpackage -us -uc -b -Pnocuda >"$work/build.log" 2>&1) ||
        { tail -40 "$work/build.log"; fail "dpkg-buildpackage"; }
deb() { echo "$work/${1}_"*"_$(dpkg --print-architecture).deb"; }
for p in sortd sortd-tools libsortd0 libsortd-dev python3-sortd; do
        [ -f "$(deb $p)" ] || fail "no $p package"
done
lintian --tag-display-limit 0 "$work"/sortd_*.changes >"$work/lintian.log" 2>&1 || true
if grep -q '^E: ' "$work/lintian.log"; then
        cat "$work/lintian.log"
        fail "lintian reports errors"
fi
grep -q 'holds the CPU engine alone' "$work/control" 2>/dev/null ||
        dpkg-deb -f "$(deb sortd)" Description | grep -q 'holds the CPU engine alone' ||
        fail "sortd's description does not say it holds the CPU engine alone"

# ---- unpack ----
root=$work/root
for p in sortd sortd-tools libsortd0 libsortd-dev python3-sortd; do
        dpkg -x "$(deb $p)" "$root"
done
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=$root/usr/lib/$multiarch

grep -qx 'u sortd - "sortd sort daemon"' "$root/usr/lib/sysusers.d/sortd.conf" ||
        fail "sysusers: no sortd user"
grep -q '^d /run/sortd 0750 sortd sortd' "$root/usr/lib/tmpfiles.d/sortd.conf" ||
        fail "tmpfiles: no /run/sortd"
for u in sortd.service sortd.socket sortd-metrics.service sortd-metrics.timer; do
        [ -f "$root/lib/systemd/system/$u" ] || fail "no $u"
done
dpkg-deb -e "$(deb sortd)" "$work/ctl"
grep -qx /etc/sortd/sortd.conf "$work/ctl/conffiles" || fail "sortd.conf is not a conffile"
grep -nv '^#' "$root/etc/sortd/sortd.conf" | grep -v '^[0-9]*:$' && fail "sortd.conf sets something"

# The units as installed, their binaries taken from the root: systemd-analyze verify prints
# nothing for a unit it finds whole.
mkdir "$work/units"
for u in sortd.service sortd.socket sortd-metrics.service sortd-metrics.timer; do
        sed "s|^ExecStart=/usr/|ExecStart=$root/usr/|" "$root/lib/systemd/system/$u" \
                >"$work/units/$u"
done
out=$(cd "$work/units" && systemd-analyze verify sortd.socket sortd.service \
        sortd-metrics.timer sortd-metrics.service 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify: $out"

# ---- the maintainer scripts, read ----
has() { grep -q -- "$2" "$work/ctl/$1" || fail "$1 lacks: $2"; }
has postinst "systemd-sysusers .*sortd.conf"
has postinst "systemd-tmpfiles .*--create sortd.conf"
has postinst "deb-systemd-helper enable 'sortd.socket'"
has postinst "deb-systemd-invoke \$_dh_action 'sortd.socket'"
has postinst "deb-systemd-invoke try-restart sortd.service"
has prerm "deb-systemd-invoke stop 'sortd.socket'"
has prerm "deb-systemd-invoke stop sortd-metrics.timer sortd-metrics.service sortd.service"
has postrm "rm -rf /var/cache/sortd"
has postrm "deb-systemd-helper purge 'sortd.service'"
# The service is not started on a first install (it starts on first use), nor enabled.
grep -q "deb-systemd-invoke [a-z\$_]* 'sortd.service'" "$work/ctl/postinst" &&
        fail "postinst starts sortd.service"
# sysusers before tmpfiles: /run/sortd is the sortd user's.
[ "$(grep -n systemd-sysusers "$work/ctl/postinst" | head -1 | cut -d: -f1)" -lt \
  "$(grep -n systemd-tmpfiles "$work/ctl/postinst" | head -1 | cut -d: -f1)" ] ||
        fail "postinst creates /run/sortd before its user"

# ---- run what was unpacked ----
export LD_LIBRARY_PATH=$libdir
sock=$work/sortd.sock
"$root/usr/sbin/sortd" --socket "$sock" --engine cpu --capacity 1M --log-level warning &
daemon_pid=$!
i=0
until "$root/usr/bin/sortctl" --socket "$sock" ping >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -lt 100 ] || fail "the unpacked sortd does not answer"
        sleep 0.1
done
printf '5\n3\n9\n1\n' >"$work/in.txt"
"$root/usr/bin/sortctl" --socket "$sock" sort "$work/in.txt" -o "$work/out.txt" --type u32
[ "$(tr '\n' ' ' <"$work/out.txt")" = "1 3 5 9 " ] || fail "sortctl sort: $(cat "$work/out.txt")"
"$root/usr/bin/sortctl" --socket "$sock" status --format prometheus | grep -q '^sortd_sorts_ok_total 1$' ||
        fail "sortctl status --format prometheus"

cflags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags sortd)
libs=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --libs sortd)
# shellcheck disable=SC2086
cc -o "$work/hello" "$root/usr/share/doc/libsortd-dev/examples/hello.c" $cflags $libs ||
        fail "hello.c against the unpacked headers and libsortd"
SORTD_SOCKET=$sock "$work/hello" >"$work/hello.out" || fail "hello: $(cat "$work/hello.out")"

SORTD_LIBRARY=$libdir/libsortd.so.0 PYTHONPATH=$root/usr/lib/python3/dist-packages \
        /usr/bin/python3 -c "
import numpy, sortd
assert sortd.__file__.startswith('$root'), sortd.__file__
with sortd.Client('$sock') as c:
    assert c.sort(numpy.array([3, 1, 2], dtype=numpy.uint32)).tolist() == [1, 2, 3]
" || fail "import sortd from python3-sortd"

lintian_warnings=$(grep -c '^W: ' "$work/lintian.log" || true)
echo "test-packages: 5 packages built and checked; lintian: no errors, $lintian_warnings warnings"
