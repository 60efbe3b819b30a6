#!/usr/bin/env bash
# ibcr-launch as a general launcher (issue 19; dmtcp_launch/dmtcp_command
# are the model): without -o it becomes the program (same pid), with the
# verbs shim preloaded where it is built; with -o DIR it stays the
# program's parent and checkpoints it on a signal (SIGUSR2, or the one
# asked for) or on `ibcr-ctl checkpoint PID`, which prints the image and
# exits 0, or says why not and exits 1; --kill ends the program and the
# launcher exits with the program's status; --restart restores an image
# under a launcher, whose program can be checkpointed again; SIGTERM to
# the launcher reaches the program.
. "$(dirname "$0")/lib.sh"

L=$B/ibcr-launch C=$B/ibcr-ctl
mkdir "$T/ck"

# the old form: exec, the same pid
start "$T/exec.out" "$L" --no-verbs "$PROGS/counter" 100000 20
wait_line "$T/exec.out" '^tick 2 '
[ "$(pids_in "$T/exec.out")" = "$PID" ] || fail "ibcr-launch PROGRAM did not become it: $(pids_in "$T/exec.out") vs $PID"
tr '\0' '\n' <"/proc/$PID/environ" | holds '^LD_PRELOAD=.*libibcr-verbs' && fail "--no-verbs preloaded the shim"
kill -9 "$PID"
if [ -f "$B/libibcr-verbs.so" ]; then
	start "$T/shim.out" "$L" "$PROGS/counter" 100000 20
	wait_line "$T/shim.out" '^tick 2 '
	tr '\0' '\n' <"/proc/$PID/environ" | holds "^LD_PRELOAD=$B/libibcr-verbs.so" ||
		fail "ibcr-launch did not preload the shim: $(tr '\0' '\n' <"/proc/$PID/environ" | grep PRELOAD)"
	kill -9 "$PID"
fi

# a coordinator: the program is its child
start "$T/prog.out" "$L" --no-verbs -o "$T/ck" --ckpt-signal SIGUSR1 --keep 5 "$PROGS/counter" 100000 20
lpid=$PID
wait_line "$T/prog.out" '^tick 3 '
pid=$(pids_in "$T/prog.out")
[ "$(ppid_of "$pid")" = "$lpid" ] || fail "the program's parent is $(ppid_of "$pid"), not the launcher $lpid"
out=$("$C" checkpoint "$pid") || fail "ibcr-ctl checkpoint $pid failed: $out"
[ "$out" = "$T/ck/counter.ckpt.1" ] || fail "ibcr-ctl printed '$out'"
"$INFO" --verify "$out" >/dev/null || fail "$out does not verify"
out=$("$C" checkpoint "$lpid") || fail "ibcr-ctl checkpoint $lpid (the launcher) failed: $out"
[ "$out" = "$T/ck/counter.ckpt.2" ] || fail "ibcr-ctl printed '$out'"
kill -USR1 "$lpid"
for ((i = 0; i < 600; i++)); do [ -e "$T/ck/counter.ckpt.3" ] && break; sleep 0.05; done
[ -e "$T/ck/counter.ckpt.3" ] || fail "SIGUSR1 to the launcher made no image: $(ls "$T/ck"; cat "$T/prog.out" | grep -v tick)"
n=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((n + 3)) pid $pid\$"
st=0
"$C" checkpoint "$$" >/dev/null 2>"$T/ctl.err" || st=$?
[ "$st" = 1 ] && grep -q "not started by ibcr-launch" "$T/ctl.err" || fail "ibcr-ctl on the test shell: status $st: $(cat "$T/ctl.err")"
out=$("$C" checkpoint --kill "$pid") || fail "ibcr-ctl checkpoint --kill failed: $out"
st=0
wait "$lpid" || st=$?
[ "$st" = 137 ] || fail "the launcher exited with $st, not the killed program's 137"
[ ! -e "/proc/$pid" ] || fail "the program runs on after --kill"

# --restart: the image comes back under a launcher, checkpointed again
n=$(last_tick "$T/prog.out")
start "$T/rl.out" "$L" -o "$T/ck" --keep 5 --restart "$T/ck/counter.ckpt"
rlpid=$PID
wait_line "$T/prog.out" "^tick $((n + 2)) "
rpid=$(pids_in "$T/prog.out" | tail -n 1)
expect_pid "$pid" "$rpid"
out=$("$C" checkpoint "$rpid") || fail "ibcr-ctl checkpoint of the restored $rpid failed: $out"
[ "$out" = "$T/ck/counter.ckpt.5" ] || fail "ibcr-ctl printed '$out' for the restored process"
"$INFO" --verify "$out" >/dev/null || fail "$out does not verify"
kill -TERM "$rlpid"
st=0
wait "$rlpid" || st=$?
[ "$st" != 0 ] || fail "the launcher exited 0 after SIGTERM"
[ ! -e "/proc/$rpid" ] || fail "SIGTERM to the launcher did not reach the restored program"
grep -q FAIL "$T/prog.out" && fail "program found its memory changed: $(grep FAIL "$T/prog.out")"
exit 0
