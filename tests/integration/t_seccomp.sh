#!/usr/bin/env bash
# Seccomp filters come back as the kernel had them: a process whose main
# thread installed a filter, forked a child (which added its own, with
# SECCOMP_FILTER_FLAG_LOG), started two threads and installed a second
# filter with TSYNC, one thread adding a third of its own (tests/progs/
# seccomp.c), checks after a live checkpoint and after each of two
# checkpoint (--tree --kill) and restart cycles which calls fail with
# which errno in every thread of both processes; at its end a TSYNC
# proves that the threads share their filters (not copies). Its filters
# kill it on a call the saver makes inside it and refuse every munmap
# (the loader removes its restore area with one): neither may stop the
# checkpoint or the restore, nor harm the process. /proc shows the same
# seccomp state and the same memory layout afterwards. An ordinary user's
# saver cannot read filters: it refuses, naming the pid, and the process
# runs on unharmed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/priv.sh"
is_root || fail "this test needs root (reading seccomp filters) and drops to nobody; run it as root"

# seccomp_of PID: each thread's seccomp state, the child's too (in the
# same order each time), and the layout of PID's memory (the restore area
# must be gone, though the filters refuse every munmap)
seccomp_of() {
	local p t
	for p in "$1" $(children_of "$1"); do
		for t in "/proc/$p/task/"*; do
			echo "thread ${t##*/}"
			grep -E '^(Seccomp|Seccomp_filters|NoNewPrivs):' "$t/status"
		done
	done
	maps "$1"
}

start "$T/prog.out" "$PROGS/seccomp" 120 100
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
wait_line "$T/prog.out" '^child tick 3$'
seccomp_of "$pid" >"$T/state.before"
[ "$(grep -c 'Seccomp_filters:.*[1-9]' "$T/state.before")" = 4 ] ||
	fail "expected 4 threads under filters: $(cat "$T/state.before")"

# live: the process runs on, unharmed by what the saver did inside it
checkpoint "$pid" "$T/img0.ckpt" --tree
before=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((before + 3)) "
kill -0 "$pid" || fail "the process died of the live checkpoint"
grep FAIL "$T/prog.out" && fail "the live checkpoint changed the process"
grep -q 'seccomp: 3 filters' "$T/info.out" ||
	fail "ckpt-info shows no filters: $(grep -i seccomp "$T/info.out")"

two_cycles seccomp_of --tree --kill
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"

# An ordinary user's saver: refused, the process unharmed.
REFUSAL="( thread [0-9]+)?: .*seccomp" DONE='^DONE' saver_refuses_nobody "$PROGS/seccomp" 30 50
exit 0
