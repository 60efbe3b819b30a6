#!/usr/bin/env bash
# Sockets with options set (TCP listener and connections, UDP, IPv6, a
# UNIX pair; keepalive times, buffer sizes, TOS/TTL/priority, linger,
# congestion control, a socket filter, O_NONBLOCK...), which the program
# checks itself every tick: a live checkpoint leaves the running
# original's options as they were (repair mode once reset SO_REUSEADDR),
# and after saver --kill and a restart every option is back.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net.sh"

"$TOP/tools/deps.sh" pkg nftables
start "$T/prog.out" "$PROGS/sockopts" 60 100
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
checkpoint "$pid" "$T/live.ckpt"
for opt in 'TCP_KEEPIDLE 300' 'TCP_KEEPIDLE 301' 'SO_LINGER' 'TCP_CONGESTION "reno"' \
	'SO_ATTACH_FILTER' 'IPV6_V6ONLY 1' 'SO_PASSCRED 1' 'SO_BINDTODEVICE "lo"' 'TCP_CORK 1'; do
	grep -q "option $opt" "$T/info.out" || fail "option $opt is not in the image"
done
n=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^(tick $((n + 3)) |FAIL)"	# the original checked itself since
grep -q FAIL "$T/prog.out" && fail "the live checkpoint changed the original: $(grep FAIL "$T/prog.out")"
checkpoint "$pid" "$T/img.ckpt" --kill
restore_to_done "$pid" "$T/img.ckpt" "$T/prog.out"
exit 0
