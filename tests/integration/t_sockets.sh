#!/usr/bin/env bash
# UNIX sockets between a restored parent and child: a stream and a
# datagram socketpair with data waiting in them (it arrives once, in
# order, message boundaries kept), a listening socket that keeps
# accepting after the restore, and a connection to it kept open across
# the checkpoint (the programs check every byte).
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/sockets" "$T" 40 100
pid=$PID
wait_line "$T/prog.out" '^tick 6 '
checkpoint "$pid" "$T/img.ckpt" --tree --kill
grep -q "unix" "$T/info.out" || fail "no UNIX socket in the image: $(grep 'fd ' "$T/info.out")"
grep -q "unix.*bytes in it" "$T/info.out" || fail "no data saved in the sockets"
wait "$pid" 2>/dev/null || true
all=$(sed -n 's/^process [0-9]*: pid \([0-9]*\) .*/\1/p' "$T/info.out")
for p in $all; do while [ -e "/proc/$p" ]; do sleep 0.05; done; done
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
exit 0
