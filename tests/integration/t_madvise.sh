#!/usr/bin/env bash
# madvise and mlock state comes back, region by region, with the bytes:
# tests/progs/madvise checks its regions' VmFlags in /proc/self/smaps on
# every tick, before the checkpoint and after the restore.
# - forksafe (HUGEPAGE, NOHUGEPAGE, DONTDUMP, mlock): the saver reads the
#   flags before the freeze and checks them against its fork snapshot;
#   the process runs on while the image is written;
# - all (DONTFORK and WIPEONFORK too): a fork does not copy those, so the
#   saver copies them in the freeze and still runs the process on from a
#   snapshot while it writes; both images restore with every byte.
. "$(dirname "$0")/lib.sh"

run_mode() {
	local mode=$1 out=$T/$1.out pid saved
	start "$out" "$PROGS/madvise" "$mode" 100 50
	pid=$PID
	wait_line "$out" '^tick 3 '
	grep -q FAIL "$out" && fail "$mode: $(grep FAIL "$out")"
	checkpoint "$pid" "$T/$mode.ckpt" --stats
	grep -q 'ibcr-stats:' "$T/saver.err" || fail "$mode: no stats: $(cat "$T/saver.err")"
	saved=$(last_tick "$out")
	# the process ran on, and was frozen only for the capture when it could
	# be snapshot: the write took longer than the freeze then
	wait_line "$out" "^tick $((saved + 2)) "
	replace "$pid" "$T/$mode.ckpt" "$out"
	wait "$LPID" || fail "$mode: restored program exited with status $?: $(tail -n 2 "$out")"
	grep -q FAIL "$out" && fail "$mode: $(grep FAIL "$out")"
	grep -q '^DONE' "$out" || fail "$mode: program did not finish"
	assert_ticks_continuous "$out"
	# as root every advice takes on this kernel: one refused would go
	# unchecked, so it fails the test rather than pass it unseen
	grep -q '^region.* -$' "$out" &&
		fail "$mode: advice the kernel refused, not checked: $(grep '^region.* -$' "$out" | tr '\n' ' ')"
	return 0
}

run_mode forksafe
snap=$(sed -n 's/.*snapshot_ms=\([0-9.]*\).*/\1/p' "$T/saver.err")
[ "$snap" != 0.0 ] || fail "forksafe: the saver took no snapshot: $(cat "$T/saver.err")"
run_mode all
snap=$(sed -n 's/.*snapshot_ms=\([0-9.]*\).*/\1/p' "$T/saver.err")
[ "$snap" != 0.0 ] || fail "all: no snapshot with DONTFORK memory: $(cat "$T/saver.err")"
exit 0
