#!/usr/bin/env bash
# A loopback TCP connection with megabytes waiting in both queues (the
# writer blocked, the reader not reading yet) is saved whole with --tree
# --kill: the image holds the bytes, and after the restart the reader
# gets every one of the 16 MiB, in order.
. "$(dirname "$0")/lib.sh"

"$TOP/tools/deps.sh" pkg nftables
# the reader's buffer fixed at 6 MiB: megabytes wait on both sides
start "$T/prog.out" "$PROGS/tcpbulk" 16 40 100 $((6 << 20))
pid=$PID
wait_line "$T/prog.out" '^full at '
wait_line "$T/prog.out" '^tick 10 '
checkpoint "$pid" "$T/img.ckpt" --tree --kill
queued=$(sed -n 's/.* repair .*(\([0-9]*\) bytes in it).*/\1/p' "$T/info.out" |
	awk '{ n += $1 } END { print n + 0 }')
[ "$queued" -gt $((2 << 20)) ] || fail "only $queued bytes queued in the connection's image"
sed -n 's/.* repair .*(\([0-9]*\) bytes in it).*/\1/p' "$T/info.out" | while read -r n; do
	[ "$n" -gt $((1 << 20)) ] || fail "a side of the connection holds only $n bytes"
done
note "$queued bytes in the connection's queues"
wait "$pid" 2>/dev/null || true
for p in $(sed -n 's/^process [0-9]*: pid \([0-9]*\) .*/\1/p' "$T/info.out"); do
	while [ -e "/proc/$p" ]; do sleep 0.05; done
done
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
grep -q '^DONE 16777216 bytes' "$T/prog.out" || fail "program did not finish: $(tail -2 "$T/prog.out")"
assert_ticks_continuous "$T/prog.out"
exit 0
