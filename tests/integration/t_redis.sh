#!/usr/bin/env bash
# An unmodified redis-server with a client sending INCR over one
# connection, one at a time: saved with --tree --kill and restarted 3 s
# later. The client sees every answer, each the previous plus one,
# without a reset or an end of the connection (while the server was away
# its requests were dropped by the network lock, and it sent them again);
# the server's counter then equals the number of answers; the lock is gone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net.sh"

"$TOP/tools/deps.sh" pkg redis-server nftables
port=$(net_port)
start "$T/redis.out" /usr/bin/redis-server --port "$port" --bind 127.0.0.1 --save '' \
	--appendonly no --dir "$T" --daemonize no
pid=$PID
wait_line "$T/redis.out" "Ready to accept connections"
"$PROGS/incrloop" redis "$port" ctr 900 5 >"$T/client.out" 2>&1 &
cpid=$!
STARTED+=("$cpid")
wait_line "$T/client.out" '^tick 5 '
checkpoint "$pid" "$T/img.ckpt" --tree --kill
wait "$pid" 2>/dev/null || true
grep -q 'repair 127.0.0.1:'"$port"' ->' "$T/info.out" ||
	fail "the client's connection is not in the image: $(grep inet "$T/info.out")"
grep -q 'option TCP_KEEPIDLE 300' "$T/info.out" ||
	fail "redis's TCP_KEEPIDLE 300 is not saved: $(grep -A8 repair "$T/info.out")"
table=$(lock_of "$T/img.ckpt")
[ -n "$table" ] || fail "the image names no network lock"
locks | holds -x "$table" || fail "no nftables table $table while the server is away"
before=$(last_tick "$T/client.out")
sleep 3	# the server is away for a while: the client must wait, not fail
grep -q FAIL "$T/client.out" && fail "while the server was away: $(grep FAIL "$T/client.out")"
[ "$(last_tick "$T/client.out")" = "$before" ] || fail "answers came while the server was away"
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
client_done "$cpid" "$T/client.out"
read -r _ acked _ last _ stall < <(grep '^acked ' "$T/client.out")
[ "$acked" = 900 ] || fail "$acked answers, 900 expected"
exec 8<>"/dev/tcp/127.0.0.1/$port"
printf 'GET ctr\r\n' >&8
read -r _ <&8
read -r value <&8
exec 8>&-
[ "${value%$'\r'}" = "$last" ] || fail "the server's counter is ${value%$'\r'}, the client saw $last"
locks | holds -x "$table" && fail "the network lock $table is still there after the restore"
note "longest wait for an answer: $stall ms"
exit 0
