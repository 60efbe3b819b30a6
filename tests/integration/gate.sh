# shellcheck shell=bash
# Sourced by tests of programs that check their own state after a restore
# (tests/progs/gate.h): gate_mode PROG MODE [live] [SAVER-ARGS...] runs
# PROG MODE once without a checkpoint (its checks pass as such), then
# again, checkpointed (with --kill, or live: the original goes on through
# its checks, then is gone) and restored; the restored process must pass
# its checks. The image's ckpt-info is left in $GATE_DIR/info.
gate_mode() {
	local prog=$1 mode=$2 live= d pid kids k
	shift 2
	[ "${1:-}" = live ] && { live=1; shift; }
	GATE_DIR="$T/$prog.$mode${live:+.live}"
	d=$GATE_DIR
	mkdir "$d" "$d.plain"
	cd "$d.plain"
	start "$d.plain/out" "$PROGS/$prog" "$mode"
	wait_line "$d.plain/out" '^ready '
	touch go
	wait "$PID" || fail "$mode without a checkpoint: $(cat "$d.plain/out")"
	cd "$d"
	start "$d/out" "$PROGS/$prog" "$mode"
	pid=$PID
	wait_line "$d/out" '^ready '
	kids=$(children_of "$pid")
	if [ -n "$live" ]; then
		checkpoint "$pid" "$d/img" "$@"
		touch go
		wait "$pid" || fail "$mode: the original failed after a live checkpoint: $(tail -n 3 "$d/out")"
		rm go
	else
		checkpoint "$pid" "$d/img" --kill "$@"
		wait "$pid" 2>/dev/null || true
	fi
	cp "$T/info.out" "$d/info"
	for k in $kids; do	# killed too (--tree), or reaped: its pid free again
		while [ -e "/proc/$k" ]; do sleep 0.05; done
	done
	restart "$d/img"
	expect_pid "$pid" "$RPID"
	touch go
	wait "$LPID" || fail "$prog $mode${live:+ live}: restored program failed (status $?): $(cat "$T/loader.out"; tail -n 3 "$d/out")"
	grep -q "^DONE pid $RPID" "$d/out" || fail "$prog $mode: the restored program did not finish: $(tail -n 3 "$d/out")"
	cd "$T"
}

# saver_refuses IMAGE REGEX SAVER-ARGS...: saver with those arguments
# fails, in one line (warnings aside) that matches REGEX (grep -E), and
# leaves no image. The caller then checks that the process runs on.
saver_refuses() {
	local img=$1 re=$2 st=0
	shift 2
	"$SAVER" -o "$img" "$@" 2>"$img.err" || st=$?
	[ $st = 1 ] || fail "saver $* accepted it (status $st)"
	[ "$(grep -vc '^saver: warning' "$img.err")" = 1 ] || fail "not one line: $(cat "$img.err")"
	grep -qE -- "$re" "$img.err" || fail "the refusal does not say /$re/: $(cat "$img.err")"
	[ ! -e "$img" ] || fail "an image was left"
}

# gate_mode_nobody PROG MODE [SAVER-ARGS...]: the same as an unprivileged
# user (nobody): checkpointed with --kill and restored by that user, no
# chosen pid (--new-pids). The restored process must pass its checks.
gate_mode_nobody() {
	local prog=$1 mode=$2 d
	shift 2
	is_root || fail "gate_mode_nobody drops from root to nobody; run it as root"
	d="$T/nobody.$prog.$mode"
	mkdir -p "$d"
	chmod 755 "$T"
	cat >"$d/job.sh" <<EOS
cd "$d"
"$PROGS/clean-exec" "$PROGS/$prog" $mode </dev/null >out 2>&1 &
pid=\$!
while ! grep -q '^ready ' out 2>/dev/null; do sleep 0.05; done
"$SAVER" --kill -o img $* \$pid 2>saver.err || exit 10
wait \$pid
touch go
"$LOADER" --new-pids img 2>loader.err || exit 11
EOS
	chown -R 65534:65534 "$d"
	timeout 120 "$PROGS/runas" 65534 65534 bash "$d/job.sh" </dev/null 3>&- ||
		fail "nobody: $prog $mode: checkpoint/restart failed (status $?: 10 saver, 11 loader or program): $(cat "$d"/*.err; tail -n 3 "$d/out")"
	[ "$(grep -c '^DONE pid' "$d/out")" = 1 ] || fail "nobody: $prog $mode did not finish once: $(tail -n 3 "$d/out")"
	[ "$(sed -n 's/^ready pid //p' "$d/out")" != "$(sed -n 's/^DONE pid //p' "$d/out")" ] ||
		fail "nobody: $prog $mode: no restore happened (same pid)"
}
