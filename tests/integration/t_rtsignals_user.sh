#!/usr/bin/env bash
# The pending signals of t_rtsignals, as an ordinary user: nobody
# checkpoints (--kill) and restores, twice, the two-thread program with
# its blocked real-time and standard signals; on the go it finds them in
# order with their values (the sender was nobody too).
. "$(dirname "$0")/lib.sh"
is_root || fail "this test drops from root to nobody; run it as root"
for_nobody

start "$T/prog.out" "$PROGS/runas" 65534 65534 "$PROGS/rtsig" 5 100
pid=$PID
wait_line "$T/prog.out" '^tick 1 '
rpid=$pid
for cycle in 1 2; do
	checkpoint_as_nobody "$rpid" "$T/img$cycle.ckpt" --kill
	[ "$cycle" != 1 ] || wait "$pid" 2>/dev/null || true
	[ "$cycle" = 1 ] || wait "$LPID" 2>/dev/null || true	# the pid is free once reaped
	before=$(last_tick "$T/prog.out")
	restart_as_nobody "$T/img$cycle.ckpt"
	wait_line "$T/prog.out" "^tick $((before + 2)) "
	grep -q FAIL "$T/prog.out" && fail "cycle $cycle: $(grep FAIL "$T/prog.out")"
	rpid=$RPID
done
kill -WINCH "$RPID"
wait_line "$T/prog.out" '^ORDER OK$' 10
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
exit 0
