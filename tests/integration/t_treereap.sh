#!/usr/bin/env bash
# Live checkpoints of a tree that stays stopped while the image is
# written (its root has a MADV_DONTFORK region, so no snapshot): a child
# that did get a snapshot must have it reaped again, every time, and not
# keep it as a zombie child (QA found one more zombie per checkpoint).
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/dontfork" 80 50
pid=$PID
wait_line "$T/prog.out" '^tick 3$'
for i in 1 2 3; do
	checkpoint "$pid" "$T/img$i.ckpt" --tree
done
kids=$(children_of "$(children_of "$pid")")
[ -z "$kids" ] || fail "the child keeps children after the checkpoints: $kids"
wait_line "$T/prog.out" '^(DONE|FAIL)' 60
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
exit 0
