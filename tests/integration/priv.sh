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

# two_cycles STATE SAVER-ARGS...: two cycles (recycle) of $pid, each
# image $T/imgN.ckpt; after each, STATE RPID (a function printing what
# the test is about) must print what it printed into $T/state.before.
# $pid ends as the restored process.
two_cycles() {
	local state=$1 cycle
	shift
	for cycle in 1 2; do
		recycle "$pid" "$T/img$cycle.ckpt" "$@"
		"$state" "$RPID" >"$T/state.after$cycle"
		diff "$T/state.before" "$T/state.after$cycle" >"$T/state.diff" ||
			fail "cycle $cycle: $state changed: $(cat "$T/state.diff")"
		pid=$RPID
	done
}

# saver_refuses_nobody PROGRAM ARGS...: nobody runs the program, which
# prints "tick N" lines into $T/user.out, and checkpoints it (--kill) once
# it ticks: the saver must refuse with one line "saver: pid P..." matching
# $REFUSAL, leave no image, and the program must run on to a last line
# matching $DONE, unharmed.
saver_refuses_nobody() {
	local rc=0 upid
	for_nobody
	: >"$T/user.out"
	chmod 666 "$T/user.out"
	start "$T/user.out" "$PROGS/runas" 65534 65534 "$@"
	upid=$PID
	wait_line "$T/user.out" '^tick 5 '
	as_nobody "$SAVER" --kill -o "$T/user.ckpt" "$upid" 2>"$T/user-saver.err" || rc=$?
	[ "$rc" = 1 ] || fail "the user's saver: exit status $rc, not 1 (a refusal): $(cat "$T/user-saver.err")"
	grep -qE "^saver: pid $upid$REFUSAL" "$T/user-saver.err" ||
		fail "the user's saver did not say why it refused: $(cat "$T/user-saver.err")"
	[ "$(wc -l <"$T/user-saver.err")" = 1 ] || fail "more than one line: $(cat "$T/user-saver.err")"
	[ ! -e "$T/user.ckpt" ] || fail "a refused checkpoint left an image"
	wait "$upid" || fail "after the refusal the program exited with status $?: $(tail -n 3 "$T/user.out")"
	if grep -q FAIL "$T/user.out"; then
		fail "the refused checkpoint harmed the process: $(grep FAIL "$T/user.out")"
	fi
	grep -qE "$DONE" "$T/user.out" || fail "after the refusal the program did not finish"
}
