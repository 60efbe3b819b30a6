#!/usr/bin/env bash
# Shared memory in a live checkpoint of a tree: a parent and its child
# sweep MAP_SHARED anonymous memory and a SysV segment, each page
# checked for the generation before it is rewritten, their positions in
# private memory. The saver (without --kill, compressing slowly) lets
# them run on while it writes: the parent goes on ticking meanwhile
# (before, shared memory kept the whole tree stopped until the image was
# written). The image holds shared and private memory of one moment:
# the tree restored from it, once the original is killed, sweeps on
# with every page as its position expects, twice.
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/shmsweep" 100000 50 16
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
for cycle in 1 2; do
	before=$(last_tick "$T/prog.out")
	# zlib at level 9 on random bytes: the write takes a second or more
	checkpoint "$pid" "$T/img.ckpt" --tree --compress=zlib:9 --stats
	after=$(last_tick "$T/prog.out")
	grep -q 'snapshot_ms=[0-9.]*[1-9]' "$T/saver.err" ||
		fail "cycle $cycle: no snapshot: $(grep ibcr-stats "$T/saver.err")"
	[ "$after" -ge $((before + 3)) ] ||
		fail "cycle $cycle: the tree stood still while the image was written (ticks $before..$after): $(grep -o 'freeze_ms=[^ ]*' "$T/saver.err")"
	note "cycle $cycle: $(grep -o 'freeze_ms=[^ ]* ' "$T/saver.err")while $((after - before)) ticks went by"
	grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
	child=$(children_of "$pid")
	kill -9 "$pid" $child
	wait "$pid" 2>/dev/null || true
	while [ -e "/proc/$child" ]; do sleep 0.05; done
	killed=$(last_tick "$T/prog.out")
	restart "$T/img.ckpt"
	expect_pid "$pid" "$RPID"
	wait_line "$T/prog.out" "^tick $((killed + 10)) "
	grep -q FAIL "$T/prog.out" && fail "cycle $cycle: $(grep FAIL "$T/prog.out")"
	pid=$RPID
	STARTED+=("$LPID")
done
exit 0
