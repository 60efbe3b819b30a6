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
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "memory layout changed: $(cat "$T/maps.diff")"
wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "program found a thread or its data wrong: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
# sigwaitinfo returns EINTR once when a stop (here: the checkpoint) caught
# the thread waiting, as signal(7) says; the restored thread saw that.
grep -q '^sigwait interrupted' "$T/prog.out" ||
	fail "the sigwait thread was not caught in sigwaitinfo (no EINTR after restart)"
assert_ticks_continuous "$T/prog.out"
exit 0
