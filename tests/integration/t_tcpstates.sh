#!/usr/bin/env bash
# TCP connections opening or closing come back in the same state: a
# connect not answered yet (SYN-SENT), a connection closed by its peer
# (CLOSE-WAIT, with the peer in FIN-WAIT-2), one whose own end is not
# acknowledged yet (FIN-WAIT-1), closed by both sides (LAST-ACK,
# CLOSING). tests/progs/tcpstates holds each (the test drops packets by
# port with an nftables table of its own), checks its states every tick
# across saver --kill and the restart, then finishes the exchange,
# checking every byte and end of stream.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net.sh"

"$TOP/tools/deps.sh" pkg nftables
rules=ibcrtest$$
trap 'nft delete table inet "$rules" 2>/dev/null || true; cleanup' EXIT

# drop WHAT PORT: the test's own rule (to: packets to PORT; from: from
# PORT; syn: new connections to PORT)
drop() {
	local m
	case $1 in
	to) m="tcp dport $2" ;;
	from) m="tcp sport $2" ;;
	syn) m="tcp dport $2 tcp flags & (syn | ack) == syn" ;;
	esac
	nft -f - <<EOF || fail "could not add the test's rule"
table inet $rules {
	chain output { type filter hook output priority 0; policy accept; $m drop; }
}
EOF
}

# state MODE RULE N: the connection held in MODE, saved, restored, finished
state() {
	local mode=$1 rule=$2 port=$((20000 + ($$ * 7 + $3) % 40000))
	nft delete table inet "$rules" 2>/dev/null || true
	[ "$mode" != syn-sent ] || drop "$rule" "$port"
	start "$T/$mode.out" "$PROGS/tcpstates" "$mode" "$port" 50
	local pid=$PID
	if [ "$mode" != syn-sent ]; then
		wait_line "$T/$mode.out" '^ready'
		[ "$rule" = none ] || drop "$rule" "$port"
		kill -USR1 "$pid"
	fi
	wait_line "$T/$mode.out" '^state '
	wait_line "$T/$mode.out" '^tick 3 '
	checkpoint "$pid" "$T/$mode.ckpt" --kill
	cp "$T/info.out" "$T/$mode.info"
	wait "$pid" 2>/dev/null || true
	restart "$T/$mode.ckpt"
	expect_pid "$pid" "$RPID"
	local n
	n=$(last_tick "$T/$mode.out")
	wait_line "$T/$mode.out" "^(tick $((n + 4)) |FAIL)"	# states checked after the restart
	grep -q FAIL "$T/$mode.out" && fail "$mode: $(grep FAIL "$T/$mode.out")"
	# the program stops checking its states before the packets pass
	# again (the other way round, a retransmission that came in between
	# changed a state it still held: seen under load)
	kill -USR2 "$RPID"
	nft delete table inet "$rules" 2>/dev/null || true
	wait "$LPID" || fail "$mode: the restored program exited with status $?: $(grep FAIL "$T/$mode.out")"
	grep -q '^DONE' "$T/$mode.out" || fail "$mode: did not finish: $(tail -2 "$T/$mode.out")"
	assert_ticks_continuous "$T/$mode.out"
	note "$mode: $(grep "^state" "$T/$mode.out" | tail -n 1) restored and finished"
}

state syn-sent syn 0
state close-wait none 1
state fin-wait1 to 2
state last-ack to 3
state closing to 4
exit 0
