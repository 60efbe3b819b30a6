#!/usr/bin/env bash
# A saver killed with SIGKILL while it takes TCP connections over or
# peeks at UNIX queues never harms them (issue 19): a loopback TCP pair
# exchanging checked records, a program whose UNIX stream and datagram
# queues are full (it checks every tick that their peek offset and
# credentials passing are its own, and its queues' first bytes), and,
# with --no-snapshot, a large process that makes the write (during which
# they stay stopped) last. The saver is killed at 12 moments of a whole
# save, with and without --no-snapshot, and, without timing, right after
# it put a connection into repair mode and in the middle of a UNIX queue
# (IBCR_SAVER_DIE_IN=tcp|unix). Every time: the connection goes on with
# every record right, no program sees an error, the network lock is
# gone; at the end the UNIX queues read whole from the start, byte for
# byte, and a saver run gets through. With --kill, killed before the
# kill: they run on, the lock removed; after it: the image restores the
# connection where it was (the guardian closed it in repair mode).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net.sh"

"$TOP/tools/deps.sh" pkg nftables
start "$T/pair.out" "$PROGS/tcppair" 1000000
pair=$PID
wait_line "$T/pair.out" '^tick 3 '
client=$(children_of "$pair")
[ -n "$client" ] || fail "tcppair has no client child"
start "$T/peek.out" "$PROGS/unixpeek" 2048
peek=$PID
wait_line "$T/peek.out" '^tick 1 '
start "$T/big.out" "$PROGS/bigmem" 384 20
big=$PID
wait_line "$T/big.out" '^tick 1 ' 60
verified=0

# unharmed WHEN: the saver's guardian is gone, its lock too, and both
# programs run on without a FAIL (the pair's records cross the connection)
unharmed() {
	local n f
	wait "$CPID" || fail "$1: the saver's output was not closed within 30 s"
	! locks | holds "^ibcr-$SPID-" || fail "$1: the killed saver's network lock is left"
	n=$(last_tick "$T/pair.out")
	wait_line "$T/pair.out" "^tick $((n + 3)) |^FAIL" 30
	n=$(last_tick "$T/peek.out")
	wait_line "$T/peek.out" "^tick $((n + 2)) |^FAIL" 30
	for f in pair peek; do
		! grep -q '^FAIL' "$T/$f.out" || fail "$1: $f: $(grep -m 1 '^FAIL' "$T/$f.out")"
	done
	kill -0 "$client" 2>/dev/null || fail "$1: the TCP client $client died"
}

# killed_at WHEN US ARGS...: a saver killed US microseconds after its start
killed_at() {
	local what=$1 us=$2
	shift 2
	saver_bg "$T/saver.out" -o "$T/img.ckpt" "$@"
	sleep "$(awk -v u="$us" 'BEGIN { printf "%.6f", u / 1e6 }')"
	kill -9 "$SPID" 2>/dev/null || true
	wait "$SPID" 2>/dev/null || true
	unharmed "$what"
	rm -f "$T/img.ckpt"
}

# All on one CPU: the killed saver's tracees and its guardian compete
# for it, as on a loaded machine (there, unheld threads ran before the
# guardian could turn repair mode off, every time).
cpu=$(taskset -c -p $$ | sed 's/.*: //; s/[,-].*//')
for p in "$pair" "$client" "$peek" "$big"; do
	taskset -a -c -p "$cpu" "$p" >/dev/null || fail "taskset $p"
done
taskset -c -p "$cpu" $$ >/dev/null || fail "taskset $$"	# the savers, their guardians

# die_in AT ARGS...: a saver that kills itself at AT (IBCR_SAVER_DIE_IN)
die_in() {
	local at=$1 st=0
	shift
	IBCR_SAVER_DIE_IN=$at saver_bg "$T/saver.out" -o "$T/img.ckpt" "$@"
	wait "$SPID" || st=$?
	[ $st = 137 ] || fail "IBCR_SAVER_DIE_IN=$at: the saver ended with status $st, not killed: $(cat "$T/saver.out")"
}

