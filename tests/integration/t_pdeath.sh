#!/usr/bin/env bash
# The parent-death signal works after a restore: a child that asked for
# SIGUSR1 when its parent dies (tests/progs/pdeath.c), saved with its
# parent (--tree --kill) and restarted, gets it when the restored parent
# is killed. A child forked by another thread than its parent's main one
# would come back forked by the main thread (and get the signal when
# that one exits, not its own): saver refuses it, naming it, and both
# run on.
. "$(dirname "$0")/lib.sh"

child_of() { sed -n 's/^forked child \([0-9]*\)$/\1/p' "$1" | tail -n 1; }

start "$T/prog.out" "$PROGS/pdeath" main
pid=$PID
wait_line "$T/prog.out" '^child tick 2 '
child=$(child_of "$T/prog.out")
STARTED+=("$child")	# it outlives its parent when the test fails
checkpoint "$pid" "$T/img.ckpt" --tree --kill
wait "$pid" 2>/dev/null || true
for ((i = 0; i < 200; i++)); do [ -e "/proc/$child" ] || break; sleep 0.05; done
grep -q 'child got the parent-death signal' "$T/prog.out" &&
	fail "the child got its signal before the restore: the test cannot tell"
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
n=$(sed -n 's/^child tick \([0-9]*\) .*/\1/p' "$T/prog.out" | tail -n 1)
wait_line "$T/prog.out" "^child tick $((n + 2)) "
kill -9 "$RPID"
wait_line "$T/prog.out" '^child got the parent-death signal$' 10
kill -9 "$child" 2>/dev/null || true
wait "$LPID" 2>/dev/null || true

start "$T/thread.out" "$PROGS/pdeath" thread
tpid=$PID
wait_line "$T/thread.out" '^child tick 2 '
tchild=$(child_of "$T/thread.out")
STARTED+=("$tchild")
"$SAVER" --tree --kill -o "$T/thread.ckpt" "$tpid" 2>"$T/saver.err" &&
	fail "saver took a child forked by a second thread, with a parent-death signal"
grep -q "pid $tchild: has a parent-death signal (10) and was forked by a thread of pid $tpid other than its main thread" "$T/saver.err" ||
	fail "the refusal does not name the child: $(cat "$T/saver.err")"
n=$(sed -n 's/^child tick \([0-9]*\) .*/\1/p' "$T/thread.out" | tail -n 1)
wait_line "$T/thread.out" "^child tick $((n + 2)) "
m=$(sed -n 's/^parent tick \([0-9]*\) .*/\1/p' "$T/thread.out" | tail -n 1)
wait_line "$T/thread.out" "^parent tick $((m + 2)) "
kill -9 "$tchild" 2>/dev/null || true
exit 0
