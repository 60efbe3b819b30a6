# shellcheck shell=bash
# Sourced after lib.sh by the tests of servers with clients (t_redis,
# t_memcached, t_postgres, ...): a port of the test's own, the network
# lock's traces, a one-shot request over bash's /dev/tcp.

# A port no other test running at the same time picks (from the pid).
net_port() { echo $((20000 + ($$ * 7 + ${1:-0}) % 40000)); }

# locks: the ibcr nftables tables there are now.
locks() { nft list tables 2>/dev/null | sed -n 's/^table inet \(ibcr-[0-9]*-[0-9]*\)$/\1/p'; }

# lock_of IMAGE: the table the image names (ckpt-info), or nothing.
lock_of() {
	"$INFO" "$1" | sed -n 's/^network lock: nftables table inet \([^ ,]*\),.*/\1/p'
}

# dropped TABLE: packets its rules have dropped so far (they count).
dropped() {
	nft list table inet "$1" 2>/dev/null |
		sed -n 's/.*counter packets \([0-9]*\) .*/\1/p' | awk '{ n += $1 } END { print n + 0 }'
}

# ask PORT REQUEST: sends one request line (\r\n added) on a new
# connection and prints the first line of the answer, without \r.
ask() {
	local line
	exec 8<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf '%s\r\n' "$2" >&8
	read -r -t 10 line <&8 || line=
	exec 8>&-
	printf '%s\n' "${line%$'\r'}"
}

# wait_answer PORT REQUEST REGEX: until the server answers so (30 s).
wait_answer() {
	local i a
	for ((i = 0; i < 300; i++)); do
		a=$(ask "$1" "$2" 2>/dev/null) && [[ "$a" =~ $3 ]] && return 0
		sleep 0.1
	done
	fail "port $1 did not answer '$2' with /$3/ (last: '$a')"
}

# client_done PID OUT: waits for the client, which must end well.
client_done() {
	wait "$1" || fail "the client failed (status $?): $(grep FAIL "$2" | head -3)"
	grep -q '^acked ' "$2" || fail "the client did not finish: $(tail -2 "$2")"
}

# restore_to_done PID IMAGE OUT: PID was saved with --kill into IMAGE;
# restart it, and the restored program must end well, "DONE" in OUT, its
# ticks continuous.
restore_to_done() {
	wait "$1" 2>/dev/null || true
	restart "$2"
	expect_pid "$1" "$RPID"
	wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$3")"
	grep -q FAIL "$3" && fail "$(grep FAIL "$3" | head -3)"
	grep -q '^DONE' "$3" || fail "program did not finish: $(tail -2 "$3")"
	assert_ticks_continuous "$3"
}
