#!/bin/sh
# usage: verify-units.sh SYSTEMD-ANALYZE SERVICE SOCKET METRICS-SERVICE SYSUSERS TMPFILES
#        METRICS-TIMER
# The units are files under any name; they are checked as sortd.service, sortd.socket,
# sortd-metrics.service and sortd-metrics.timer, the names they reference each other by. systemd-analyze verify only warns
# about a line it cannot parse (Type=notifyy, an unknown key, a bad mode) and exits 0, so any
# output at all fails the test.
set -u
analyze=$1 service=$2 socket=$3 metrics=$4 sysusers=$5 tmpfiles=$6 timer=$7

if [ -z "$analyze" ]; then
        echo "systemd-analyze not found: skipping"
        exit 77
fi
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cp "$service" "$dir/sortd.service" && cp "$socket" "$dir/sortd.socket" &&
        cp "$metrics" "$dir/sortd-metrics.service" && cp "$timer" "$dir/sortd-metrics.timer" ||
        exit 1
mkdir -p "$dir/root/etc" # sysusers writes its passwd and group here

# Runs a command; fails the test if it exits non-zero or prints anything but sysusers'
# notes on what it creates.
check() {
        out=$("$@" 2>&1)
        rc=$?
        out=$(printf '%s\n' "$out" | grep -Ev "^(Creating (user|group) 'sortd'|Would write )")
        if [ $rc -ne 0 ] || [ -n "$out" ]; then
                printf '%s\n' "FAIL (exit $rc): $*" "$out"
                failed=1
        fi
}
failed=0
# User=sortd need not exist here: verify does not look users up.
check "$analyze" verify "$dir/sortd.socket" "$dir/sortd.service" "$dir/sortd-metrics.timer" \
        "$dir/sortd-metrics.service"
if command -v systemd-sysusers >/dev/null; then
        check systemd-sysusers --root="$dir/root" --dry-run "$sysusers"
        # Creating the directory needs chown, hence root; the user comes from the
        # sysusers snippet, written into the scratch root.
        if [ "$(id -u)" = 0 ] && command -v systemd-tmpfiles >/dev/null; then
                check systemd-sysusers --root="$dir/root" "$sysusers"
                check systemd-tmpfiles --root="$dir/root" --create "$tmpfiles"
        else
                echo "tmpfiles snippet not checked: creating it needs root"
        fi
fi
# RestartPreventExitStatus= is the status sortd exits with on a bad setting (sortd(8)): a
# configuration error is not restarted in a loop.
sortd=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$service")
prevent=$(sed -n 's/^RestartPreventExitStatus=//p' "$service")
"$sortd" --engine no-such-engine 2>/dev/null
rc=$?
if [ "$prevent" != "$rc" ]; then
        echo "FAIL: RestartPreventExitStatus='$prevent', but sortd exits $rc on a bad setting"
        failed=1
fi
[ $failed -eq 0 ] && echo "verified"
exit $failed
