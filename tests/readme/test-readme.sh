#!/bin/sh
# Runs every shell block of the docs marked runnable (a `<!-- runnable -->` line right before
# a ```sh fence) in README.md, docs/*.md and python/README.md. Each file's blocks run in
# order and in one shell, so a daemon a block starts serves the blocks after it in that file;
# each file gets a shell, a scratch directory and a SORTD_SOCKET of its own, so no file leans
# on another's. The scratch directory holds copies of examples/ and python/ and a link build/
# to this build, with this build's sortd and sortctl first on the PATH, its uninstalled
# sortd.pc for pkg-config and a python3 with numpy. Also checks that the C block after
# `<!-- examples/hello.c -->` in README.md is that file.
# A marker without its block, a block without its end, or a README.md with no runnable block
# fails the test, as does any block that fails.
# meson.build passes SRCDIR, BUILD, SANITIZE, PYTHON and PYTHON_PRELOAD in the environment.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# What runs, in this order: the front door first, then every page under docs/.
files="README.md"
for f in "$SRCDIR"/docs/*.md; do
        [ -e "$f" ] && files="$files docs/${f##*/}"
done
files="$files python/README.md"

# FILE's blocks become labelled parts of one script, OUT; prints how many there are.
extract() {
        awk -v out="$2" -v name="$1" '
                BEGIN { printf "" >out }
                pending && /^```sh$/ {
                        inblock = 1; pending = 0; n++; start = NR
                        printf "\necho \"== %s:%d\"\n", name, NR >out
                        next
                }
                pending {
                        printf "%s:%d: <!-- runnable --> is not followed by a ```sh block\n",
                                name, NR - 1 >"/dev/stderr"
                        bad = 1; pending = 0
                }
                inblock && /^```$/ { inblock = 0; next }
                inblock { print >out; next }
                /^<!-- runnable -->$/ { pending = 1 }
                END {
                        if (inblock) {
                                printf "%s:%d: a runnable block has no closing ```\n", name,
                                        start >"/dev/stderr"
                                bad = 1
                        }
                        if (pending) {
                                printf "%s:%d: <!-- runnable --> ends the file\n", name,
                                        NR >"/dev/stderr"
                                bad = 1
                        }
                        print n + 0
                        exit bad
                }
        ' "$SRCDIR/$1"
}

awk '
        /^<!-- examples\/hello.c -->$/ { marked = 1; next }
        marked && /^```c$/ { inblock = 1; marked = 0; next }
        inblock && /^```$/ { exit }
        inblock { print }
' "$SRCDIR/README.md" >"$tmp/hello.c"
if ! cmp -s "$tmp/hello.c" "$SRCDIR/examples/hello.c"; then
        echo "FAIL: README.md's copy of examples/hello.c differs from the file:"
        diff -u "$SRCDIR/examples/hello.c" "$tmp/hello.c"
        exit 1
fi

mkdir "$tmp/bin" || exit 1
# python3 is the one with numpy that meson found (PYTHON), with an ASan build's runtimes.
if [ -z "$PYTHON" ]; then
        echo "FAIL: no python3 with numpy for the docs' Python blocks (scripts/bootstrap)"
        exit 1
fi
printf '#!/bin/sh\nPYTHONDONTWRITEBYTECODE=1 LD_PRELOAD="%s" ASAN_OPTIONS=detect_leaks=0 exec %s "$@"\n' \
        "$PYTHON_PRELOAD" "$PYTHON" >"$tmp/bin/python3" && chmod +x "$tmp/bin/python3" || exit 1
if [ "$SANITIZE" != none ]; then
        # This build's libsortd needs the sanitizers' runtime in the program that loads it.
        printf '#!/bin/sh\nexec %s -fsanitize=%s "$@"\n' "$(command -v cc)" "$SANITIZE" \
                >"$tmp/bin/cc" && chmod +x "$tmp/bin/cc" || exit 1
fi
export PATH="$tmp/bin:$BUILD/daemon:$BUILD/client:$PATH" \
        PKG_CONFIG_PATH="$BUILD/meson-uninstalled" LD_LIBRARY_PATH="$BUILD/client"

failed=0 total=0 summary=""
i=0
for name in $files; do
        i=$((i + 1))
        dir="$tmp/$i"
        mkdir "$dir" || exit 1
        n=$(extract "$name" "$dir/blocks.sh") || {
                failed=1
                continue
        }
        if [ "$name" = README.md ] && [ "$n" -eq 0 ]; then
                echo "FAIL: no runnable block found in README.md"
                failed=1
        fi
        total=$((total + n))
        summary="$summary $name $n,"
        [ "$n" -gt 0 ] || continue
        mkdir "$dir/work" && cp -R "$SRCDIR/examples" "$SRCDIR/python" "$dir/work/" &&
                ln -s "$BUILD" "$dir/work/build" || exit 1
        {
                echo 'set -eu'
                cat "$dir/blocks.sh"
        } >"$dir/script.sh"
        # In a session of its own: a block that fails leaves its daemon running, and the whole
        # group is stopped after the script, whatever its end. (A background setsid is no group
        # leader, so it does not fork: $! is the session's id.)
        (
                cd "$dir/work" || exit 1
                SORTD_SOCKET="$dir/sortd.sock" setsid sh "$dir/script.sh" &
                session=$!
                wait $session
                rc=$?
                kill -TERM -"$session" 2>/dev/null && sleep 0.5
                exit $rc
        )
        rc=$?
        if [ $rc -ne 0 ]; then
                echo "FAIL: $name's runnable blocks exited $rc (the last == line says where)"
                failed=1
        fi
done
echo "ran $total runnable blocks:${summary%,}"
exit $failed
