#!/bin/sh
# Runs every shell block of the README marked runnable (a `<!-- runnable -->` line right before
# a ```sh fence), in order and in one shell, so a daemon a block starts serves the blocks
# after it. They run in a scratch directory holding copies of examples/ and python/ and a link
# build/ to this build, with this build's sortd and sortctl first on the PATH, its uninstalled
# sortd.pc for pkg-config, a python3 with numpy, and a private SORTD_SOCKET. Also checks that the C block after `<!-- examples/hello.c -->` is that file.
# meson.build passes README, SRCDIR, BUILD, SANITIZE, PYTHON and PYTHON_PRELOAD in the
# environment.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# Each block becomes a labelled part of one script; a marker without its block is an error.
awk -v out="$tmp/blocks.sh" '
        pending && /^```sh$/ {
                inblock = 1; pending = 0; n++
                printf "\necho \"== README.md:%d\"\n", NR >out
                next
        }
        pending {
                printf "README.md:%d: <!-- runnable --> is not followed by a ```sh block\n",
                        NR - 1 >"/dev/stderr"
                bad = 1; pending = 0
        }
        inblock && /^```$/ { inblock = 0; next }
        inblock { print >out; next }
        /^<!-- runnable -->$/ { pending = 1 }
        END {
                if (n == 0)
                        print "no runnable block found" >"/dev/stderr"
                exit bad || n == 0
        }
' "$README" || exit 1

awk '
        /^<!-- examples\/hello.c -->$/ { marked = 1; next }
        marked && /^```c$/ { inblock = 1; marked = 0; next }
        inblock && /^```$/ { exit }
        inblock { print }
' "$README" >"$tmp/hello.c"
if ! cmp -s "$tmp/hello.c" "$SRCDIR/examples/hello.c"; then
        echo "FAIL: the README's copy of examples/hello.c differs from the file:"
        diff -u "$SRCDIR/examples/hello.c" "$tmp/hello.c"
        exit 1
fi

mkdir "$tmp/work" "$tmp/bin" && cp -R "$SRCDIR/examples" "$SRCDIR/python" "$tmp/work/" &&
        ln -s "$BUILD" "$tmp/work/build" || exit 1
# python3 is the one with numpy that meson found (PYTHON), with an ASan build's runtimes.
if [ -z "$PYTHON" ]; then
        echo "FAIL: no python3 with numpy for the README's Python block (scripts/bootstrap)"
        exit 1
fi
printf '#!/bin/sh\nPYTHONDONTWRITEBYTECODE=1 LD_PRELOAD="%s" ASAN_OPTIONS=detect_leaks=0 exec %s "$@"\n' \
        "$PYTHON_PRELOAD" "$PYTHON" >"$tmp/bin/python3" && chmod +x "$tmp/bin/python3" || exit 1
if [ "$SANITIZE" != none ]; then
        # This build's libsortd needs the sanitizers' runtime in the program that loads it.
        printf '#!/bin/sh\nexec %s -fsanitize=%s "$@"\n' "$(command -v cc)" "$SANITIZE" \
                >"$tmp/bin/cc" && chmod +x "$tmp/bin/cc" || exit 1
fi
{
        echo 'set -eu'
        cat "$tmp/blocks.sh"
} >"$tmp/script.sh"

export PATH="$tmp/bin:$BUILD/daemon:$BUILD/client:$PATH" \
        PKG_CONFIG_PATH="$BUILD/meson-uninstalled" LD_LIBRARY_PATH="$BUILD/client" \
        SORTD_SOCKET="$tmp/sortd.sock"
# In a session of its own: a block that fails leaves its daemon running, and the whole group
# is stopped after the script, whatever its end. (A background setsid is no group leader, so it
# does not fork: $! is the session's id.)
cd "$tmp/work" || exit 1
setsid sh "$tmp/script.sh" &
session=$!
wait $session
rc=$?
kill -TERM -"$session" 2>/dev/null && sleep 0.5
[ $rc -eq 0 ] || echo "FAIL: the README's runnable blocks exited $rc (the last == line says where)"
exit $rc
