#!/usr/bin/env bash
# redis-server holding ~400 MB, so that saver --kill writes its image for
# a good fraction of a second, with a client sending an INCR every 2 ms
# and a second connection (the test's own) on which a request is sent
# while the image is being written: the network lock drops it (its
# counters show it), so that the kernel does not acknowledge it for a
# server about to be killed. Restarted at once, the server answers it,
# and the client gets every answer, in order. The count of answers is
# the server's counter.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net.sh"

"$TOP/tools/deps.sh" pkg redis-server nftables
port=$(net_port 1)
start "$T/redis.out" /usr/bin/redis-server --port "$port" --bind 127.0.0.1 --save '' \
	--appendonly no --dir "$T" --daemonize no --enable-debug-command local
pid=$PID
wait_line "$T/redis.out" "Ready to accept connections"
[ "$(ask "$port" "DEBUG POPULATE 2000000 key 150")" = "+OK" ] || fail "could not fill redis"
"$PROGS/incrloop" redis "$port" ctr 1500 2 >"$T/client.out" 2>&1 &
cpid=$!
STARTED+=("$cpid")
wait_line "$T/client.out" '^tick 5 '
exec 9<>"/dev/tcp/127.0.0.1/$port"
printf 'PING\r\n' >&9
read -r -t 10 pong <&9 && [ "${pong%$'\r'}" = +PONG ] || fail "no PONG: '$pong'"
"$SAVER" --tree --kill --stats -o "$T/img.ckpt" "$pid" 2>"$T/saver.err" &
spid=$!
# the image is being written once its temporary file is there
for ((i = 0; i < 2000; i++)); do
	[ -e "$T/img.ckpt.tmp.$spid" ] && break
	kill -0 "$spid" 2>/dev/null || break
	sleep 0.005
done
printf 'INCR late\r\n' >&9
kill -0 "$spid" 2>/dev/null || fail "the saver was done before the request was sent"
wait "$spid" || fail "saver failed: $(cat "$T/saver.err")"
"$INFO" --verify "$T/img.ckpt" >"$T/info.out" 2>&1 || fail "ckpt-info --verify failed"
wait "$pid" 2>/dev/null || true
write_ms=$(sed -n 's/.* write_ms=\([0-9]*\).*/\1/p' "$T/saver.err")
# the window is where the request fell: after the image's file was
# there, before the saver was done (checked above); the write's length
# depends on the machine (94 ms once on an idle one), so it is only noted
[ -n "$write_ms" ] || fail "the saver's stats name no write_ms: $(cat "$T/saver.err")"
table=$(lock_of "$T/img.ckpt")
[ -n "$table" ] || fail "the image names no network lock"
n=$(dropped "$table")
[ "$n" -gt 0 ] || fail "the request sent while the image was written was not held back"
note "image written in $write_ms ms; $n packets held back meanwhile"
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
read -r -t 30 late <&9 || fail "no answer to the request sent while the image was written"
[ "${late%$'\r'}" = :1 ] || fail "INCR late answered '$late'"
exec 9>&-
client_done "$cpid" "$T/client.out"
read -r _ acked _ last _ stall < <(grep '^acked ' "$T/client.out")
[ "$acked" = 1500 ] || fail "$acked answers, 1500 expected"
exec 8<>"/dev/tcp/127.0.0.1/$port"
printf 'GET ctr\r\n' >&8
read -r _ <&8
read -r value <&8
exec 8>&-
[ "${value%$'\r'}" = "$last" ] || fail "the server's counter is ${value%$'\r'}, the client saw $last"
locks | holds -x "$table" && fail "the network lock $table is still there after the restore"
note "longest wait for an answer: $stall ms"
exit 0
