#!/usr/bin/env bash
# Memory the program had in transparent huge pages is in huge pages again
# right after the restore, not in 4 KiB pages waiting for khugepaged:
# tests/progs/thp prints its region's AnonHugePages every tick. With the
# saver running the process on (snapshot), with --kill, and with --kill
# --compress (the loader writes the data in).
. "$(dirname "$0")/lib.sh"

thp=/sys/kernel/mm/transparent_hugepage/enabled
grep -q '\[never\]' "$thp" 2>/dev/null &&
	fail "transparent huge pages are disabled here ($thp): nothing to test"

# thp_at FILE TICK: the thp_kb of that tick
thp_at() { sed -n "s/^tick $2 thp_kb=\([0-9-]*\) .*/\1/p" "$1"; }

for how in run kill compress; do
	out=$T/$how.out
	start "$out" "$PROGS/thp" 60 50
	pid=$PID
	wait_line "$out" '^tick 2 '
	before=$(thp_at "$out" 2)
	[ "${before:-0}" -gt 0 ] ||
		fail "$how: the kernel gave the program no huge pages before the checkpoint ($before kB)"
	if [ $how != run ]; then
		checkpoint_retry "$pid" "$T/$how.ckpt" --kill $([ $how = compress ] && echo --compress)
		wait "$pid" 2>/dev/null || true
		saved=$(last_tick "$out")
		restart "$T/$how.ckpt"
		expect_pid "$pid" "$RPID"
		wait_line "$out" "^tick $((saved + 1)) "
	else
		checkpoint_retry "$pid" "$T/$how.ckpt"
		replace "$pid" "$T/$how.ckpt" "$out" 1
		saved=$KILLED
	fi
	after=$(thp_at "$out" $((saved + 1)))
	# the first tick after the restore: too soon for khugepaged (10 s scans)
	[ "${after:-0}" -ge $((before / 2)) ] ||
		fail "$how: $before kB in huge pages before the checkpoint, $after kB right after the restore"
	wait "$LPID" || fail "$how: restored program exited with status $?: $(tail -n 2 "$out")"
	grep -q FAIL "$out" && fail "$how: $(grep FAIL "$out")"
	grep -q '^DONE' "$out" || fail "$how: program did not finish"
	assert_ticks_continuous "$out"
	note "$how: $before kB in huge pages before, $after kB after"
done
exit 0
