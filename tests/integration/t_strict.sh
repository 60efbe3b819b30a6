#!/usr/bin/env bash
# Seccomp strict mode: a worker thread in strict mode (only read, write,
# _exit and rt_sigreturn allowed; any other call kills it) next to a main
# thread that is not (tests/progs/strict.c). A checkpoint runs nothing
# inside a strict thread unprotected (once that killed it): after a live
# checkpoint it runs on; after each of two checkpoint (--kill) and
# restart cycles the worker is in strict mode again and still dies of the
# forbidden call it makes at the end, which the program reports. An
# ordinary user's saver cannot protect it: it refuses, naming the pid,
# the thread and strict mode, and the process runs on unharmed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/priv.sh"
is_root || fail "this test needs root (PTRACE_O_SUSPEND_SECCOMP) and drops to nobody; run it as root"

modes_of() {
	local t
	for t in "/proc/$1/task/"*; do grep '^Seccomp:' "$t/status"; done
}

start "$T/prog.out" "$PROGS/strict" 80 100
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
modes_of "$pid" >"$T/state.before"
[ "$(sort "$T/state.before" | tr -d '\t ' | tr '\n' ' ')" = "Seccomp:0 Seccomp:1 " ] ||
	fail "expected one thread in strict mode: $(cat "$T/state.before")"

checkpoint "$pid" "$T/img0.ckpt"
before=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((before + 3)) "
grep FAIL "$T/prog.out" && fail "the live checkpoint harmed the process"
grep -q 'seccomp: strict' "$T/info.out" ||
	fail "ckpt-info does not show strict mode: $(grep -i seccomp "$T/info.out")"

two_cycles modes_of --kill
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q '^DONE .* strict held' "$T/prog.out" || fail "program did not finish with strict mode held"
assert_ticks_continuous "$T/prog.out"

# An ordinary user's saver: refused, the process unharmed.
REFUSAL=" thread [0-9]+: .*strict" DONE='^DONE .* strict held' saver_refuses_nobody "$PROGS/strict" 30 50
exit 0
