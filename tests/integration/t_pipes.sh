#!/usr/bin/env bash
# Pipes and named pipes come back with every byte that was in them, once,
# in order, with their size and their ends (tests/progs/pipes.c checks
# from inside, after the restore): a full pipe reachable through two open
# file descriptions of each end (the loader once hung writing its bytes
# back twice), a grown and a shrunk pipe, named pipes with both ends, two
# of them, one opened read-write, one whose writer closed (EOF after the
# bytes), one open only for writing (a later reader gets the bytes).
# Each mode is run once without a checkpoint (the checks themselves
# pass), then saved with --kill and restored; the fifo modes also saved
# live (the process runs on and reads its bytes), then restored.
. "$(dirname "$0")/lib.sh"

run_mode() {
	local mode=$1 live=${2:-} d="$T/$1${2:-}"
	mkdir "$d" "$d.plain"
	cd "$d.plain"
	start "$d.plain/out" "$PROGS/pipes" "$mode"
	wait_line "$d.plain/out" '^ready '
	touch go
	wait "$PID" || fail "$mode without a checkpoint: $(cat "$d.plain/out")"
	cd "$d"
	start "$d/out" "$PROGS/pipes" "$mode"
	pid=$PID
	wait_line "$d/out" '^ready '
	if [ -n "$live" ]; then
		checkpoint "$pid" "$d/img"
		touch go
		wait "$pid" || fail "$mode: the original failed after a live checkpoint: $(cat "$d/out")"
		grep -q "^DONE pid $pid" "$d/out" || fail "$mode: the original did not finish"
		rm go
	else
		checkpoint_kill "$pid" "$d/img"
	fi
	restart "$d/img"
	expect_pid "$pid" "$RPID"
	touch go
	wait "$LPID" || fail "$mode: restored program failed (status $?): $(tail -n 3 "$d/out")"
	grep -q "^DONE pid $RPID" "$d/out" || fail "$mode: the restored program did not finish: $(tail -n 3 "$d/out")"
	cd "$T"
}

for mode in full2 size fifo fifo-two fifo-rdwr fifo-reader fifo-writer; do
	RESTART_TIMEOUT=30 run_mode "$mode"
done
for mode in fifo fifo-reader; do
	RESTART_TIMEOUT=30 run_mode "$mode" live
done

# A named pipe that a process outside the image holds too: after --kill
# it would still hold the pipe, bytes and all, and the restore would
# join it. Refused, in one line naming pid, fd and cause; the process
# runs on and still reads its bytes.
mkdir "$T/outside" && cd "$T/outside"
start "$T/outside/out" "$PROGS/pipes" fifo
pid=$PID
wait_line "$T/outside/out" '^ready '
exec 7<>f	# the test shell: outside the image
st=0
"$SAVER" --kill -o "$T/outside/img" "$pid" 2>"$T/outside/err" || st=$?
exec 7>&-
[ $st = 1 ] || fail "saver accepted a named pipe held outside (status $st)"
[ "$(wc -l <"$T/outside/err")" = 1 ] || fail "not one line: $(cat "$T/outside/err")"
grep -qE "pid $pid fd [0-9]+: named pipe \($T/outside/f\) leads to a process outside" "$T/outside/err" ||
	fail "refusal does not name the named pipe: $(cat "$T/outside/err")"
[ ! -e "$T/outside/img" ] || fail "an image was left"
touch go
wait "$pid" || fail "the refused process did not run on: $(tail -n 2 "$T/outside/out")"
grep -q "^DONE pid $pid" "$T/outside/out" || fail "the refused process did not finish"
exit 0
