#!/usr/bin/env bash
# The root directory after chroot(2) comes back: a process chroot'ed into
# a directory, working in a subdirectory of it (tests/progs/chrooted.c),
# checks after checkpoint (--kill) and restart that "/" is that directory,
# its cwd still "/sub" and a file only there visible; /proc shows the same
# root and cwd.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/priv.sh"
is_root || fail "this test needs root (chroot); run it as root"

mkdir -p "$T/jail/sub"
touch "$T/jail/MARKER"
start "$T/prog.out" "$PROGS/chrooted" "$T/jail" 60 100
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
[ "$(readlink "/proc/$pid/root")" = "$T/jail" ] || fail "not chroot'ed: $(readlink "/proc/$pid/root")"
recycle "$pid" "$T/img.ckpt" --kill
[ "$(readlink "/proc/$RPID/root")" = "$T/jail" ] || fail "root after restore: $(readlink "/proc/$RPID/root")"
[ "$(readlink "/proc/$RPID/cwd")" = "$T/jail/sub" ] || fail "cwd after restore: $(readlink "/proc/$RPID/cwd")"
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
grep -q "root $T/jail " "$T/info.out" || fail "ckpt-info does not show the root directory"

exit 0
