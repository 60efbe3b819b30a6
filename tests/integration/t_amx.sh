#!/usr/bin/env bash
# A thread holding AMX tile data is refused by saver --kill, in one line
# naming the thread and the cause, before anything is killed: no image is
# left and the program runs on with its tile intact (it checks tile 0
# every tick) to its end. The restore cannot give tile data back, since
# it would have to ask the kernel for AMX on the program's behalf.
# arch: x86_64
# cpu: amx_tile
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/amx" 40 50
wait_line "$T/prog.out" '^tick 3 '
st=0
"$SAVER" --kill -o "$T/img.ckpt" "$PID" 2>"$T/saver.err" || st=$?
[ $st != 0 ] || fail "saver took a thread holding AMX tile data"
[ "$(grep -vc '^saver: warning:' "$T/saver.err")" = 1 ] ||
	fail "refusal is not one line: $(cat "$T/saver.err")"
grep -q "thread $PID: .*AMX tile data" "$T/saver.err" ||
	fail "refusal does not name the thread and the cause: $(cat "$T/saver.err")"
ls "$T/img.ckpt"* >/dev/null 2>&1 && fail "a refused checkpoint left an image"
wait "$PID" || fail "the refused program exited with status $?: $(tail -n 1 "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "the refused program did not finish"
assert_ticks_continuous "$T/prog.out"
exit 0
