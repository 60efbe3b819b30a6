#!/usr/bin/env bash
# An IPv6 loopback connection with bytes queued both ways, across saver
# --tree --kill and a restart: the network lock holds it by its IPv6
# addresses (ip6 rules), and after the restart not a record is lost.
# And with --tcp-close the saver says it gives the connections up and
# takes no lock.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net.sh"

"$TOP/tools/deps.sh" pkg nftables
start "$T/prog.out" "$PROGS/tcppair" 60 6
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
child=$(children_of "$pid")
checkpoint "$pid" "$T/img.ckpt" --tree --kill
grep -q 'repair ::1:[0-9]* -> ::1:' "$T/info.out" || fail "no IPv6 connection in the image: $(grep inet "$T/info.out")"
table=$(lock_of "$T/img.ckpt")
nft list table inet "$table" | holds 'ip6 saddr ::1 tcp sport' || fail "the lock has no IPv6 rule: $(nft list table inet "$table")"
wait "$pid" 2>/dev/null || true
while [ -e "/proc/$child" ]; do sleep 0.05; done
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out" | head -3)"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
# --tcp-close: said, no lock
start "$T/close.out" "$PROGS/tcppair" 60 6
wait_line "$T/close.out" '^tick 3 '
checkpoint "$PID" "$T/close.ckpt" --tree --kill --tcp-close
grep -q 'saver: --tcp-close: 2 TCP connection(s) given up: a restore brings them back unconnected; their peers see them closed now' \
	"$T/saver.err" || fail "--tcp-close said: $(cat "$T/saver.err")"
[ -z "$(lock_of "$T/close.ckpt")" ] || fail "--tcp-close took a network lock"
exit 0
