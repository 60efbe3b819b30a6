#!/usr/bin/env bash
# Memory protection keys (x86 PKU). A thread's PKRU comes back exactly:
# the kernel's default for new processes, and a value changed by
# pkey_alloc (the program checks what rdpkru reads every tick). The image
# marks a thread whose PKRU is the default ("pkeys default" in ckpt-info:
# what lets --cpu-check=in-use restore it on a CPU without PKU, see
# tests/vm/xkernel.sh), and only that one. A page under a key of its own
# (pkey_mprotect) is refused by saver with --kill, in one line naming the
# region and the cause, no image left, the program alive.
# arch: x86_64
# cpu: pku
. "$(dirname "$0")/lib.sh"

# pkru_roundtrip MODE: checkpoint --kill, restart, PKRU as it was
pkru_roundtrip() {
	local mode=$1 before v
	start "$T/$mode.out" "$PROGS/pkeys" "$mode" 40 50
	wait_line "$T/$mode.out" '^tick 3 '
	v=$(sed -n '1s/.* pkru //p' "$T/$mode.out")
	checkpoint_kill "$PID" "$T/$mode.ckpt"
	cp "$T/info.out" "$T/$mode.info"
	before=$(last_tick "$T/$mode.out")
	restart "$T/$mode.ckpt"
	wait "$LPID" || fail "$mode: restored program exited with status $?: $(tail -n 2 "$T/$mode.out")"
	grep -q FAIL "$T/$mode.out" && fail "$mode: PKRU changed: $(grep FAIL "$T/$mode.out")"
	grep -q '^DONE' "$T/$mode.out" || fail "$mode: program did not finish"
	[ "$before" -lt 39 ] || fail "$mode: checkpointed after the last tick"
	assert_ticks_continuous "$T/$mode.out"
	PKRU=$v
}

pkru_roundtrip rights
[ "$PKRU" = 0x55555554 ] || note "this kernel's default PKRU is $PKRU"
grep -q 'pkeys default' "$T/rights.info" ||
	fail "a thread with the default PKRU $PKRU is not marked so: $(grep ' tid ' "$T/rights.info")"
pkru_roundtrip alloc
[ "$PKRU" != 0x55555554 ] || fail "pkey_alloc did not change PKRU"
grep -q 'pkeys default' "$T/alloc.info" &&
	fail "a thread with PKRU $PKRU (a key allocated) is marked as holding the default"

start "$T/region.out" "$PROGS/pkeys" region
wait_line "$T/region.out" '^page '
read -r _ range _ key <<<"$(head -n 1 "$T/region.out")"
saver_refused "$PID" "$range" "protection key"
kill -0 "$PID" 2>/dev/null || fail "the refused program did not survive"
grep -q "State:.*S\|State:.*R" "/proc/$PID/status" || fail "the refused program is not running: $(grep State "/proc/$PID/status")"
exit 0
