#!/usr/bin/env bash
# A region's advice flips while the saver reads smaps early and then
# freezes (saver/vmflags.c): the image must hold the flags of the freeze,
# corrected from the snapshot's own smaps, and the restored program must
# find the flag it set last (it checks after every flip). At least one of
# the checkpoints must have had a flag to correct (saver --stats,
# vmflags_fixed), so that path is taken here, not assumed; the restore is
# from that image (a checkpoint that catches the program with its own
# smaps open is refused, t_fdrefuse: it is tried again).
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/flipflags" 1000000 20
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
got=
for ((i = 1; i <= 60; i++)); do
	checkpoint_retry "$pid" "$T/flip.ckpt" --stats
	fixed=$(sed -n 's/.*vmflags_fixed=\([0-9]*\).*/\1/p' "$T/saver.err")
	[ -n "$fixed" ] || fail "saver --stats printed no vmflags_fixed: $(cat "$T/saver.err")"
	[ "$fixed" -gt 0 ] && { got=$i; break; }
done
[ -n "$got" ] || fail "none of 60 checkpoints caught a flip between the early smaps read and the freeze (with its smaps closed)"
note "checkpoint $got: flags of $fixed region(s) corrected after the freeze"
grep -q FAIL "$T/prog.out" && fail "the running program failed: $(grep FAIL "$T/prog.out")"
replace "$pid" "$T/flip.ckpt" "$T/prog.out" 3
grep -q FAIL "$T/prog.out" && fail "restored program: $(grep FAIL "$T/prog.out")"
kill -9 "$RPID"
wait "$LPID" 2>/dev/null || true
exit 0
