#!/usr/bin/env bash
# Each refusal says what really happened (issue 19), in one line, and the
# processes concerned run on: pid 1 (the init process: refused before any
# attach), a thread id (names its process), the same pid twice, a saver
# that finds itself in --tree, `-o ""`, a process that is killed while
# it is being checkpointed (said so, not "permission denied"), another
# user's process (says whose), and a pid that does not exist.
. "$(dirname "$0")/lib.sh"

is_root || fail "this test needs root (nobody's saver against root's process)"
problems=()
problem() { problems+=("$*"); note "problem: $*"; }

# says NAME STATUS REGEX...: the saver's run NAME ($T/NAME.err) exited
# non-zero with one line on stderr that matches every REGEX and none of
# the old catch-all's words
says() {
	local name=$1 st=$2 re
	shift 2
	[ "$st" != 0 ] || problem "$name: exit status 0"
	[ "$(wc -l <"$T/$name.err")" = 1 ] || problem "$name: not one line: $(head -c 600 "$T/$name.err")"
	for re in "$@"; do
		grep -qiE -- "$re" "$T/$name.err" || problem "$name: message lacks /$re/: $(cat "$T/$name.err")"
	done
	if [ "$name" != nobody ] && grep -qiE "yama|already traced by pid $$" "$T/$name.err"; then
		problem "$name: the old misleading message: $(cat "$T/$name.err")"
	fi
}

start "$T/prog.out" "$PROGS/threads" 100000 50
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
# ticking NAME: the threads program still ticks, not stopped
ticking() {
	local n
	n=$(last_tick "$T/prog.out")
	wait_line "$T/prog.out" "^tick $((n + 2)) pid $pid( |$)" 10
	[ "$(stat_field "$pid" 3)" != T ] || problem "$1: left pid $pid stopped"
}

st=0; "$SAVER" -o "$T/img" 1 2>"$T/init.err" || st=$?
says init "$st" "pid 1\b" "init"
[ "$(sed -n 's/^TracerPid:[[:space:]]*//p' /proc/1/status)" = 0 ] || problem "pid 1 is traced"

tid=$(ls "/proc/$pid/task" | grep -vx "$pid" | head -n 1)
st=0; "$SAVER" -o "$T/img" "$tid" 2>"$T/thread.err" || st=$?
says thread "$st" "pid $tid\b" "thread of process $pid\b"
ticking thread

st=0; "$SAVER" -o "$T/img" "$pid" "$pid" 2>"$T/twice.err" || st=$?
says twice "$st" "pid $pid\b" "given twice"
[ "$st" = 2 ] || problem "twice: exit status $st, not 2 (a usage error)"
ticking twice

st=0; "$SAVER" -o "" "$pid" 2>"$T/empty.err" || st=$?
says empty "$st" "empty"
grep -q "renaming" "$T/empty.err" && problem "empty: $(cat "$T/empty.err")"
ticking empty

# a shell that runs the saver on itself with --tree: the saver is in the
# tree it saves; the shell runs on and reports the saver's status
bash -c '"$1" --tree -o "$2" $$ 2>"$3"; echo "saver status $?"' _ "$SAVER" "$T/img" "$T/intree.err" >"$T/intree.out"
grep -q "^saver status [1-9]" "$T/intree.out" || problem "intree: $(cat "$T/intree.out")"
says intree 1 "is this saver" "--tree"

# nobody against root's process: whose it is
chmod 711 "$T"
mkdir "$T/n" && chmod 777 "$T/n"
st=0; "$PROGS/runas" 65534 65534 "$SAVER" -o "$T/n/img" "$pid" 2>"$T/nobody.err" || st=$?
says nobody "$st" "pid $pid\b" "permission denied" "uid 0"
ticking nobody

nopid=$(($(cat /proc/sys/kernel/pid_max) - 1))
while [ -e "/proc/$nopid" ]; do nopid=$((nopid - 1)); done
st=0; "$SAVER" -o "$T/img" "$nopid" 2>"$T/nopid.err" || st=$?
says nopid "$st" "pid $nopid\b" "no such process"

# killed during the checkpoint: the saver writes slowly (compressed, the
# process kept stopped); once it has attached, SIGKILL the process
start "$T/heap.out" "$PROGS/heap" 100000 50
hpid=$PID
wait_line "$T/heap.out" '^tick 3 '
"$SAVER" --no-snapshot --compress=zlib:9 -o "$T/killed.ckpt" "$hpid" 2>"$T/killed.err" &
spid=$!
for ((i = 0; i < 4000; i++)); do
	[ "$(sed -n 's/^TracerPid:[[:space:]]*//p' "/proc/$hpid/status" 2>/dev/null)" = "$spid" ] && break
	kill -0 "$spid" 2>/dev/null || break
	sleep 0.005
done
kill -9 "$hpid"
st=0; wait "$spid" || st=$?
says killed "$st" "pid $hpid\b" "exited during the checkpoint" "signal 9"
[ ! -e "$T/killed.ckpt" ] || problem "killed: an image was left"
ls "$T" | holds 'killed.ckpt.tmp' && problem "killed: a temporary image was left"

ticking end
[ ${#problems[@]} -eq 0 ] || fail "${#problems[@]} problem(s): ${problems[*]}"
exit 0
