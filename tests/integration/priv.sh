# shellcheck shell=bash
# Sourced after lib.sh by the tests of privileges and sandbox (t_creds,
# t_seccomp, t_strict, t_chroot): a checkpoint and restart cycle, and
# what an ordinary user's run looks like.

# gone PID...: waits until no process has these pids. An orphan that
# saver --kill killed is reaped by init a moment later: its pid is taken
# until then, and the restore would get another one.
gone() {
	local p i
	for p in "$@"; do
		for ((i = 0; i < 200; i++)); do [ -e "/proc/$p" ] || break; sleep 0.05; done
		[ ! -e "/proc/$p" ] || fail "pid $p still there 10 s after saver --kill"
	done
}

# recycle PID IMAGE SAVER-ARGS...: checkpoints PID (SAVER-ARGS include
# --kill), waits until it and its children are gone, restarts IMAGE
# (RPID, LPID) with the same pid as root, and waits for the third tick
# of $T/prog.out past the last one before; the program must not have
# found anything wrong ("FAIL").
recycle() {
	local pid=$1 img=$2 kids before
	shift 2
	kids=$(children_of "$pid")
	checkpoint "$pid" "$img" "$@"
	wait "$pid" 2>/dev/null || true
	[ -z "${LPID:-}" ] || wait "$LPID" 2>/dev/null || true
	gone "$pid" $kids
	before=$(last_tick "$T/prog.out")
	restart "$img"
	expect_pid "$pid" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 3)) "
	if grep -q FAIL "$T/prog.out"; then
		fail "after restoring $img the program found: $(grep FAIL "$T/prog.out")"
	fi
}

# as_nobody DIR BODY: runs the bash script BODY as nobody (65534) in DIR
# (made, and given to nobody), with only fds 0-2; its status.
as_nobody() {
	local dir=$1
	chmod 755 "$T"
	mkdir -p "$dir"
	{
		echo "cd '$dir'"
		echo 'for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ $fd -gt 2 ] && eval "exec $fd>&-"; done'
		echo "$2"
	} >"$dir/job.sh"
	chown -R 65534:65534 "$dir"
	timeout 60 "$PROGS/runas" 65534 65534 bash "$dir/job.sh" </dev/null 3>&-
}

# saver_refuses_nobody PROGRAM-AND-ARGS REGEX DONE: nobody starts the
# program and checkpoints it (--kill) once it ticks: the saver must
# refuse with one line "saver: pid P..." matching REGEX, leave no image,
# and the program must run on to its last line (matching DONE), unharmed.
saver_refuses_nobody() {
	local dir=$T/user rc=0 upid
	as_nobody "$dir" "
$1 >prog.out 2>&1 </dev/null &
pid=\$!
echo \$pid >pid
while ! grep -q '^tick 5 ' prog.out 2>/dev/null; do sleep 0.05; done
\"$SAVER\" --kill -o img.ckpt \$pid 2>saver.err && exit 10
wait \$pid || exit 12" || rc=$?
	[ "$rc" = 0 ] || fail "as a user (status $rc: 10 the saver did not refuse, 12 the program failed): $(cat "$dir"/*.err "$dir/prog.out" 2>/dev/null)"
	upid=$(cat "$dir/pid")
	grep -qE "^saver: pid $upid$2" "$dir/saver.err" ||
		fail "the user's saver did not say why it refused: $(cat "$dir/saver.err")"
	[ "$(wc -l <"$dir/saver.err")" = 1 ] || fail "more than one line: $(cat "$dir/saver.err")"
	[ ! -e "$dir/img.ckpt" ] || fail "a refused checkpoint left an image"
	if grep -q FAIL "$dir/prog.out"; then
		fail "the refused checkpoint harmed the process: $(grep FAIL "$dir/prog.out")"
	fi
	grep -qE "$3" "$dir/prog.out" || fail "after the refusal the program did not finish"
}
