#!/usr/bin/env bash
# Resource limits of another user's process, checkpointed by root without
# CAP_SYS_RESOURCE (as in a container, and on the build machine): a
# program run as nobody lowers all its limits, soft and hard; saver reads
# them (prlimit() on another uid's process needs CAP_SYS_RESOURCE, which
# made every such checkpoint fail) and restart-loader gives them back:
# the program checks all sixteen each tick, and /proc/PID/limits reads the
# same. A restorer whose hard limit is lower than the image's is refused,
# naming the limit, before anything is made: the next restore works.
. "$(dirname "$0")/lib.sh"
is_root || fail "this test runs a program as nobody and checkpoints it as root"
chmod 755 "$T"

start "$T/prog.out" "$PROGS/runas" 65534 65534 "$PROGS/limits" 60 100
pid=$PID
wait_line "$T/prog.out" '^tick 2 '
grep -q "^tick 2 pid $pid uid 65534\$" "$T/prog.out" || fail "program does not run as nobody"
cp "/proc/$pid/limits" "$T/limits.before"
checkpoint_kill "$pid" "$T/img.ckpt"
before=$(last_tick "$T/prog.out")

# A restorer with a lower hard limit than the image's (300 open files)
# cannot raise it without CAP_SYS_RESOURCE: refused before anything is
# made. Restored by nobody, who never has that capability (root on
# another machine may).
chmod 644 "$T/img.ckpt"
restart_refused "$T/img.ckpt" \
	"pid $pid: resource limit RLIMIT_NOFILE: its hard limit 300 is above ours (250), and raising it needs CAP_SYS_RESOURCE" \
	as_nobody bash -c 'ulimit -n 250 && exec "$@"' ulimit
[ "$(last_tick "$T/prog.out")" = "$before" ] || fail "the refused restore ran the program"

restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 2)) "
diff "$T/limits.before" "/proc/$RPID/limits" >"$T/limits.diff" ||
	fail "resource limits changed: $(cat "$T/limits.diff")"
grep -q "^tick $((before + 2)) pid $RPID uid 65534\$" "$T/prog.out" ||
	fail "restored program does not run as nobody"
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q FAIL "$T/prog.out" && fail "program found its limits changed: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
exit 0
