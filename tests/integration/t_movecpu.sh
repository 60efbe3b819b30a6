#!/usr/bin/env bash
# sched_getcpu() is right right after every restore: two threads that pin
# themselves to one CPU after the other and check, a millisecond apart,
# that sched_getcpu() (from the rseq area), the getcpu system call and
# their affinity mask agree with where they pinned themselves. Four
# checkpoint (--kill) and restart cycles, and a live checkpoint; both
# threads must keep moving after each.
. "$(dirname "$0")/lib.sh"
[ "$(nproc)" -ge 2 ] || fail "this test needs two CPUs, this machine has $(nproc)"

# turns PID FILE: the last "turns A B" of FILE
turns() { sed -n 's/^tick [0-9]* pid [0-9]* turns \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$1" | tail -n 1; }
# moving FILE A B: both threads did turns since A B
moving() {
	local a b
	read -r a b <<<"$(turns "$1")"
	[ "$a" -gt "$2" ] && [ "$b" -gt "$3" ]
}

start "$T/prog.out" "$PROGS/movecpu"
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
checkpoint "$pid" "$T/live.ckpt"
read -r a b <<<"$(turns "$T/prog.out")"
now=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((now + 3)) "
moving "$T/prog.out" "$a" "$b" || fail "a thread stopped moving after a live checkpoint"

rpid=$pid
for cycle in 1 2 3 4; do
	checkpoint_kill "$rpid" "$T/img$cycle.ckpt"
	# the previous restart-loader exits once its killed child is reaped:
	# only then is the pid free again
	[ "$cycle" = 1 ] || wait "$LPID" 2>/dev/null || true
	read -r a b <<<"$(turns "$T/prog.out")"
	before=$(last_tick "$T/prog.out")
	restart "$T/img$cycle.ckpt"
	expect_pid "$pid" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 4)) "
	grep -q FAIL "$T/prog.out" && fail "cycle $cycle: $(grep FAIL "$T/prog.out")"
	moving "$T/prog.out" "$a" "$b" || fail "cycle $cycle: a thread stopped moving"
	rpid=$RPID
done
kill "$RPID"
wait "$LPID" 2>/dev/null || true
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
assert_ticks_continuous "$T/prog.out"
exit 0
