#!/usr/bin/env bash
# Eight threads caught in different states (computing, in futex waits on a
# condvar, in nanosleep, in sigwaitinfo) all continue after saver --kill
# and restart-loader: each keeps advancing (the program checks every
# tick), the data they share under a mutex stays consistent, no queued
# signal is lost or repeated, and the process keeps its pid, its thread
# ids (root) and its memory layout.
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/threads" 60 100
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
ls "/proc/$pid/task" >"$T/tids.before"
[ "$(wc -l <"$T/tids.before")" = 9 ] || fail "expected 9 threads, /proc/$pid/task has: $(cat "$T/tids.before")"
maps "$pid" >"$T/maps.before"
checkpoint_kill "$pid" "$T/img.ckpt"
before=$(last_tick "$T/prog.out")
# the program calls a thread stuck after 20 ticks without progress: that
# many must follow the restore
((60 - before > 25)) || fail "checkpointed after tick $before: too late to see a thread stuck"

# The image shows where each thread was (ckpt-info: "tid N NAME pc .. sp ..
# [in syscall NR]"): proof that the checkpoint caught the states this test
# is about. x86_64: 202 futex, 230 clock_nanosleep.
thread_line() { grep -E "^ +tid [0-9]+ +$1 " "$T/info.out" || true; }
grep -q '^  threads: 9$' "$T/info.out" || fail "image does not hold 9 threads: $(grep threads: "$T/info.out")"
thread_line 'compute[01]' | grep -vq 'in syscall' ||
	fail "no compute thread was caught running: $(thread_line 'compute[01]')"
thread_line 'condwait[01]' | grep -q 'in syscall 202$' ||
	fail "no condwait thread was caught in futex wait: $(thread_line 'condwait[01]')"
thread_line 'sleep[01]' | grep -q 'in syscall 230$' ||
	fail "no sleep thread was caught in nanosleep: $(thread_line 'sleep[01]')"

restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 3)) "
ls "/proc/$RPID/task" >"$T/tids.after"
if is_root; then
	diff "$T/tids.before" "$T/tids.after" >"$T/tids.diff" ||
		fail "thread ids changed: $(cat "$T/tids.diff")"
else
	[ "$(wc -l <"$T/tids.after")" = 9 ] || fail "restored process has threads: $(cat "$T/tids.after")"
fi
maps "$RPID" >"$T/maps.after"
wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "program found a thread or its data wrong: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
# Caught in sigwaitinfo: either the image has it in rt_sigtimedwait (128),
# or, as signal(7) allows after a stop, the call returned EINTR, which the
# restored thread then saw (and said).
thread_line sigwait | grep -q 'in syscall 128$' || grep -q '^sigwait interrupted' "$T/prog.out" ||
	fail "the sigwait thread was not caught in sigwaitinfo: $(thread_line sigwait)"
assert_ticks_continuous "$T/prog.out"
# last: the checks above tell whether the process works despite a difference
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "memory layout changed: $(cat "$T/maps.diff")"
exit 0
