#!/usr/bin/env bash
# A SysV shared memory segment stays shared between the restored parent
# and its two workers, with its id, owner and size: the parent sees the
# counts the workers keep in it move on after restart-loader (and fails
# when one stands still), the pattern in it is intact, one copy is saved,
# and the program removes it at the end as it would have.
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/sysvshm" 60 100
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
maps "$pid" >"$T/maps.before"
workers=$(children_of "$pid")
id=$(sed -n 's/^tick [0-9]* pid [0-9]* id \([0-9]*\) .*/\1/p' "$T/prog.out" | head -n 1)
trap 'cleanup; ipcrm -m "$id" 2>/dev/null || true' EXIT	# SysV memory outlives processes
checkpoint "$pid" "$T/img.ckpt" --tree --kill
grep -q "3 process(es)" "$T/info.out" || fail "the image does not hold the 3 processes"
# the segment is saved once, not once per process
[ "$(grep -c 'shmem *[1-9]' "$T/info.out")" = 1 ] ||
	fail "shared memory saved $(grep -c 'shmem *[1-9]' "$T/info.out") times: $(grep shmem "$T/info.out")"
wait "$pid" 2>/dev/null || true
for w in $workers; do	# init reaps them: their pids must be free again
	while [ -e "/proc/$w" ]; do sleep 0.05; done
done
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
before=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((before + 2)) "
maps "$RPID" >"$T/maps.after"
ids=$(sed -n 's/^tick [0-9]* pid [0-9]* id \([0-9]*\) .*/\1/p' "$T/prog.out" | sort -u)
[ "$ids" = "$id" ] || fail "the segment id changed: $ids"
has_segment() { awk -v id="$1" '$2 == id { found = 1 } END { exit !found }' /proc/sysvipc/shm; }
has_segment "$id" || fail "segment $id is not in /proc/sysvipc/shm"
wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "memory layout changed: $(cat "$T/maps.diff")"
! has_segment "$id" || fail "segment $id outlived the program that removed it"
exit 0
