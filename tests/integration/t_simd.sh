#!/usr/bin/env bash
# aarch64: two threads whose state lives only in the FP/SIMD registers
# (v0-v31, both lanes, fpcr and fpsr) and a few general registers continue
# exactly after saver --kill and restart-loader: the checkpoint lands
# inside their loops (the saved pc says so), the program's own per-lane
# checks keep passing after the restore (each thread has its own values:
# registers swapped between threads fail too), ticks go on and it
# finishes; same pid and layout. The counterpart of t_avx.
# arch: aarch64
. "$(dirname "$0")/lib.sh"

[ "$(uname -m)" = aarch64 ] || fail "t_simd is for aarch64 (t_avx is its x86_64 counterpart)"
start "$T/prog.out" "$PROGS/simd" 60 100
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
maps "$pid" >"$T/maps.before"
checkpoint_kill "$pid" "$T/img.ckpt"
before=$(last_tick "$T/prog.out")
# the program calls a thread stuck after 20 ticks without progress: that
# many must follow the restore
((60 - before > 25)) || fail "checkpointed after tick $before: too late to see a thread stuck"

# in_loop NAME: the saved pc of thread NAME lies in its loop's code.
in_loop() {
	local name=$1 range lo hi pc
	range=$(sed -n "s/^$name loop \(0x[0-9a-f]*\)-\(0x[0-9a-f]*\)$/\1 \2/p" "$T/prog.out")
	[ -n "$range" ] || fail "program did not print where its $name loop is"
	read -r lo hi <<<"$range"
	pc=$(sed -n "s/^ *tid [0-9]* *$name  *pc \(0x[0-9a-f]*\) .*/\1/p" "$T/info.out")
	[ -n "$pc" ] || fail "image has no thread named $name: $(grep tid "$T/info.out")"
	((pc >= lo && pc < hi)) || fail "thread $name was checkpointed at pc $pc, outside its loop $lo-$hi"
}
in_loop simd0
in_loop simd1

restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 3)) "
maps "$RPID" >"$T/maps.after"
wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "register state was not restored exactly: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
# last: the checks above tell whether the process works despite a difference
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "memory layout changed: $(cat "$T/maps.diff")"
exit 0
