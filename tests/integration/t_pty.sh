#!/usr/bin/env bash
# A pty pair inside the checkpoint (a launcher relaying its child's pty
# output, as mpirun and script(1) do): after restart the child's lines
# reach the launcher through a new pair, none lost or doubled, the output
# that waited in the pty at the checkpoint included (written back raw:
# a CR too many or too few fails), window size and settings kept.
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/ptypair" 40 100
pid=$PID
wait_line "$T/prog.out" '^tick 8 '
child=$(children_of "$pid")
# a checkpoint that leaves them running takes the waiting output and puts
# it back: the original's lines go on without a gap (checked below)
checkpoint "$pid" "$T/run.ckpt" --tree
wait_line "$T/prog.out" '^tick 12 '
checkpoint "$pid" "$T/img.ckpt" --tree --kill
grep -q 'ptmx .*(\(69\|[7-9][0-9]\|[0-9][0-9][0-9]\+\) bytes' "$T/info.out" ||
	fail "no pty master with waiting output in the image: $(grep -E 'ptmx|pts' "$T/info.out")"
grep -q ' pts .*/dev/pts/' "$T/info.out" || fail "the child's slave is not a pty slave of the image"
wait "$pid" 2>/dev/null || true
while [ -e "/proc/$child" ]; do sleep 0.05; done
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait "$LPID" || fail "restored launcher exited with status $?"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out" | head -3)"
grep -q '^DONE' "$T/prog.out" || fail "launcher did not finish"
grep -q '^child done' "$T/prog.out" || fail "the child's last line did not come through"
assert_ticks_continuous "$T/prog.out"
[ "$(last_tick "$T/prog.out")" = 39 ] || fail "ticks end at $(last_tick "$T/prog.out"), not 39"
exit 0
