#!/usr/bin/env bash
# AMX. A process that asked for AMX (ARCH_REQ_XCOMP_PERM) and holds no
# tile data yet comes back with that permission: after the restore it
# loads and checks a tile (it would die of SIGILL without). A thread
# holding tile data is refused by saver --kill, in one line naming the
# thread and the cause, before anything is killed: no image is left and
# the program runs on with its tile intact (checked every tick) to its
# end. The kernel takes tile data through a signal frame only from a
# thread that has used AMX since it asked, which a restored one has not.
# arch: x86_64
# cpu: amx_tile
. "$(dirname "$0")/lib.sh"

start "$T/late.out" "$PROGS/amx" 40 50 20
wait_line "$T/late.out" '^tick 3 '
checkpoint_kill "$PID" "$T/late.ckpt"
before=$(last_tick "$T/late.out")
[ "$before" -lt 19 ] || fail "checkpointed at tick $before, after the tile was loaded"
restart "$T/late.ckpt"
wait "$LPID" || fail "the restored program exited with status $? (132: SIGILL, no AMX): $(tail -n 1 "$T/late.out")"
grep -q FAIL "$T/late.out" && fail "the restored program: $(grep FAIL "$T/late.out")"
grep -q '^DONE' "$T/late.out" || fail "the restored program did not finish"
assert_ticks_continuous "$T/late.out"

start "$T/prog.out" "$PROGS/amx" 40 50
wait_line "$T/prog.out" '^tick 3 '
saver_refused "$PID" "thread $PID: .*AMX tile data"
wait "$PID" || fail "the refused program exited with status $?: $(tail -n 1 "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "the refused program did not finish"
assert_ticks_continuous "$T/prog.out"
exit 0
