#!/usr/bin/env bash
# /bin/bash -c running a loop of builtins only (no child process) continues
# after saver --kill and restart-loader: its variables hold on (it checks
# sq == i*i), ticks go on, same pid and memory layout, and it finishes.
. "$(dirname "$0")/lib.sh"

# a tick every 20000 iterations: about 10 a second
start "$T/prog.out" /bin/bash -c '
n=0 i=0 sq=0
while ((n < 60)); do
	((i++, sq += 2 * i - 1))
	if ((i % 20000 == 0)); then
		((sq == i * i)) || { echo "FAIL sq $sq for i $i"; exit 1; }
		echo "tick $n pid $$"
		((n++))
	fi
done
echo "DONE pid $$"
'
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
maps "$pid" >"$T/maps.before"
checkpoint_kill "$pid" "$T/img.ckpt"
before=$(last_tick "$T/prog.out")
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 3)) "
maps "$RPID" >"$T/maps.after"
wait "$LPID" || fail "restored bash exited with status $?"
grep -q FAIL "$T/prog.out" && fail "bash found its variables changed: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "bash did not finish"
assert_ticks_continuous "$T/prog.out"
# last: the checks above tell whether the process works despite a difference
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "memory layout changed: $(cat "$T/maps.diff")"
exit 0
