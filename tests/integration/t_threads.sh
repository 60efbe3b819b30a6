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

# The image shows where each thread was: proof that the checkpoint caught
# the states this test is about. imgtool names the system call a thread
# was in or had just returned from (a sigwaitinfo may have returned EINTR
# or a signal as it stopped); ckpt-info prints "in syscall NR" for one it
# will re-execute, nothing for a thread running its own code.
# nanosleep is clock_nanosleep in glibc, nanosleep itself in musl (which
# the aarch64 build uses); sigwaitinfo is rt_sigtimedwait in both.
case $(uname -m) in
x86_64) NR_FUTEX=202 NR_NANOSLEEP="230 35" NR_SIGWAIT=128 ;;
aarch64) NR_FUTEX=98 NR_NANOSLEEP="115 101" NR_SIGWAIT=137 ;;
*) fail "no system call numbers for $(uname -m)" ;;
esac
grep -q '^  threads: 9$' "$T/info.out" || fail "image does not hold 9 threads: $(grep threads: "$T/info.out")"
thread_line() { grep -E "^ +tid [0-9]+ +$1 " "$T/info.out" || true; }
nr_of() { "$PROGS/imgtool" syscall "$T/img.ckpt" "$1"; }
# caught "NR..." NAME...: one of the threads NAME... was in one of the
# system calls NR...
caught() {
	local nrs=" $1 " name
	shift
	for name in "$@"; do [[ $nrs == *" $(nr_of "$name") "* ]] && return 0; done
	return 1
}
thread_line 'compute[01]' | grep -vq 'in syscall' ||
	fail "no compute thread was caught running: $(thread_line 'compute[01]')"
# x86_64 says for sure (orig_rax); aarch64's x8 may be stale
[ "$(uname -m)" != x86_64 ] || caught -1 compute0 compute1 ||
	fail "no compute thread was caught running its own code: $(nr_of compute0), $(nr_of compute1)"
caught $NR_FUTEX condwait0 condwait1 ||
	fail "no condwait thread was caught in futex wait: system calls $(nr_of condwait0), $(nr_of condwait1): $(thread_line 'condwait[01]')"
caught "$NR_NANOSLEEP" sleep0 sleep1 ||
	fail "no sleep thread was caught in nanosleep: system calls $(nr_of sleep0), $(nr_of sleep1): $(thread_line 'sleep[01]')"
caught $NR_SIGWAIT sigwait ||
	fail "the sigwait thread was not caught in sigwaitinfo: system call $(nr_of sigwait)"

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
assert_ticks_continuous "$T/prog.out"
# last: the checks above tell whether the process works despite a difference
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "memory layout changed: $(cat "$T/maps.diff")"
exit 0
