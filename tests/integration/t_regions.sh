#!/usr/bin/env bash
# A process with 30000 regions (tests/progs/regions.c) comes back with
# all of them, each with its protection and its page: restart-loader once
# aborted on it ("internal error: hole too small": the restore plan's
# budget was a few bytes short a region). Saved with --kill and live.
. "$(dirname "$0")/lib.sh"

for how in kill live; do
	mkdir "$T/$how" && cd "$T/$how"
	start "$T/$how/out" "$PROGS/regions" 30000
	pid=$PID
	wait_line "$T/$how/out" '^ready '
	if [ "$how" = live ]; then
		checkpoint "$pid" "$T/$how/img"
		kill -9 "$pid"
		wait "$pid" 2>/dev/null || true
	else
		checkpoint_kill "$pid" "$T/$how/img"
	fi
	restart "$T/$how/img"
	expect_pid "$pid" "$RPID"
	touch go
	wait "$LPID" || fail "$how: restored program failed (status $?): $(cat "$T/loader.out"; tail -n 2 "$T/$how/out")"
	grep -q "^DONE pid $RPID" "$T/$how/out" || fail "$how: restored program did not finish"
done
exit 0
