#!/usr/bin/env bash
# Sockets that a restore could not give back exactly are refused by the
# saver, before anything is killed, in one line that names the pid, the
# fd and the cause, with no image left; the program runs on unharmed (it
# checks its socket every tick): a TCP listener with a connection it has
# not accepted yet; with --kill, a listener also held by a process
# outside the checkpoint, and a socket bound to an address this host no
# longer has; an eBPF socket filter (which cannot be read back); a
# netlink socket with the kernel's answers unread and a raw socket with
# packets waiting (nothing could ask for them again); a packet socket.
. "$(dirname "$0")/lib.sh"

"$TOP/tools/deps.sh" pkg nftables iproute2
problems=()

# refuse NAME "SAVER-ARGS" "PROG-ARGS" REGEX...: saver fails as described
refuse() {
	local name=$1 sargs=$2 pargs=$3 st=0 re n
	shift 3
	# shellcheck disable=SC2086
	start "$T/$name.out" "$PROGS/netrefuse" $pargs
	wait_line "$T/$name.out" '^tick 2 '
	${HOOK:-true}
	# shellcheck disable=SC2086
	"$SAVER" $sargs -o "$T/$name.img" "$PID" >"$T/$name.stdout" 2>"$T/$name.all" || st=$?
	grep -v '^saver: warning:' "$T/$name.all" >"$T/$name.stderr" || true
	[ $st != 0 ] || problems+=("$name: saver succeeded")
	[ "$(wc -l <"$T/$name.stderr")" = 1 ] || problems+=("$name: not one line: $(cat "$T/$name.stderr")")
	for re in "pid $PID\b" "fd 3\b" "$@"; do
		grep -qiE -- "$re" "$T/$name.stderr" || problems+=("$name: message lacks /$re/: $(cat "$T/$name.stderr")")
	done
	ls "$T/$name.img"* >/dev/null 2>&1 && problems+=("$name: an image was left")
	n=$(last_tick "$T/$name.out")
	wait_line "$T/$name.out" "^(tick $((n + 3)) |FAIL)" 10
	grep -q FAIL "$T/$name.out" && problems+=("$name: the program was harmed: $(grep FAIL "$T/$name.out")")
	locks "$T/$name.img" | holds . && problems+=("$name: a network lock was left: $(locks)")
	kill_tree "$PID"
}
# locks IMAGE: the network locks a saver of IMAGE made
locks() {
	local t
	for t in $(nft list tables 2>/dev/null | sed -n 's/^table inet \(ibcr-.*\)/\1/p'); do
		nft list table inet "$t" 2>/dev/null | holds -F "image $1\"" && echo "$t"
	done
	return 0
}

refuse pending "" "pending" "listener" "not accepted yet" "try again"
refuse pending-kill "--kill" "pending" "listener" "not accepted yet"
refuse shared "--kill" "shared" "also open in pid [0-9]+" "outside the checkpoint"
# the address goes away while the program holds a socket bound to it
a=10.$((RANDOM % 200 + 20)).$((RANDOM % 250)).$(($$ % 250 + 1))
ip addr add "$a/32" dev lo || fail "could not add $a to lo"
drop_address() { ip addr del "$a/32" dev lo; }
HOOK=drop_address refuse addr "--kill" "addr $a" "$a" "no longer has"
refuse ebpf "" "ebpf" "eBPF socket filter"
refuse netlink "--kill" "netlink" "netlink socket" "not read yet" "try again"
refuse packet "" "packet" "packet socket" "not supported"
refuse raw "--kill" "raw" "raw socket" "packets waiting"
[ ${#problems[@]} = 0 ] || fail "$(printf '%s\n' "${problems[@]}")"
exit 0
