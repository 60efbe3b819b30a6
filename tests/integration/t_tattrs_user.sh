#!/usr/bin/env bash
# The per-thread attributes of t_tattrs, as an ordinary user: a program
# run as nobody raises its threads' nice values, puts one in SCHED_BATCH
# and one in SCHED_IDLE, pins them to CPUs and sets their timer slack and
# parent-death signals; nobody checkpoints it and restores it, twice.
# A restorer at nice 10 may not lower a thread back to nice 3 (that needs
# CAP_SYS_NICE or RLIMIT_NICE): refused before anything is made, naming
# the thread; the next restore works.
. "$(dirname "$0")/lib.sh"
is_root || fail "this test drops from root to nobody; run it as root"
[ "$(nproc)" -ge 2 ] || fail "this test needs two CPUs, this machine has $(nproc)"
for_nobody

start "$T/prog.out" "$PROGS/runas" 65534 65534 "$PROGS/tattrs" user
pid=$PID
wait_line "$T/prog.out" '^tick 2 '
grep -q 'mode user' "$T/prog.out" || fail "program did not start in user mode"

rpid=$pid
for cycle in 1 2; do
	checkpoint_as_nobody "$rpid" "$T/img$cycle.ckpt" --kill
	[ "$cycle" != 1 ] || wait "$pid" 2>/dev/null || true
	[ "$cycle" = 1 ] || wait "$LPID" 2>/dev/null || true	# the pid is free once reaped
	before=$(last_tick "$T/prog.out")
	if [ "$cycle" = 1 ]; then
		restart_refused "$T/img1.ckpt" \
			"pid $pid thread $pid: its scheduling class (policy 0, priority 0, nice 3) needs CAP_SYS_NICE: a nice value below ours, beyond its RLIMIT_NICE" \
			as_nobody nice -n 10
		[ "$(last_tick "$T/prog.out")" = "$before" ] || fail "the refused restore ran the program"
	fi
	restart_as_nobody "$T/img$cycle.ckpt"
	wait_line "$T/prog.out" "^tick $((before + 3)) "
	grep -q FAIL "$T/prog.out" && fail "cycle $cycle: $(grep FAIL "$T/prog.out")"
	rpid=$RPID
done
grep -q "restored as pid " "$T/loader.out" || fail "the loader did not say the pid changed"
kill "$RPID"
wait "$LPID" 2>/dev/null || true
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
assert_ticks_continuous "$T/prog.out"
exit 0
