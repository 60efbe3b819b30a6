#!/usr/bin/env bash
# saver without --kill leaves the process running (same pid, ticks go
# on, no child left of its snapshot) and its image restores once the
# original is gone; saver --stop
# leaves it stopped (state T, no ticks) until SIGCONT, and that image
# restores into a running process too. A saver killed while it writes
# leaves the process running alone and no image.
. "$(dirname "$0")/lib.sh"

state_of() { sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status"; }

# --- default: keep running
start "$T/prog.out" "$PROGS/counter" 100 50
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
maps "$pid" >"$T/maps.before"
checkpoint "$pid" "$T/run.ckpt"
saved=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((saved + 3)) "
kill -0 "$pid" 2>/dev/null || fail "process $pid is gone after saver without --kill"
[ "$(state_of "$pid")" != T ] || fail "process $pid was left stopped by saver without --stop"
[ "$(pids_in "$T/prog.out")" = "$pid" ] || fail "ticks from other pids: $(pids_in "$T/prog.out")"
# the snapshot was the process's child: gone, and reaped by it (a zombie
# left there could be what the program's own wait() returns)
left=$(children_of "$pid")
[ -z "$left" ] || fail "process $pid has children after the checkpoint: $left"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
killed=$(last_tick "$T/prog.out")
note "checkpointed after tick $saved, original killed after tick $killed"
restart "$T/run.ckpt"
expect_pid "$pid" "$RPID"
# only the restored process can write ticks past the original's last one
wait_line "$T/prog.out" "^tick $((killed + 2)) "
maps "$RPID" >"$T/maps.after"
wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "program found its memory changed: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
# stdout is a file: the restored process writes on from the checkpoint's
# offset over what the original wrote later, so the file reads 0, 1, 2...
assert_ticks_continuous "$T/prog.out"

# --- --stop: stopped until SIGCONT
start "$T/stop.out" "$PROGS/counter" 1000 50
pid=$PID
wait_line "$T/stop.out" '^tick 3 '
maps "$pid" >"$T/stop.maps.before"
checkpoint "$pid" "$T/stop.ckpt" --stop
# the stop takes effect as the saver detaches: give it a moment
for ((i = 0; i < 100; i++)); do
	[ "$(state_of "$pid")" = T ] && break
	sleep 0.02
done
[ "$(state_of "$pid")" = T ] || fail "process $pid is in state $(state_of "$pid") after saver --stop, not T (stopped)"
n=$(last_tick "$T/stop.out")
sleep 0.5	# a window in which a running counter ticks 10 times
[ "$(last_tick "$T/stop.out")" = "$n" ] || fail "process ticked while it should be stopped"
kill -CONT "$pid"
wait_line "$T/stop.out" "^tick $((n + 2)) pid $pid\$"
replace "$pid" "$T/stop.ckpt" "$T/stop.out"
[ "$(state_of "$RPID")" != T ] || fail "process restored from a --stop image is stopped"
maps "$RPID" >"$T/stop.maps.after"
grep -q FAIL "$T/stop.out" && fail "program found its memory changed: $(grep FAIL "$T/stop.out")"
kill -9 "$RPID"
wait "$LPID" 2>/dev/null || true
assert_ticks_continuous "$T/stop.out"
# --- the saver killed while it writes from the snapshot: the process runs
# on alone; the copy of it the saver was reading from never runs (it is
# killed with the saver, PTRACE_O_EXITKILL, and left a zombie of the
# process, which does not wait for children without exit signal) and no
# image is left that looks valid
start "$T/heap.out" "$PROGS/heap" 100000 50
pid=$PID
wait_line "$T/heap.out" '^tick 3 '
# zlib on 64 MiB: the writing takes long enough to be caught in it
"$SAVER" --compress=zlib -o "$T/heap.ckpt" "$pid" 2>"$T/saver.err" &
spid=$!
snap=
for ((i = 0; i < 2000; i++)); do
	snap=$(children_of "$pid" | head -n 1)
	[ -z "$snap" ] && kill -0 "$spid" 2>/dev/null || break
done
[ -n "$snap" ] || fail "saw no snapshot of $pid while the saver ran"
kill -9 "$spid"
wait "$spid" 2>/dev/null || true
for ((i = 0; i < 100; i++)); do
	[ "$(state_of "$snap" 2>/dev/null || echo Z)" = Z ] && break
	sleep 0.02
done
[ "$(state_of "$snap" 2>/dev/null || echo Z)" = Z ] ||
	fail "the snapshot $snap of $pid is in state $(state_of "$snap") after its saver died"
# killed (status 9), not dead of running on as a copy (it was SIGSEGV, 11)
code=$(stat_field "$snap" 52 || echo gone)
[ "$code" = 9 ] || [ "$code" = gone ] ||
	fail "the snapshot $snap of $pid ended with status $code, not killed (9) with its saver"
n=$(last_tick "$T/heap.out")
wait_line "$T/heap.out" "^tick $((n + 3)) "
[ "$(pids_in "$T/heap.out")" = "$pid" ] ||
	fail "ticks from other pids than $pid: $(pids_in "$T/heap.out")"
grep -q FAIL "$T/heap.out" && fail "program found its memory changed: $(grep FAIL "$T/heap.out")"
[ ! -e "$T/heap.ckpt" ] || fail "a killed saver left an image $T/heap.ckpt"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true

# last: the checks above tell whether the processes work despite a difference
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "memory layout changed: $(cat "$T/maps.diff")"
diff "$T/stop.maps.before" "$T/stop.maps.after" >"$T/maps.diff" ||
	fail "memory layout changed (--stop image): $(cat "$T/maps.diff")"
exit 0
