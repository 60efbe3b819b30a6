#!/usr/bin/env bash
# A process stopped by SIGTSTP (Ctrl-Z) comes back stopped by SIGTSTP,
# not SIGSTOP: its parent (tests/progs/jobctl.c, which waits for it with
# WUNTRACED as a shell does) sees "stopped by 20" after the restore, the
# child does not run until SIGCONT, then goes on. A live checkpoint
# leaves it stopped, and the image says which signal stopped it.
. "$(dirname "$0")/lib.sh"
TSTP=$(kill -l TSTP)

# state PID: the state letter of /proc/PID/stat
state() { stat_field "$1" 3; }

start "$T/prog.out" "$PROGS/jobctl"
pid=$PID
wait_line "$T/prog.out" '^child tick 2 '
child=$(sed -n 's/^parent pid [0-9]* child \([0-9]*\)$/\1/p' "$T/prog.out")
kill -TSTP "$child"
wait_line "$T/prog.out" "^child stopped by $TSTP\$" 10
[ "$(state "$child")" = T ] || fail "child is not stopped: state $(state "$child")"

checkpoint "$pid" "$T/live.ckpt" --tree
[ "$(state "$child")" = T ] || fail "a live checkpoint let the child run: state $(state "$child")"
grep -q "^  stopped by signal $TSTP\$" "$T/info.out" ||
	fail "the image does not say SIGTSTP stopped it: $(grep -A1 'attrs:' "$T/info.out")"

checkpoint "$pid" "$T/img.ckpt" --tree --kill
wait "$pid" 2>/dev/null || true
# the child is reaped by whoever inherits it: then its pid is free
for ((i = 0; i < 200; i++)); do [ -e "/proc/$child" ] || break; sleep 0.05; done
stops=$(grep -c '^child stopped by' "$T/prog.out")
ticks=$(grep -c '^child tick' "$T/prog.out")
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
# the restore stops it again, by the same signal: its parent sees it
for ((i = 0; i < 200; i++)); do
	[ "$(grep -c '^child stopped by' "$T/prog.out")" -gt "$stops" ] && break
	sleep 0.05
done
[ "$(grep -c '^child stopped by' "$T/prog.out")" -gt "$stops" ] ||
	fail "the parent saw no stop after the restore"
last=$(grep '^child stopped by' "$T/prog.out" | tail -n 1)
[ "$last" = "child stopped by $TSTP" ] || fail "after the restore: '$last', not 'child stopped by $TSTP'"
[ "$(state "$child")" = T ] || fail "restored child is not stopped: state $(state "$child")"
[ "$(grep -c '^child tick' "$T/prog.out")" = "$ticks" ] || fail "the stopped child ran after the restore"

kill -CONT "$child"
wait_line "$T/prog.out" '^child continued$' 10
n=$(sed -n 's/^child tick \([0-9]*\) .*/\1/p' "$T/prog.out" | tail -n 1)
wait_line "$T/prog.out" "^child tick $((n + 2)) "
kill "$child"
wait_line "$T/prog.out" '^child exited ' 10
wait "$LPID" || fail "restored parent exited with status $?"
exit 0
