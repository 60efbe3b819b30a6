#!/usr/bin/env bash
# Progress of long work (issue 19): a save, a --verify and a restore show
# on a terminal how much is done of how much, the rate and the time left,
# on one line rewritten in place and cleared at the end; nothing when
# stderr is a file or a pipe, unless --progress asks (then lines); never
# with --no-progress. (The terminal is a pty made by script(1); the
# first second without output is shortened by IBCR_PROGRESS_DELAY_MS.)
. "$(dirname "$0")/lib.sh"

command -v script >/dev/null || fail "script(1) is needed (util-linux; tools/deps.sh check)"
export IBCR_PROGRESS_DELAY_MS=0
start "$T/prog.out" "$PROGS/bigmem" 512 20
pid=$PID
wait_line "$T/prog.out" '^tick 3 ' 60
# on_tty OUT CMD...: runs CMD with a terminal as stdin, stdout and stderr
on_tty() {
	local out=$1
	shift
	script -q -e -c "$(printf '%q ' "$@")" /dev/null </dev/null >"$out" 2>&1
}
# shows OUT PROG WHAT: OUT has a progress report, rewritten in place
shows() {
	grep -qaE "^?.*$2: $3 [0-9]+ MiB of [0-9]+ MiB \([0-9]+%\), [0-9]+ MiB/s" "$1" ||
		fail "$2 on a terminal: no progress: $(tr '\r\033' '|E' <"$1" | head -c 400)"
	grep -qa $'\r' "$1" || fail "$2 on a terminal: the report is not rewritten in place (no CR)"
	grep -qa $'\r\033\[K' "$1" || fail "$2 on a terminal: the report is not cleared at the end"
}

on_tty "$T/tty.out" "$SAVER" -o "$T/img.ckpt" "$pid" || fail "saver on a terminal failed: $(cat "$T/tty.out")"
shows "$T/tty.out" saver saved
"$SAVER" -o "$T/img2.ckpt" "$pid" 2>"$T/pipe.err" || fail "saver failed: $(cat "$T/pipe.err")"
[ ! -s "$T/pipe.err" ] || fail "saver printed on a file: $(head -c 300 "$T/pipe.err")"
"$SAVER" --progress -o "$T/img3.ckpt" "$pid" 2>&1 | cat >"$T/asked.err"
grep -qE '^saver: saved [0-9]+ MiB of [0-9]+ MiB \(100%\), [0-9]+ MiB/s$' "$T/asked.err" ||
	fail "saver --progress on a pipe: no final line: $(head -c 300 "$T/asked.err")"
grep -q $'\r' "$T/asked.err" && fail "saver --progress on a pipe rewrites lines"
on_tty "$T/quiet.out" "$SAVER" --no-progress -o "$T/img4.ckpt" "$pid" || fail "saver --no-progress failed"
grep -qa 'saved' "$T/quiet.out" && fail "saver --no-progress showed progress: $(head -c 300 "$T/quiet.out")"

on_tty "$T/verify.out" "$INFO" --verify "$T/img.ckpt" || fail "ckpt-info --verify failed: $(tail -n 3 "$T/verify.out")"
shows "$T/verify.out" ckpt-info verified
"$INFO" --verify "$T/img.ckpt" 2>"$T/verify.err" >/dev/null || fail "ckpt-info --verify failed"
[ ! -s "$T/verify.err" ] || fail "ckpt-info printed on a file: $(head -c 300 "$T/verify.err")"

# a restore on a terminal: the restored program (a few ticks, then DONE)
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
start "$T/short.out" "$PROGS/bigmem" 512 20 10
wait_line "$T/short.out" '^tick 3 ' 60
checkpoint_kill "$PID" "$T/short.ckpt"
IBCR_NO_UFFD=1 on_tty "$T/restore.out" "$LOADER" "$T/short.ckpt" ||
	fail "restart-loader on a terminal failed: $(tail -n 3 "$T/restore.out")"
shows "$T/restore.out" restart-loader restored
wait_line "$T/short.out" '^DONE' 60
IBCR_NO_UFFD=1 "$LOADER" "$T/short.ckpt" 2>"$T/restore.err" >/dev/null </dev/null ||
	fail "restart-loader failed: $(cat "$T/restore.err")"
grep -q restored "$T/restore.err" && fail "restart-loader printed progress on a file: $(head -c 300 "$T/restore.err")"
exit 0
