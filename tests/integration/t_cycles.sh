#!/usr/bin/env bash
# The counter program survives three checkpoint/restart cycles in a row
# (saver --kill, restart-loader, let it run, again): its ticks never
# repeat or skip, it keeps its pid (root) and its memory layout each
# time, and it finishes. The second restore fills memory without a
# userfaultfd (IBCR_NO_UFFD=1), as where the system refuses one.
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/counter" 100 50
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
maps "$pid" >"$T/maps.before"
cur=$pid
for cycle in 1 2 3; do
	checkpoint_kill "$cur" "$T/img$cycle.ckpt"
	# the previous restart-loader exits once its (killed) child is reaped:
	# only then is the pid free for the next restore
	[ "$cycle" = 1 ] || wait "$LPID" 2>/dev/null || true
	before=$(last_tick "$T/prog.out")
	[ "$cycle" = 2 ] && export IBCR_NO_UFFD=1
	restart "$T/img$cycle.ckpt"
	unset IBCR_NO_UFFD
	expect_pid "$pid" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 3)) "
	maps "$RPID" >"$T/maps.after$cycle"
	note "cycle $cycle: checkpointed after tick $before, continued as pid $RPID"
	cur=$RPID
done
wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "program found its memory changed: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
# last: the checks above tell whether the process works despite a difference
for cycle in 1 2 3; do
	diff "$T/maps.before" "$T/maps.after$cycle" >"$T/maps.diff" ||
		fail "memory layout changed in cycle $cycle: $(cat "$T/maps.diff")"
done
exit 0
