#!/usr/bin/env bash
# An unmodified memcached (worker threads, epoll) with a client sending
# `incr` over one connection, saved with --tree --kill and restarted 3 s
# later, then saved and restarted once more (a multi-threaded server:
# two cycles): every answer arrives, in order, no reset, and the stored
# value is the number of answers. A second client that connects while
# the server is away is not refused: its SYN waits in the network lock
# and it is served after the restore.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net.sh"

"$TOP/tools/deps.sh" pkg memcached nftables
port=$(net_port 3)
start "$T/mc.out" /usr/bin/memcached -u root -l 127.0.0.1 -p "$port" -U 0 -t 2 -vv
pid=$PID
wait_answer "$port" "version" '^VERSION '
"$PROGS/incrloop" memcached "$port" ctr 1500 5 >"$T/client.out" 2>&1 &
cpid=$!
STARTED+=("$cpid")
wait_line "$T/client.out" '^tick 5 '
checkpoint "$pid" "$T/img.ckpt" --tree --kill
wait "$pid" 2>/dev/null || true
grep -q 'repair 127.0.0.1:'"$port"' ->' "$T/info.out" ||
	fail "the client's connection is not in the image: $(grep inet "$T/info.out")"
table=$(lock_of "$T/img.ckpt")
[ -n "$table" ] || fail "the image names no network lock"
# a new connection while the server is away: held, not refused
(ask "$port" "version" >"$T/late.out" 2>&1) &
late=$!
sleep 3
grep -q FAIL "$T/client.out" && fail "while the server was away: $(grep FAIL "$T/client.out")"
kill -0 "$late" 2>/dev/null || fail "a connection while the server was away ended: $(cat "$T/late.out")"
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
# the second cycle, from the restored server, restarted at once
n=$(last_tick "$T/client.out")
wait_line "$T/client.out" "^tick $((n + 5)) "
lpid=$LPID
checkpoint "$pid" "$T/img2.ckpt" --tree --kill
wait "$lpid" 2>/dev/null || true
restart "$T/img2.ckpt"
expect_pid "$pid" "$RPID"
client_done "$cpid" "$T/client.out"
read -r _ acked _ last _ stall < <(grep '^acked ' "$T/client.out")
[ "$acked" = 1500 ] || fail "$acked answers, 1500 expected"
wait "$late" || fail "the connection made while the server was away failed: $(cat "$T/late.out")"
grep -q '^VERSION ' "$T/late.out" || fail "the late connection got '$(cat "$T/late.out")'"
exec 8<>"/dev/tcp/127.0.0.1/$port"
printf 'get ctr\r\n' >&8
read -r _ <&8
read -r value <&8
exec 8>&-
[ "${value%$'\r'}" = "$last" ] || fail "the stored value is ${value%$'\r'}, the client saw $last"
locks | holds -x "$table" && fail "the network lock $table is still there after the restore"
note "longest wait for an answer: $stall ms"
exit 0
