#!/usr/bin/env bash
# Sockets that talk to the kernel or below TCP and UDP: a netlink (route)
# socket with its port id, groups (one past the first 32) and an option,
# an unbound one, a raw ICMP socket with an ICMP_FILTER. After saver
# --kill and a restart each is as it was (the program checks every tick)
# and works: link dumps are answered, an echo reply arrives.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net.sh"

start "$T/prog.out" "$PROGS/netsocks" 30 100
pid=$PID
wait_line "$T/prog.out" '^tick 2 '
checkpoint "$pid" "$T/img.ckpt" --kill
grep -q 'netlink' "$T/info.out" || fail "no netlink socket in the image: $(grep 'fd ' "$T/info.out")"
grep -q 'option ICMP_FILTER' "$T/info.out" || fail "the raw socket's filter is not saved"
restore_to_done "$pid" "$T/img.ckpt" "$T/prog.out"
exit 0
