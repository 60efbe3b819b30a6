#!/usr/bin/env bash
# cgroup v2 membership: a process in a cgroup of its own comes back into
# that cgroup (by its path) after --kill and restart. When the cgroup is
# gone the restore is refused, naming the path, before anything is made;
# made again, the same image restores; with --cgroup=here it restores
# even while the cgroup is gone, in the loader's own. A process whose threads are in
# different (threaded) cgroups is refused by saver, naming the thread,
# and runs on.
. "$(dirname "$0")/lib.sh"
is_root || fail "making cgroups needs root"

MNT=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
[ -n "$MNT" ] || fail "no cgroup2 file system is mounted"
ROOT=$(awk '$0 ~ / - cgroup2 / { print $4; exit }' /proc/self/mountinfo)
NAME=ibcr-test-$$
CG=$MNT/$NAME
REL=${ROOT%/}/$NAME
rm_cgroups() {
	local d
	for d in "$CG/t" "$CG"; do
		[ -d "$d" ] || continue
		while read -r p; do echo "$p" >"$MNT/cgroup.procs" 2>/dev/null || true; done <"$d/cgroup.procs"
		rmdir "$d" 2>/dev/null || true
	done
}
trap 'cleanup; rm_cgroups' EXIT
mkdir "$CG"

start "$T/prog.out" "$PROGS/counter" 100 50
pid=$PID
echo "$pid" >"$CG/cgroup.procs"
wait_line "$T/prog.out" '^tick 3 '
grep -qx "0::$REL" "/proc/$pid/cgroup" || fail "counter is not in $REL: $(cat "/proc/$pid/cgroup")"
checkpoint_kill "$pid" "$T/img.ckpt"
grep -q "cgroup $REL " "$T/info.out" || fail "the image does not name the cgroup: $(grep attrs: "$T/info.out")"

# gone: refused, nothing made
rmdir "$CG"
before=$(last_tick "$T/prog.out")
restart_refused "$T/img.ckpt" "pid $pid: its cgroup $REL does not exist here ($CG; restart-loader --cgroup=here leaves it in the loader's own cgroup)"
[ "$(last_tick "$T/prog.out")" = "$before" ] || fail "the refused restore ran the program"

mkdir "$CG"
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 2)) "
grep -qx "0::$REL" "/proc/$RPID/cgroup" || fail "restored in $(grep '^0::' "/proc/$RPID/cgroup"), not $REL"
wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
assert_ticks_continuous "$T/prog.out"

# --cgroup=here, the saved cgroup gone again: restored all the same, in
# the loader's own cgroup (the test's), not moved anywhere
rmdir "$CG"
own=$(sed -n 's/^0:://p' /proc/$$/cgroup)
LOADER_ARGS=--cgroup=here restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 2)) "
grep -qx "0::$own" "/proc/$RPID/cgroup" ||
	fail "--cgroup=here: restored in $(grep '^0::' "/proc/$RPID/cgroup"), not the loader's $own"
kill_tree "$LPID"
wait "$LPID" 2>/dev/null || true
mkdir "$CG"

# a thread in a threaded cgroup of its own: refused, and it runs on
start "$T/threads.out" "$PROGS/threads" 60 100
tpid=$PID
echo "$tpid" >"$CG/cgroup.procs"
mkdir "$CG/t"
echo threaded >"$CG/t/cgroup.type"
tid=$(ls "/proc/$tpid/task" | grep -vx "$tpid" | head -n 1)
echo "$tid" >"$CG/t/cgroup.threads"
wait_line "$T/threads.out" '^tick 2 '
"$SAVER" --kill -o "$T/threaded.ckpt" "$tpid" 2>"$T/saver.err" && fail "saver took a process with threads in two cgroups"
grep -q "pid $tpid thread $tid: in cgroup $REL/t, its process in $REL: threaded cgroups are not supported yet" "$T/saver.err" ||
	fail "saver's refusal does not name the thread: $(cat "$T/saver.err")"
[ ! -e "$T/threaded.ckpt" ] || fail "a refused checkpoint left an image"
now=$(last_tick "$T/threads.out")
wait_line "$T/threads.out" "^tick $((now + 2)) "
kill -0 "$tpid" || fail "the refused process is gone"
exit 0
