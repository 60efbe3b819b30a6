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
# both cases. As an ordinary user too (its files gone, made again).
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

# --- as an ordinary user: its files gone, made again where it may write
is_root || exit 0
chmod 755 "$T"
mkdir -p "$T/user/bin"
cp "$PROGS/counter" "$T/user/bin/counter"
cat >"$T/user.sh" <<EOS
cd "$T/user"
for fd in /proc/\$\$/fd/*; do fd=\${fd##*/}; [ \$fd -gt 2 ] && eval "exec \$fd>&-"; done
bin/counter 40 50 >../user.out 2>&1 </dev/null &
pid=\$!
while ! grep -q '^tick 5 ' ../user.out 2>/dev/null; do sleep 0.05; done
"$SAVER" --self-contained --kill -o ../user.ckpt \$pid 2>../user.err || exit 10
wait \$pid
cd "$T"
rm -rf "$T/user"
timeout 60 "$LOADER" --new-pids user.ckpt 2>>user.err || exit 11
[ -x "$T/user/bin/counter" ] || exit 12
EOS
chown -R 65534:65534 "$T"
st=0
timeout 120 "$PROGS/runas" 65534 65534 bash "$T/user.sh" </dev/null 3>&- || st=$?
[ "$st" = 0 ] || fail "as nobody (status $st: 10 saver, 11 restore, 12 no executable): $(cat "$T/user.err")"
grep -q '^DONE' "$T/user.out" || fail "as nobody: the program did not finish"
grep -q FAIL "$T/user.out" && fail "as nobody: the program found its memory changed"
assert_ticks_continuous "$T/user.out"
exit 0
