#!/usr/bin/env bash
# AMX comes back. A thread holding tile data (tile 0 loaded with a
# pattern, checked every tick) is checkpointed with --kill and restored:
# the tile holds the pattern at every tick after, the program finishes.
# A process that asked for AMX (ARCH_REQ_XCOMP_PERM) and holds no tile
# data yet comes back with that permission: after the restore it loads
# and checks a tile (it would die of SIGILL without).
# arch: x86_64
# cpu: amx_tile
. "$(dirname "$0")/lib.sh"

# roundtrip NAME AMX-ARGS...: checkpoint --kill at tick 3, restore, finish
roundtrip() {
	local name=$1 before
	shift
	start "$T/$name.out" "$PROGS/amx" "$@"
	wait_line "$T/$name.out" '^tick 3 '
	checkpoint_kill "$PID" "$T/$name.ckpt"
	before=$(last_tick "$T/$name.out")
	restart "$T/$name.ckpt"
	wait "$LPID" ||
		fail "$name: the restored program exited with status $? (132: SIGILL): $(tail -n 1 "$T/$name.out")"
	grep -q FAIL "$T/$name.out" && fail "$name: the restored program: $(grep FAIL "$T/$name.out")"
	grep -q '^DONE' "$T/$name.out" || fail "$name: the restored program did not finish"
	assert_ticks_continuous "$T/$name.out"
	BEFORE=$before
}

roundtrip held 40 50
roundtrip late 40 50 20
[ "$BEFORE" -lt 19 ] || fail "late: checkpointed at tick $BEFORE, after the tile was loaded"
exit 0
