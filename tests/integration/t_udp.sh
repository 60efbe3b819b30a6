#!/usr/bin/env bash
# UDP datagrams waiting to be read (IPv4, IPv6, a connected pair; an
# empty one and one of 60000 bytes among them) are saved, by a live
# checkpoint without taking them from the program, and after saver --kill
# and a restart each comes again, in order, with its bytes and its
# sender's address and port (tests/progs/udpqueue checks).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net.sh"

start "$T/prog.out" "$PROGS/udpqueue" 40 100
pid=$PID
wait_line "$T/prog.out" '^queued'
wait_line "$T/prog.out" '^tick 2 '
checkpoint "$pid" "$T/live.ckpt"
checkpoint "$pid" "$T/img.ckpt" --kill
grep -qE 'inet .*\(([0-9]{5,}) bytes in it\)' "$T/info.out" ||
	fail "no socket holds its datagrams in the image: $(grep inet "$T/info.out")"
restore_to_done "$pid" "$T/img.ckpt" "$T/prog.out"
exit 0
