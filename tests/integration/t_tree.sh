#!/usr/bin/env bash
# saver --tree saves a process with its descendants: a parent and a worker
# talking through two pipes that hold unread data, and the worker's child,
# a zombie. After restart-loader the tree is the same (pids, parents,
# process groups under the root, the zombie still a zombie with its exit
# status), the bytes in the pipes arrive once and in order (the programs
# check every number), and everybody finishes well.
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/family" 40 100
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
worker=$(children_of "$pid")
zombie=$(children_of "$worker")
[ -n "$worker" ] && [ -n "$zombie" ] || fail "family did not start its worker and zombie"
grep -q '^State:.*Z' "/proc/$zombie/status" || fail "worker's child is not a zombie"
maps "$pid" >"$T/maps.root.before"
maps "$worker" >"$T/maps.worker.before"
checkpoint "$pid" "$T/img.ckpt" --tree --kill
grep -q "3 process(es)" "$T/info.out" || fail "the image does not hold the 3 processes"
grep -q "bytes in it" "$T/info.out" || fail "no pipe data saved: $(grep pipe "$T/info.out")"
wait "$pid" 2>/dev/null || true
# the killed worker and zombie go to init, which reaps them
for ((i = 0; i < 100; i++)); do
	[ -e "/proc/$worker" ] || [ -e "/proc/$zombie" ] || break
	sleep 0.05
done
before=$(last_tick "$T/prog.out")
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 1)) "
if is_root; then
	[ "$(children_of "$RPID")" = "$worker" ] || fail "worker $worker is not the restored parent's child"
	[ "$(children_of "$worker")" = "$zombie" ] || fail "zombie $zombie is not the worker's child"
	grep -q '^State:.*Z' "/proc/$zombie/status" || fail "the zombie came back alive"
	[ "$(awk '/^Name:/ {print $2}' "/proc/$zombie/status")" = family ] ||
		fail "the zombie is called $(awk '/^Name:/ {print $2}' "/proc/$zombie/status")"
	# under the root, process groups are as they were: the worker in the root's
	[ "$(pgid_of "$worker")" = "$(pgid_of "$RPID")" ] ||
		fail "the worker left its parent's process group"
	maps "$RPID" >"$T/maps.root.after"
	maps "$worker" >"$T/maps.worker.after"
fi
wait "$LPID" || fail "restored family exited with status $?"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "family did not finish"
assert_ticks_continuous "$T/prog.out"
# last: the checks above tell whether the processes work despite a difference
if is_root; then
	for p in root worker; do
		diff "$T/maps.$p.before" "$T/maps.$p.after" >"$T/maps.diff" ||
			fail "memory layout of the $p changed: $(cat "$T/maps.diff")"
	done
fi
exit 0
