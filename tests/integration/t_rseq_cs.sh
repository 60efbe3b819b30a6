#!/usr/bin/env bash
# arch: x86_64
# A thread caught inside an rseq critical section is aborted when it
# resumes, as the kernel does for a thread it stopped: the program
# (tests/progs/rseq_cs.c) runs a long section that notes the TSC at every
# step; a restore that resumed it in the middle would commit across the
# pause of the checkpoint ("FAIL ... not aborted"). The restored program
# must say it was aborted after the pause. A checkpoint that caught it
# between two sections (it says so) is tried again, up to 6 times. A live
# checkpoint first: the process runs on, aborted too.
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/rseq_cs"
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
checkpoint "$pid" "$T/live.ckpt"
now=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((now + 3)) "
grep -q FAIL "$T/prog.out" && fail "after a live checkpoint: $(grep FAIL "$T/prog.out")"

caught=
for try in 1 2 3 4 5 6; do
	seen=$(grep -c '^aborted after a pause' "$T/prog.out" || true)
	outside=$(grep -c '^paused outside' "$T/prog.out" || true)
	checkpoint_kill "$pid" "$T/img.ckpt"
	[ "$try" = 1 ] || wait "$LPID" 2>/dev/null || true	# the pid is free once reaped
	before=$(last_tick "$T/prog.out")
	# longer than the program's PAUSE_MS: the pause it must notice
	sleep 1.2
	restart "$T/img.ckpt"
	expect_pid "$pid" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 3)) "
	grep -q FAIL "$T/prog.out" && fail "try $try: $(grep FAIL "$T/prog.out")"
	if [ "$(grep -c '^aborted after a pause' "$T/prog.out")" -gt "$seen" ]; then
		caught=$try
		break
	fi
	[ "$(grep -c '^paused outside' "$T/prog.out" || true)" -gt "$outside" ] ||
		fail "try $try: the restored program noticed no pause at all"
	note "try $try: checkpointed between two critical sections; again"
	pid=$RPID
done
[ -n "$caught" ] || fail "no checkpoint caught the program inside its critical section in 6 tries"
kill "$RPID"
wait "$LPID" 2>/dev/null || true
assert_ticks_continuous "$T/prog.out"
exit 0
