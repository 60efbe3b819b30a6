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
saver_refused "$PID" "thread $PID: .*AMX tile data"
wait "$PID" || fail "the refused program exited with status $?: $(tail -n 1 "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "the refused program did not finish"
assert_ticks_continuous "$T/prog.out"
exit 0
