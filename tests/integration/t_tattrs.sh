#!/usr/bin/env bash
# Each thread's scheduling class, real-time priority, reset-on-fork, nice
# value, CPU affinity, timer slack (and its default) and parent-death
# signal come back: a four-thread program with a different set in each
# (SCHED_BATCH, SCHED_FIFO with reset-on-fork, SCHED_RR at nice -5...)
# checks its own every tick; a live checkpoint, then two --kill cycles;
# /proc shows the same per thread before and after.
. "$(dirname "$0")/lib.sh"
is_root || fail "real-time classes need root; t_tattrs_user is the unprivileged case"
[ "$(nproc)" -ge 2 ] || fail "this test needs two CPUs, this machine has $(nproc)"

# tstate PID: per thread: nice, rt priority, policy (stat 19, 40, 41),
# allowed CPUs and timer slack, as a user would look at them
tstate() {
	local t s f
	for t in "/proc/$1/task/"*; do
		read -r s <"$t/stat"
		s=${s##*) }
		read -r -a f <<<"$s"
		echo "${t##*/} nice ${f[16]} rtprio ${f[37]} policy ${f[38]}" \
			"cpus $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$t/status")" \
			"slack $(cat "/proc/${t##*/}/timerslack_ns")"
	done
}

start "$T/prog.out" "$PROGS/tattrs" root
pid=$PID
wait_line "$T/prog.out" '^tick 2 '
tstate "$pid" >"$T/state.before"
grep -q ' policy 1 ' "$T/state.before" && grep -q ' policy 2 ' "$T/state.before" &&
	grep -q ' policy 3 ' "$T/state.before" || fail "program did not set its classes up: $(cat "$T/state.before")"

checkpoint "$pid" "$T/live.ckpt"
now=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((now + 2)) "
tstate "$pid" >"$T/state.live"
diff "$T/state.before" "$T/state.live" >"$T/state.diff" ||
	fail "a live checkpoint changed them: $(cat "$T/state.diff")"

rpid=$pid
for cycle in 1 2; do
	checkpoint_kill "$rpid" "$T/img$cycle.ckpt"
	[ "$cycle" = 1 ] || wait "$LPID" 2>/dev/null || true	# the pid is free once reaped
	before=$(last_tick "$T/prog.out")
	restart "$T/img$cycle.ckpt"
	expect_pid "$pid" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 3)) "
	grep -q FAIL "$T/prog.out" && fail "cycle $cycle: $(grep FAIL "$T/prog.out")"
	tstate "$RPID" >"$T/state.after$cycle"
	diff "$T/state.before" "$T/state.after$cycle" >"$T/state.diff" ||
		fail "cycle $cycle: per-thread attributes changed: $(cat "$T/state.diff")"
	rpid=$RPID
done
kill "$RPID"
wait "$LPID" 2>/dev/null || true
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
assert_ticks_continuous "$T/prog.out"
exit 0
