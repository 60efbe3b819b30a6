#!/usr/bin/env bash
# POSIX timers come back exactly: a two-thread program with timers of
# every kind (signal to the process, to a thread, none, glibc's
# SIGEV_THREAD; periodic and
# one-shot, absolute, disarmed, one with no sigevent, one with an
# overrun count of ~200 and its next signal pending, ids with a gap)
# checks each one by its id every tick: value, interval, overrun count,
# the values and threads its signals come with. A live checkpoint, then
# two --kill cycles (the second making the ids in order, as a kernel
# before 6.17 must); /proc/PID/timers shows the same before and after.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gate.sh"

# a timer on a CPU-time clock is refused, and the program runs on
start "$T/cpu.out" "$PROGS/ptimers" 100 cpu
wait_line "$T/cpu.out" '^tick 1 '
saver_refuses "$T/cpu.ckpt" "^saver: pid $PID: POSIX timer [0-9]+ runs on a process.s CPU-time clock \(clock id -6\): not supported$" --kill "$PID"
now=$(last_tick "$T/cpu.out")
wait_line "$T/cpu.out" "^tick $((now + 2)) "
kill -USR1 "$PID"
wait "$PID" || fail "the refused program failed: $(tail -n 2 "$T/cpu.out")"

start "$T/prog.out" "$PROGS/ptimers" 100
pid=$PID
wait_line "$T/prog.out" '^tick 2 '
cat "/proc/$pid/timers" >"$T/timers.before"
[ "$(grep -c '^ID:' "$T/timers.before")" = 8 ] ||
	fail "the program does not have its 8 timers: $(cat "$T/timers.before")"

checkpoint "$pid" "$T/live.ckpt"
now=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((now + 2)) "
diff "$T/timers.before" "/proc/$pid/timers" >"$T/timers.diff" ||
	fail "a live checkpoint changed the timers: $(cat "$T/timers.diff")"

rpid=$pid
for cycle in 1 2; do
	checkpoint_kill "$rpid" "$T/img$cycle.ckpt"
	[ "$cycle" = 1 ] || wait "$LPID" 2>/dev/null || true
	grep -q 'POSIX timers: 8' "$T/info.out" ||
		fail "cycle $cycle: ckpt-info does not show the 8 timers: $(cat "$T/info.out")"
	before=$(last_tick "$T/prog.out")
	fill=
	[ "$cycle" = 2 ] && fill=1
	IBCR_TIMER_FILL=$fill restart "$T/img$cycle.ckpt"
	expect_pid "$pid" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 3)) "
	grep -q FAIL "$T/prog.out" && fail "cycle $cycle: $(grep FAIL "$T/prog.out")"
	sed "s/\.$RPID\$/.$pid/" "/proc/$RPID/timers" >"$T/timers.after$cycle"
	diff "$T/timers.before" "$T/timers.after$cycle" >"$T/timers.diff" ||
		fail "cycle $cycle: the timers changed: $(cat "$T/timers.diff")"
	rpid=$RPID
done

kill -USR1 "$rpid"
wait_line "$T/prog.out" '^DONE' 10
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
assert_ticks_continuous "$T/prog.out"
exit 0