for mode in snapshot no-snapshot; do
	args=("$pair" "$client" "$peek")
	[ $mode = snapshot ] || args=(--no-snapshot "${args[@]}" "$big")
	t0=${EPOCHREALTIME/./}
	saver_bg "$T/full.out" -o "$T/full.ckpt" "${args[@]}"
	wait "$SPID" || fail "a whole save ($mode) failed: $(cat "$T/full.out")"
	full_us=$((${EPOCHREALTIME/./} - t0))
	rm -f "$T/full.ckpt"
	unharmed "after a whole save ($mode)"
	note "a whole save ($mode) takes $((full_us / 1000)) ms"
	for at in tcp tcp tcp tcp tcp unix; do
		die_in "$at" "${args[@]}"
		unharmed "killed in $at ($mode)"
		grep -q "died during its checkpoint" "$T/saver.out" ||
			fail "killed in $at ($mode): the guardian said: $(cat "$T/saver.out")"
		note "killed in $at ($mode): $(tr '\n' ' ' <"$T/saver.out")"
		rm -f "$T/img.ckpt"
	done
	# 12 moments, 1 ms to the whole save's time, geometric
	k=0
	for us in $(awk -v f="$full_us" 'BEGIN { for (k = 0; k < 12; k++) printf "%d ", 1000 * (f / 1000) ^ (k / 11) }'); do
		k=$((k + 1))
		killed_at "$mode, moment $k ($((us / 1000)) ms)" "$us" "${args[@]}"
		note "$mode, moment $k ($((us / 1000)) ms): $(tr '\n' ' ' <"$T/saver.out")"
	done
	# the UNIX queues, read whole from their start
	verified=$((verified + 1))
	kill -USR1 "$peek"
	wait_line "$T/peek.out" "^verified $verified\$|^FAIL" 30
	! grep -q '^FAIL' "$T/peek.out" || fail "$mode: unixpeek: $(grep -m 1 '^FAIL' "$T/peek.out")"
done

# --kill, the saver killed once the image is complete but before the
# kill: the processes run on, their network lock removed
die_in kill --kill "$pair" "$client" "$peek"
unharmed "killed before its kill (--kill)"
grep -q "the network lock ibcr-$SPID-[0-9]* removed" "$T/saver.out" ||
	fail "killed before its kill: the guardian said: $(cat "$T/saver.out")"
rm -f "$T/img.ckpt"

# and once they were killed: the connection, closed in repair mode by
# the guardian, is restored where it was, the queues with it
die_in killed --kill "$pair" "$client" "$peek"
wait "$CPID" || fail "killed after its kill: the saver's output was not closed"
grep -q "died once its processes were killed: the image's TCP connections closed in repair mode" "$T/saver.out" ||
	fail "killed after its kill: the guardian said: $(cat "$T/saver.out")"
for p in "$pair" "$client" "$peek"; do
	while [ -e "/proc/$p" ] && [ "$(stat_field "$p" 3)" != Z ]; do sleep 0.05; done
done
wait "$pair" "$peek" 2>/dev/null || true
n=$(last_tick "$T/pair.out")
restart "$T/img.ckpt"
expect_pid "$pair" "$RPID"
wait_line "$T/pair.out" "^tick $((n + 3)) |^FAIL" 60
n=$(last_tick "$T/peek.out")
wait_line "$T/peek.out" "^tick $((n + 2)) |^FAIL" 30
verified=$((verified + 1))
kill -USR1 "$peek"
wait_line "$T/peek.out" "^verified $verified\$|^FAIL" 30
for f in pair peek; do
	! grep -q '^FAIL' "$T/$f.out" || fail "restored: $f: $(grep -m 1 '^FAIL' "$T/$f.out")"
done
! locks | holds "^ibcr-$SPID-" || fail "the restore left the network lock"
rm -f "$T/img.ckpt"

# and a saver that is let be gets through, the programs unharmed
saver_bg "$T/saver.out" -o "$T/img.ckpt" "$pair" "$client" "$peek"
wait "$SPID" || fail "the last saver failed: $(cat "$T/saver.out")"
unharmed "after the last save"
[ -s "$T/img.ckpt" ] || fail "the last saver left no image"
exit 0
