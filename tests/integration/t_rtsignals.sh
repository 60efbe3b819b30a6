#!/usr/bin/env bash
# Pending signals keep their order and values across checkpoints: a
# two-thread program with real-time signals queued with values (several
# of one number, process-wide and to its second thread) and standard
# signals pending beside them, all blocked, is checkpointed live, then
# twice with --kill and restarted; they stay pending, undelivered, and
# when the program unblocks them they arrive in the order and with the
# values, codes, sender pid and uid the sender gave (the program checks).
. "$(dirname "$0")/lib.sh"

# sigmask PID FIELD: the hex mask of FIELD (SigPnd, ShdPnd, SigBlk) in status.
sigmask() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status"; }
# pending_state PID: what /proc shows of the pending and blocked signals
pending_state() {
	local t
	for t in "/proc/$1/task/"*; do
		echo "$(sed -n 's/^Name:[[:space:]]*//p' "$t/status") $(sigmask "$1/task/${t##*/}" SigPnd) $(sigmask "$1/task/${t##*/}" ShdPnd) $(sigmask "$1/task/${t##*/}" SigBlk)"
	done
}

start "$T/prog.out" "$PROGS/rtsig" 5 100
pid=$PID
wait_line "$T/prog.out" '^tick 1 '
pending_state "$pid" >"$T/pending.before"
grep -q " 0000000a00000800 0000000600000200 0000000e00000a00$" "$T/pending.before" ||
	fail "the worker's signals are not pending as sent: $(cat "$T/pending.before")"

# live: it runs on with the same signals pending
checkpoint "$pid" "$T/live.ckpt"
now=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((now + 2)) "
pending_state "$pid" >"$T/pending.live"
diff "$T/pending.before" "$T/pending.live" >"$T/pending.diff" ||
	fail "pending signals changed by a live checkpoint: $(cat "$T/pending.diff")"

rpid=$pid
for cycle in 1 2; do
	checkpoint_kill "$rpid" "$T/img$cycle.ckpt"
	# the previous restart-loader exits once its killed child is reaped:
	# only then is the pid free again
	[ "$cycle" = 1 ] || wait "$LPID" 2>/dev/null || true
	grep -qE "^    tid [0-9]+ .* 4 pending" "$T/info.out" ||
		fail "cycle $cycle: the image does not hold the worker's 4 pending signals: $(grep tid "$T/info.out")"
	before=$(last_tick "$T/prog.out")
	restart "$T/img$cycle.ckpt"
	expect_pid "$pid" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 2)) "
	pending_state "$RPID" >"$T/pending.after$cycle"
	diff "$T/pending.before" "$T/pending.after$cycle" >"$T/pending.diff" ||
		fail "cycle $cycle: pending signals changed: $(cat "$T/pending.diff")"
	grep -q FAIL "$T/prog.out" && fail "cycle $cycle: $(grep FAIL "$T/prog.out")"
	rpid=$RPID
done

kill -WINCH "$RPID"
wait_line "$T/prog.out" '^ORDER OK$' 10
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
exit 0
