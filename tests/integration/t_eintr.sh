#!/usr/bin/env bash
# A checkpoint makes no call return EINTR: six threads each blocked, all
# signals blocked, in epoll_wait, epoll_pwait, epoll_pwait2,
# rt_sigtimedwait, semop and semtimedop with long timeouts (the kernel
# ends these with EINTR when ptrace's interrupt wakes them, where others
# are restarted) fail on any return. A live checkpoint, then two --kill
# cycles: no return, and every thread is back in its call.
. "$(dirname "$0")/lib.sh"

# in_calls PID: the syscall numbers the threads but the main one are in
in_calls() {
	local t
	for t in "/proc/$1/task/"*; do
		[ "${t##*/}" = "$1" ] && continue
		read -r nr _ <"$t/syscall" || true
		echo "$nr"
	done | sort -n | tr '\n' ' '
}
WANT="128 220 220 232 281 441 "	# glibc makes semop a semtimedop
# wait_calls PID: until every worker is in its call (10 s)
wait_calls() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ "$(in_calls "$1")" = "$WANT" ] && return 0
		sleep 0.05
	done
	fail "the workers of $1 are not in their calls: $(in_calls "$1")"
}

start "$T/prog.out" "$PROGS/eintr" 100
pid=$PID
wait_line "$T/prog.out" '^tick 2 '
semid=$(sed -n 's/^semid //p' "$T/prog.out")
trap 'ipcrm -s "$semid" 2>/dev/null; cleanup' EXIT
wait_calls "$pid"

checkpoint "$pid" "$T/live.ckpt"
now=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((now + 2)) "
grep -q FAIL "$T/prog.out" && fail "after a live checkpoint: $(grep FAIL "$T/prog.out")"
wait_calls "$pid"

rpid=$pid
for cycle in 1 2; do
	checkpoint_kill "$rpid" "$T/img$cycle.ckpt"
	[ "$cycle" = 1 ] || wait "$LPID" 2>/dev/null || true
	before=$(last_tick "$T/prog.out")
	restart "$T/img$cycle.ckpt"
	expect_pid "$pid" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 3)) "
	grep -q FAIL "$T/prog.out" && fail "cycle $cycle: $(grep FAIL "$T/prog.out")"
	wait_calls "$RPID"
	rpid=$RPID
done

kill -USR1 "$rpid"
wait_line "$T/prog.out" '^DONE' 10
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
assert_ticks_continuous "$T/prog.out"
exit 0
