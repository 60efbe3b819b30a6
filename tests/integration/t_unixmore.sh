#!/usr/bin/env bash
# UNIX sockets come back exactly (issue 15): a non-blocking datagram
# socket bound to a path (kept or deleted) with datagrams waiting from
# named and unnamed senders; stream pairs shut down on one side or with
# one end closed and bytes pending; a listener with connections not
# accepted yet (refused when a client sent bytes already; and a socket
# whose directory was moved is refused); descriptors in flight (SCM_RIGHTS: the
# only write end of a pipe, a file with its offset, an eventfd);
# SCM_CREDENTIALS of a child. tests/progs/unixmore sets each up, is saved
# with --tree --kill and restarted, then checks it as a program would.
. "$(dirname "$0")/lib.sh"

problems=()
for mode in ${MODES:-dgram-bound dgram-deleted half-closed peer-closed pending rights creds}; do
	mkdir "$T/$mode"
	start "$T/$mode.out" "$PROGS/unixmore" "$mode" "$T/$mode" 20 50
	pid=$PID
	wait_line "$T/$mode.out" '^(ready|FAIL)'
	wait_line "$T/$mode.out" '^(tick 2 |FAIL)'
	if ! "$SAVER" --tree --kill -o "$T/$mode.ckpt" "$pid" 2>"$T/$mode.saver"; then
		problems+=("$mode: saver failed: $(cat "$T/$mode.saver")")
		kill_tree "$pid"
		continue
	fi
	wait "$pid" 2>/dev/null || true
	for p in $("$INFO" "$T/$mode.ckpt" | sed -n 's/^process [0-9]*: pid \([0-9]*\) .*/\1/p'); do
		while [ -e "/proc/$p" ]; do sleep 0.05; done
	done
	LOADER_OUT=$T/$mode.loader restart "$T/$mode.ckpt"
	st=0
	wait "$LPID" || st=$?
	grep -q '^DONE' "$T/$mode.out" && [ $st = 0 ] ||
		problems+=("$mode: status $st: $(grep FAIL "$T/$mode.out") $(cat "$T/$mode.loader")")
done
# a connection not accepted yet whose client sent bytes: only an accept
# could read them; refused, the program runs on unharmed
mkdir "$T/refused"
start "$T/refused.out" "$PROGS/unixmore" pending-data "$T/refused" 30 50
wait_line "$T/refused.out" '^tick 2 '
"$SAVER" --tree --kill -o "$T/refused.ckpt" "$PID" 2>"$T/refused.saver" &&
	problems+=("pending-data: saver succeeded")
grep -q "pid $PID fd 3: listening socket .*l.sock has a connection not accepted yet whose client has sent bytes" \
	"$T/refused.saver" || problems+=("pending-data: message: $(cat "$T/refused.saver")")
[ -e "$T/refused.ckpt" ] && problems+=("pending-data: an image was left")
wait "$PID" || problems+=("pending-data: the program failed after the refusal: $(grep FAIL "$T/refused.out")")
grep -q '^DONE' "$T/refused.out" || problems+=("pending-data: the program did not finish")
# a socket bound in a directory that was moved since: the restore could
# not bind its name; refused, the program runs on
mkdir "$T/moving"
start "$T/moving.out" "$PROGS/unixmore" dgram-bound "$T/moving" 60 50
wait_line "$T/moving.out" '^tick 2 '
mv "$T/moving" "$T/moved"
"$SAVER" --kill -o "$T/moving.ckpt" "$PID" 2>"$T/moving.saver" &&
	problems+=("moved: saver succeeded")
grep -q "pid $PID fd 3: UNIX socket bound to $T/moving/r.sock, whose directory is gone" \
	"$T/moving.saver" || problems+=("moved: message: $(cat "$T/moving.saver")")
[ -e "$T/moving.ckpt" ] && problems+=("moved: an image was left")
n=$(last_tick "$T/moving.out")
wait_line "$T/moving.out" "^(tick $((n + 3)) |FAIL)"
grep -q FAIL "$T/moving.out" && problems+=("moved: $(grep FAIL "$T/moving.out")")
kill_tree "$PID"
[ ${#problems[@]} = 0 ] || fail "$(printf '%s\n' "${problems[@]}")"
exit 0
