#!/bin/sh
# usage: test-unit-security.sh SYSTEMD-ANALYZE SERVICE [LIMIT]
# Fails when systemd-analyze rates SERVICE's exposure at LIMIT (3.0) or above. SERVICE is the
# unit file as meson install copies it. --offline reads the file alone, without PID 1.
set -u
analyze=$1 service=$2 limit=${3:-3.0}

if [ -z "$analyze" ]; then
        echo "systemd-analyze not found: skipping"
        exit 77
fi
out=$("$analyze" security --offline=true --no-pager "$service" 2>&1)
rc=$?
if [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q "unrecognized option"; then
        echo "this systemd-analyze has no --offline (systemd 252 has): skipping"
        exit 77
fi
score=$(printf '%s\n' "$out" | sed -n 's/^.*Overall exposure level for [^:]*: \([0-9.]*\) .*$/\1/p')
if [ $rc -ne 0 ] || [ -z "$score" ]; then
        printf '%s\n' "FAIL: systemd-analyze security exited $rc without a score:" "$out"
        exit 1
fi
printf '%s\n' "$out" | grep '✗'
if awk -v s="$score" -v l="$limit" 'BEGIN { exit !(s < l) }'; then
        echo "exposure $score, below $limit"
        exit 0
fi
echo "FAIL: exposure $score is not below $limit (the ✗ lines above say what weighs)"
exit 1
