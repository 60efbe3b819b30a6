#!/usr/bin/env bash
# An established loopback TCP connection with bytes queued both ways is
# taken over with TCP_REPAIR: after restart not a record is lost, doubled
# or out of order, and the connection goes on to the end, even when a
# connection in TIME_WAIT holds the listener's port by then. A checkpoint
# that leaves the processes running puts the connection back as it was.
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/tcppair" 60
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
child=$(children_of "$pid")
checkpoint "$pid" "$T/run.ckpt" --tree
wait_line "$T/prog.out" '^tick 10 '
checkpoint "$pid" "$T/img.ckpt" --tree --kill
# bytes are queued in the connection (56 bytes of addresses and 60 of
# TCP state are what an end without any holds)
grep -qE 'inet .*\(([2-9][0-9]{2}|[0-9]{4,}) bytes in it\)' "$T/info.out" ||
	fail "the connection holds no queued bytes: $(grep inet "$T/info.out")"
wait "$pid" 2>/dev/null || true
while [ -e "/proc/$child" ]; do sleep 0.05; done
# Someone else used the listener's port meanwhile, as the local port of
# a connection, and closed first: a connection in TIME_WAIT holds the
# port, refusing a plain bind. (Connections *to* the port would wait:
# the network lock holds new connections to the image's listeners.)
port=$(sed -n 's/.* listen 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$T/info.out" | head -n 1)
[ -n "$port" ] || fail "no listener in the image: $(grep inet "$T/info.out")"
python3 - "$port" <<'PY' || fail "could not leave a TIME_WAIT connection on port $port"
import socket, sys
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.socket(); c.bind(("127.0.0.1", int(sys.argv[1])))
c.connect(l.getsockname())
s, _ = l.accept(); c.close(); s.close(); l.close()
PY
ss -tan state time-wait "( sport = :$port )" | holds ":$port" ||
	fail "no TIME_WAIT connection on port $port to test with"
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out" | head -3)"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
exit 0
