#!/usr/bin/env bash
# saver --self-contained: the image carries the files the process maps
# and has open, and the restore needs none of them. The moved program
# (tests/progs/moved.c: its executable, a mapped file and an open file
# under one directory) is checkpointed self-contained (compressed too)
# and restored twice: once with the whole directory gone (every file made
# again at its path, with its saved contents, mode and mtime, the
# directories too), once with its executable replaced by another build
# (left alone: the process gets a memfd with the saved bytes, and runs
# the saved code). An image made without --self-contained is refused in
# both cases.
. "$(dirname "$0")/lib.sh"

# run_saved NAME: moved checkpointed into $T/NAME.ckpt (self-contained)
# and $T/NAME.plain.ckpt (not), from the same directory $T/NAME
run_saved() {
	mkdir -p "$T/$1/bin"
	cp "$PROGS/moved" "$T/$1/bin/moved"
	chmod 0751 "$T/$1/bin/moved"
	touch -d '2001-02-03 04:05:06.789' "$T/$1/bin/moved"
	cd "$T/$1"
	start "$T/$1.out" "$T/$1/bin/moved" 600 30
	cd "$T"
	wait_line "$T/$1.out" '^tick 3 '
	checkpoint "$PID" "$T/$1.plain.ckpt"
	checkpoint "$PID" "$T/$1.ckpt" --self-contained --compress --kill
	wait "$PID" 2>/dev/null || true
	grep -q 'self-contained' "$T/info.out" || fail "$1: the image is not marked self-contained"
	grep -q "backing file $T/$1/bin/moved: .*carried" "$T/info.out" ||
		fail "$1: the executable is not carried: $(grep backing "$T/info.out")"
	grep -q "backing file $T/$1/input: .*carried" "$T/info.out" ||
		fail "$1: the open file is not carried"
}

# resumed NAME: restart $T/NAME.ckpt and see it run on to its end
resumed() {
	local before
	before=$(last_tick "$T/$1.out")
	restart "$T/$1.ckpt"
	wait_line "$T/$1.out" "^tick $((before + 3)) "
	RESUMED_EXE=$(readlink "/proc/$RPID/exe")
	RESUMED_MAPS=$(cat "/proc/$RPID/maps")
	wait "$LPID" || fail "$1: restored program exited with status $?"
	grep -q '^DONE' "$T/$1.out" || fail "$1: program did not finish"
	grep -q FAIL "$T/$1.out" && fail "$1: $(grep FAIL "$T/$1.out")"
	assert_ticks_continuous "$T/$1.out"
}

# --- everything gone: made again where it was
run_saved gone
want_sum=$(sha256sum <"$T/gone/bin/moved")
rm -rf "$T/gone"
if "$LOADER" "$T/gone.plain.ckpt" >"$T/plain.out" 2>&1; then
	fail "an image without its files restored with them gone"
fi
resumed gone
[ -x "$T/gone/bin/moved" ] || fail "the executable was not made again"
[ "$(sha256sum <"$T/gone/bin/moved")" = "$want_sum" ] || fail "the executable made again differs"
[ "$(stat -c %a "$T/gone/bin/moved")" = 751 ] || fail "its mode is $(stat -c %a "$T/gone/bin/moved")"
[ "$(stat -c %y "$T/gone/bin/moved")" = "$(date -d '2001-02-03 04:05:06.789' '+%Y-%m-%d %H:%M:%S.%N %z')" ] ||
	fail "its mtime is $(stat -c %y "$T/gone/bin/moved")"
[ -f "$T/gone/input" ] && [ -f "$T/gone/map" ] || fail "the open and the mapped file were not made again"
is_root && [ "$RESUMED_EXE" != "$T/gone/bin/moved" ] && fail "/proc/PID/exe is $RESUMED_EXE"

# --- the executable replaced by another build: a memfd stands in for it
run_saved other
cp "$PROGS/counter" "$T/other/bin/moved"
if "$LOADER" "$T/other.plain.ckpt" >"$T/plain.out" 2>&1; then
	fail "an image without its files restored with its executable replaced"
fi
resumed other
grep -q '/memfd:moved (deleted)' <<<"$RESUMED_MAPS" ||
	fail "no memfd mapped for the replaced executable: $(grep moved <<<"$RESUMED_MAPS")"
cmp -s "$PROGS/counter" "$T/other/bin/moved" || fail "the replacement was touched"
exit 0
