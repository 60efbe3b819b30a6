#!/usr/bin/env bash
# Pipes and named pipes come back with every byte that was in them, once,
# in order, with their size and their ends (tests/progs/pipes.c checks
# from inside, after the restore): a full pipe reachable through two open
# file descriptions of each end (the loader once hung writing its bytes
# back twice), a grown and a shrunk pipe, named pipes with both ends, two
# of them, one opened read-write, one whose writer closed (EOF after the
# bytes), one open only for writing (a later reader gets the bytes); a
# named pipe gone at the restore is made again from a self-contained image.
# Each mode is run once without a checkpoint (the checks themselves
# pass), then saved with --kill and restored; the fifo modes also saved
# live (the process runs on and reads its bytes), then restored.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gate.sh"

for mode in full2 size fifo fifo-two fifo-rdwr fifo-reader fifo-writer; do
	RESTART_TIMEOUT=30 gate_mode pipes "$mode"
done
for mode in fifo fifo-reader; do
	RESTART_TIMEOUT=30 gate_mode pipes "$mode" live
done
for mode in full2 size fifo-rdwr fifo-writer; do
	gate_mode_nobody pipes "$mode"
done

# A self-contained image puts back a named pipe that is gone (a session
# directory in another host's /tmp): made again with its mode, the bytes
# that were in it come back; a plain image of it is refused.
mkdir "$T/selfc" && cd "$T/selfc"
start "$T/selfc/out" "$PROGS/pipes" fifo
pid=$PID
wait_line "$T/selfc/out" '^ready '
chmod 0640 f
checkpoint "$pid" "$T/selfc/plain.img"
checkpoint "$pid" "$T/selfc/img" --self-contained --kill
wait "$pid" 2>/dev/null || true
rm f
restart_refused "$T/selfc/plain.img" "open file $T/selfc/f: No such file or directory"
[ ! -e f ] || fail "the refused restore made the named pipe"
restart "$T/selfc/img"
[ -p f ] || fail "the named pipe was not made again"
[ "$(stat -c %a f)" = 640 ] || fail "the named pipe came back with mode $(stat -c %a f), not 640"
touch go
wait "$LPID" || fail "the restored program failed: $(tail -n 3 "$T/selfc/out")"
grep -q "^DONE pid $RPID" "$T/selfc/out" || fail "the restored program did not finish"
cd "$T"

# A named pipe that a process outside the image holds too: after --kill
# it would still hold the pipe, bytes and all, and the restore would
# join it. Refused, in one line naming pid, fd and cause; the process
# runs on and still reads its bytes.
mkdir "$T/outside" && cd "$T/outside"
start "$T/outside/out" "$PROGS/pipes" fifo
pid=$PID
wait_line "$T/outside/out" '^ready '
exec 7<>f	# the test shell: outside the image
saver_refuses "$T/outside/img" "pid $pid fd [0-9]+: named pipe \\($T/outside/f\\) leads to a process outside" --kill "$pid"
exec 7>&-
touch go
wait "$pid" || fail "the refused process did not run on: $(tail -n 2 "$T/outside/out")"
grep -q "^DONE pid $pid" "$T/outside/out" || fail "the refused process did not finish"
exit 0
