#!/usr/bin/env bash
# A process restored in a PID namespace (restart-loader --pid-ns) knows
# itself by that namespace's pids. A saver outside it would record the
# pids it sees: it refuses, before anything changes, in one line naming
# both pids and the way (nsenter); the process runs on. Run in there as
# told, the saver keeps the namespace's pids, and that image restored
# with --pid-ns gives the program the pid it knew: twice round, the
# same pid every tick.
. "$(dirname "$0")/lib.sh"
is_root || fail "this test enters namespaces (nsenter); run it as root"

start "$T/prog.out" "$PROGS/counter" 200 50
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
checkpoint_kill "$pid" "$T/a.ckpt"

# descendant_named PID NAME: the first process called NAME below PID
descendant_named() {
	local c
	for c in $(children_of "$1"); do
		[ "$(cat "/proc/$c/comm" 2>/dev/null)" = "$2" ] && { echo "$c"; return; }
		descendant_named "$c" "$2"
	done
}
# in_ns IMAGE: restart IMAGE with --pid-ns; HOSTPID is the program there
in_ns() {
	local i
	LOADER_ARGS=--pid-ns restart "$1"
	HOSTPID=
	for ((i = 0; i < 100; i++)); do
		HOSTPID=$(descendant_named "$LPID" counter)
		[ -n "$HOSTPID" ] && break
		sleep 0.05
	done
	[ -n "$HOSTPID" ] || fail "no restored counter below the loader of $1"
	STARTED+=("$HOSTPID")
	[ "$(awk '/^NSpid:/ { print $NF }' "/proc/$HOSTPID/status")" = "$pid" ] ||
		fail "restored in a namespace as $(grep NSpid "/proc/$HOSTPID/status"), not pid $pid"
}

in_ns "$T/a.ckpt"
[ "$HOSTPID" != "$pid" ] || fail "the host pid is the saved one: no namespace to test"
n=$(last_tick "$T/prog.out")
saver_refused "$HOSTPID" "pid $HOSTPID: is pid $pid of a PID namespace" \
	"nsenter -t $HOSTPID -p -m"
wait_line "$T/prog.out" "^tick $((n + 3)) "

nsenter -t "$HOSTPID" -p -m "$SAVER" --kill -o "$T/inside.ckpt" "$pid" 2>"$T/inside.err" ||
	fail "saver in the namespace failed: $(cat "$T/inside.err")"
wait "$LPID" 2>/dev/null || true
"$INFO" "$T/inside.ckpt" | grep -q "process 0: pid $pid " ||
	fail "the image has not the namespace's pid $pid: $("$INFO" "$T/inside.ckpt" | grep 'process 0')"
in_ns "$T/inside.ckpt"
wait "$LPID" || fail "the restored program exited with status $?"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
[ "$(pids_in "$T/prog.out")" = "$pid" ] || fail "the program saw other pids: $(pids_in "$T/prog.out" | tr '\n' ' ')"
assert_ticks_continuous "$T/prog.out"
exit 0
