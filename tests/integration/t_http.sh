#!/usr/bin/env bash
# An unmodified `python3 -m http.server` on loopback answers a request,
# is saved and killed, and after restart-loader answers again on the same
# port, serving the same file (its listening socket was bound again).
. "$(dirname "$0")/lib.sh"

port=$((20000 + $$ % 20000))
echo "hello from ibcr $$" >"$T/index.txt"
get() {	# get PATH: the body of GET PATH, over bash's /dev/tcp
	local body
	exec 9<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'GET %s HTTP/1.0\r\n\r\n' "$1" >&9
	body=$(cat <&9)
	exec 9>&-
	printf '%s' "${body#*$'\r\n\r\n'}"
}

cd "$T"
start "$T/prog.out" /usr/bin/python3 -m http.server "$port" --bind 127.0.0.1
pid=$PID
wait_line "$T/prog.out" "Serving HTTP"
[ "$(get /index.txt)" = "hello from ibcr $$" ] || fail "no answer before the checkpoint"
checkpoint "$pid" "$T/img.ckpt" --kill
grep -q "inet" "$T/info.out" || fail "no socket in the image: $(grep 'fd ' "$T/info.out")"
wait "$pid" 2>/dev/null || true
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
for ((i = 0; i < 100; i++)); do
	body=$(get /index.txt 2>/dev/null) && break
	sleep 0.1
done
[ "$body" = "hello from ibcr $$" ] || fail "after restart: '$body'"
grep -c '"GET /index.txt' "$T/prog.out" | holds -x 2 || fail "the server did not log both requests"
exit 0
