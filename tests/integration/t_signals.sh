#!/usr/bin/env bash
# Signal state survives saver --kill and restart-loader: a SIGUSR2 sent
# while blocked is still pending after the restore and is delivered
# exactly once, with its sender's pid, when the program unblocks it; the
# SIGUSR1 handler still runs on its alternate stack; SIGHUP stays ignored;
# the blocked, ignored and caught sets are unchanged. Same pid and layout.
. "$(dirname "$0")/lib.sh"

# sigmask_line PID FIELD: the hex mask of FIELD (SigBlk, ShdPnd...) in status.
sigmask_line() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status"; }
# has_sig MASK SIGNO: the bit of SIGNO is set in the hex MASK.
has_sig() { (((16#$1 >> ($2 - 1)) & 1)); }
USR2=12

start "$T/prog.out" "$PROGS/signals" 80 100
pid=$PID
wait_line "$T/prog.out" '^tick 2 '
grep -q '^usr1 self-test on altstack' "$T/prog.out" || fail "program's altstack self-test did not run"

# SIGUSR2 while blocked: pending, in the process-wide queue.
kill -USR2 "$pid"
has_sig "$(sigmask_line "$pid" SigBlk)" $USR2 || fail "SIGUSR2 is not blocked before the checkpoint"
has_sig "$(sigmask_line "$pid" ShdPnd)" $USR2 || fail "SIGUSR2 is not pending before the checkpoint"
for f in SigBlk SigIgn SigCgt; do echo "$f $(sigmask_line "$pid" $f)"; done >"$T/sig.before"
maps "$pid" >"$T/maps.before"
checkpoint_kill "$pid" "$T/img.ckpt"
before=$(last_tick "$T/prog.out")

restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 2)) "
for f in SigBlk SigIgn SigCgt; do echo "$f $(sigmask_line "$RPID" $f)"; done >"$T/sig.after"
diff "$T/sig.before" "$T/sig.after" >"$T/sig.diff" || fail "signal masks changed: $(cat "$T/sig.diff")"
has_sig "$(sigmask_line "$RPID" ShdPnd)" $USR2 || fail "the pending SIGUSR2 was lost by the restore"
grep -q '^usr2 delivered' "$T/prog.out" && fail "SIGUSR2 was delivered before the program unblocked it"
maps "$RPID" >"$T/maps.after"

# Ignored: the process lives on and keeps ticking.
kill -HUP "$RPID"
now=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((now + 2)) "
kill -0 "$RPID" 2>/dev/null || fail "SIGHUP killed the restored process: SIG_IGN was lost"

# The go: SIGUSR1 on the altstack, then SIGUSR2 arrives, once, from us.
kill -USR1 "$RPID"
wait_line "$T/prog.out" "^usr1 1 altstack yes from pid $$\$" 10
wait_line "$T/prog.out" "^usr2 delivered count 1 code 0 pid $$ uid $(id -u)\$" 10
has_sig "$(sigmask_line "$RPID" ShdPnd)" $USR2 && fail "SIGUSR2 is still pending after delivery"

wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "program found its signal state changed: $(grep FAIL "$T/prog.out")"
grep -q "^DONE pid $RPID usr1 1 usr2 1\$" "$T/prog.out" ||
	fail "program did not finish with one SIGUSR1 and one SIGUSR2: $(grep DONE "$T/prog.out")"
[ "$(grep -c '^usr2 delivered' "$T/prog.out")" = 1 ] || fail "SIGUSR2 delivered more than once"
assert_ticks_continuous "$T/prog.out"
# last: the checks above tell whether the process works despite a difference
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "memory layout changed: $(cat "$T/maps.diff")"
exit 0
