#!/usr/bin/env bash
# A saver killed with SIGKILL at any moment never harms its target
# (issue 19): 20 moments from 1 ms to the end of a 1 GiB save, the
# target keeps running with every word of its memory right (it checks
# them itself when asked, which also proves its signal mask was given
# back), is left traced by nobody and stopped by nobody, and has no
# child left of the saver's snapshot; no temporary image stays, none is
# left after the next saver run, and that run's image restores.
. "$(dirname "$0")/lib.sh"

# (64 MiB in the arm64 guest, and every third step of the sweeps: its
# memory and TCG's speed)
if [ "$(uname -m)" = aarch64 ]; then MB=${SAVERKILL_MB:-64} every=3; else MB=${SAVERKILL_MB:-1024} every=1; fi
start "$T/prog.out" "$PROGS/bigmem" "$MB" 20
pid=$PID
wait_line "$T/prog.out" '^tick 3 ' 60
checks=0

# verify WHEN [OUT]: the program (bigmem, writing to OUT) checks its
# memory and runs on
verify() {
	local out=${2:-$T/prog.out} n
	checks=$((checks + 1))
	kill -USR1 "$pid" || fail "$1: pid $pid is gone: $(tail -n 3 "$out")"
	for ((n = 0; n < 1200; n++)); do
		grep -qE "^verified $checks\$|^FAIL" "$out" && break
		kill -0 "$pid" 2>/dev/null && [ "$(stat_field "$pid" 3)" != Z ] ||
			fail "$1: pid $pid died: $(tail -n 2 "$out")"
		sleep 0.05
	done
	grep -q '^FAIL' "$out" && fail "$1: the program found: $(grep '^FAIL' "$out")"
	n=$(last_tick "$out")
	wait_line "$out" "^tick $((n + 2)) pid $pid\$" 20
}

saver() { saver_bg "$@"; }

# settled WHEN: the guardian is gone (the output closed), nobody traces
# pid, it is not stopped, it has no children, no temporary image is left
settled() {
	local tr left tmp
	wait "$CPID" || fail "$1: the saver's output was not closed within 30 s (a guardian stuck?)"
	tr=$(sed -n 's/^TracerPid:[[:space:]]*//p' /proc/"$pid"/task/*/status | sort -u)
	left=$(children_of "$pid")
	tmp=$(ls "$T" | grep '^img\.ckpt\.tmp\.' || true)
	[ "$tr" = 0 ] && [ -z "$left" ] && [ -z "$tmp" ] && [ "$(stat_field "$pid" 3)" != T ] ||
		fail "$1: once the saver and its guardian were gone: tracer(s) '$tr', children '$left' (states: $(for c in $left; do stat_field "$c" 3; done)), state $(stat_field "$pid" 3), temporary images '$tmp'"
}

# how long a whole save takes here, to spread the moments over it
t0=${EPOCHREALTIME/./}
"$SAVER" -o "$T/full.ckpt" "$pid" 2>"$T/saver.err" || fail "a whole save failed: $(cat "$T/saver.err")"
full_us=$((${EPOCHREALTIME/./} - t0))
rm -f "$T/full.ckpt"
note "a whole save of $MB MiB takes $((full_us / 1000)) ms"
verify "after a whole save"

# moment k of 20: 1 ms * (full/1 ms)^(k/19), geometric. In integers
# (busybox's awk has no ^): the ratio r, r^19 = full/1 ms, by bisection,
# scaled by 10^6.
geometric() {
	local f=$1 S=1000000 lo=1000000 hi=2000000 r p i m
	while ((hi - lo > 1)); do
		r=$(((lo + hi) / 2)) p=$S
		for ((i = 0; i < 19; i++)); do p=$((p * r / S)); done
		((p * 1000 <= f * S)) && lo=$r || hi=$r
	done
	m=1000
	for ((i = 0; i < 20; i++)); do printf '%d ' "$m"; m=$((m * lo / S)); done
}
moments=$(geometric "$full_us")
k=0
for us in $moments; do
	k=$((k + 1))
	saver "$T/saver$k.out" -o "$T/img.ckpt" "$pid"
	sleep "$(awk -v u="$us" 'BEGIN { printf "%.6f", u / 1e6 }')"
	kill -9 "$SPID" 2>/dev/null || true
	wait "$SPID" 2>/dev/null || true
	settled "moment $k ($((us / 1000)) ms)"
	verify "moment $k ($((us / 1000)) ms)"
	note "moment $k: killed at $((us / 1000)) ms: $(tr '\n' ' ' <"$T/saver$k.out")"
	rm -f "$T/img.ckpt"
done

# Every step of the injection, without timing: IBCR_SAVER_DIE=N makes
# the saver kill itself at the N-th step of its parked calls (three per
# call: parked, call swapped in, call done): the sigaction reads, each
# thread's own state, the snapshot's clone, the wait4 that reaps it.
# Every few steps, N going up until a saver gets through, on this
# process and on one with nine threads (which checks itself each tick).
# sweep PROG_OUT PID STRIDE
sweep() {
	local out=$1 p=$2 stride=$3 n=1 c=0 ok=
	while [ -z "$ok" ]; do
		IBCR_SAVER_DIE=$n saver "$T/die$n.out" -o "$T/img.ckpt" "$p"
		wait "$SPID" && ok=1
		settled "step $n"
		grep -q '^FAIL' "$out" && fail "step $n: the program found: $(grep '^FAIL' "$out")"
		c=$((c + 1))
		n=$((n + stride))
		((n < 5000)) || fail "no saver got through in 5000 steps"
	done
	rm -f "$T/img.ckpt"
	# a saver whose calls are not parked has no steps: the first gets through
	((c > 1)) || fail "IBCR_SAVER_DIE=1: the saver was not killed: its injected calls were not parked"
	note "$c savers killed at every ${stride}th step of their injections, up to step $n"
}
# (on smaller processes: the steps do not depend on the size)
opid=$pid ochecks=$checks
start "$T/small.out" "$PROGS/bigmem" 64 20
pid=$PID checks=0
wait_line "$T/small.out" '^tick 3 '
sweep "$T/small.out" "$pid" $((4 * every))
verify "after the step sweep" "$T/small.out"
start "$T/threads.out" "$PROGS/threads" 100000 50
pid=$PID
wait_line "$T/threads.out" '^tick 3 '
sweep "$T/threads.out" "$pid" $((5 * every))
n=$(last_tick "$T/threads.out")
wait_line "$T/threads.out" "^tick $((n + 3)) pid $pid( |\$)"
grep -q '^FAIL' "$T/threads.out" && fail "threads: $(grep '^FAIL' "$T/threads.out")"
pid=$opid checks=$ochecks

# the next saver run: complete, nothing temporary left beside it, and
# what it wrote restores into a process with the same memory
checkpoint "$pid" "$T/img.ckpt" --kill
wait "$pid" 2>/dev/null || true
[ -z "$(ls "$T" | grep '\.tmp\.' || true)" ] || fail "temporary files left: $(ls "$T" | grep '\.tmp\.')"
n=$(last_tick "$T/prog.out")
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((n + 2)) " 60
pid=$RPID
verify "after the restore"
exit 0
