#!/usr/bin/env bash
# UDP datagrams waiting to be read (IPv4, IPv6, a connected pair; an
# empty one and one of 60000 bytes among them) are saved, by a live
# checkpoint without taking them from the program, and after saver --kill
# and a restart each comes again, in order, with its bytes and its
# sender's address and port (tests/progs/udpqueue checks).
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/udpqueue" 40 100
pid=$PID
wait_line "$T/prog.out" '^queued'
wait_line "$T/prog.out" '^tick 2 '
checkpoint "$pid" "$T/live.ckpt"
checkpoint "$pid" "$T/img.ckpt" --kill
grep -qE 'inet .*\(([0-9]{5,}) bytes in it\)' "$T/info.out" ||
	fail "no socket holds its datagrams in the image: $(grep inet "$T/info.out")"
wait "$pid" 2>/dev/null || true
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish: $(tail -2 "$T/prog.out")"
assert_ticks_continuous "$T/prog.out"
exit 0
