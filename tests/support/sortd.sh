# Shell helpers for the tests that run a real sortd from a script (tests/install,
# tests/readme). Source it; it defines functions only.

# sortd_start LOG SORTD [ARG...]: runs SORTD [ARG...] in the background, its output in LOG, its
# pid in sortd_pid, and returns once it serves (its "serving on" notice comes after listen()),
# or fails, with the log, when it exits or takes over 20 s.
sortd_start() {
        _log=$1
        shift
        "$@" >"$_log" 2>&1 &
        sortd_pid=$!
        _tries=0
        until grep -q "serving on" "$_log"; do
                _tries=$((_tries + 1))
                if [ $_tries -gt 200 ] || ! kill -0 "$sortd_pid" 2>/dev/null; then
                        echo "sortd did not come up: $*" >&2
                        cat "$_log" >&2
                        return 1
                fi
                sleep 0.1
        done
}

# sortd_stop: SIGTERM drains and must end in exit 0.
sortd_stop() {
        [ -n "${sortd_pid:-}" ] || return 0
        kill -TERM "$sortd_pid"
        wait "$sortd_pid"
        _rc=$?
        sortd_pid=
        if [ $_rc -ne 0 ]; then
                echo "sortd exited $_rc on SIGTERM" >&2
                return 1
        fi
}
