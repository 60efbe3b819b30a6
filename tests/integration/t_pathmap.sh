#!/usr/bin/env bash
# --path-map OLD=NEW: a program whose executable, mapped file, open file,
# working directory, bound and connected UNIX socket names and inotify
# watch are all under one directory (tests/progs/moved.c) is checkpointed,
# the directory is moved, and the restore is refused without the map
# (naming a missing file) and runs with it, every one of those under the
# new name: its ticks go on, its checks hold, its socket still carries
# messages, its watch sees a file made in the new directory, and
# /proc/PID/exe, cwd and maps name the new paths.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/old/bin"
cp "$PROGS/moved" "$T/old/bin/moved"
cd "$T/old"
start "$T/prog.out" "$T/old/bin/moved" 600 30
cd "$T"
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
touch "$T/old/poke1"
wait_line "$T/prog.out" '^saw poke1$'
checkpoint_kill "$pid" "$T/img.ckpt"
before=$(last_tick "$T/prog.out")
mv "$T/old" "$T/new"

if "$LOADER" "$T/img.ckpt" >"$T/refused.out" 2>&1; then
	fail "restored without --path-map although its files moved"
fi
grep -q "$T/old/" "$T/refused.out" || fail "the refusal names no missing file: $(cat "$T/refused.out")"
[ "$(last_tick "$T/prog.out")" = "$before" ] || fail "the refused restore ran the program"

LOADER_ARGS="--path-map $T/old=$T/new" restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 3)) pid [0-9]* cwd $T/new\$"
grep -q "^moved $T/old $T/new\$" "$T/prog.out" || fail "the program did not see its cwd move"
touch "$T/new/poke2"
wait_line "$T/prog.out" '^saw poke2$'
if is_root; then
	[ "$(readlink "/proc/$RPID/exe")" = "$T/new/bin/moved" ] ||
		fail "/proc/PID/exe is $(readlink "/proc/$RPID/exe")"
fi
[ "$(readlink "/proc/$RPID/cwd")" = "$T/new" ] || fail "cwd is $(readlink "/proc/$RPID/cwd")"
grep -q " $T/new/map\$" "/proc/$RPID/maps" || fail "maps do not show $T/new/map"
grep -q " $T/new/bin/moved\$" "/proc/$RPID/maps" || fail "maps do not show the moved executable"
grep -q "$T/old" "/proc/$RPID/maps" && fail "maps still name $T/old"
wait "$LPID" || fail "restored program exited with status $?"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
grep -q FAIL "$T/prog.out" && fail "program found its state changed: $(grep FAIL "$T/prog.out")"
assert_ticks_continuous "$T/prog.out"
exit 0
