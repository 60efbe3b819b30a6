#!/usr/bin/env bash
# Terminals above fd 2:
# - tests/progs/ttyfd on a terminal (script(1)) holds fd 3 (/dev/tty),
#   fd 10 (the terminal by name) and fd 255 (a dup of fd 2, as bash's);
#   saver refuses fds 3 and 10 (terminals outside the image that are not
#   std streams: restart-loader may have no terminal to give), naming the
#   option, and the program runs on; with --external-fd 3:tty and 10:tty
#   it saves them as restart-loader's controlling terminal, fd 255 as a
#   copy of fd 2; after --kill, restart-loader without a controlling
#   terminal refuses, saying so, and nothing runs; on another terminal it
#   goes on, writing through all three onto the new terminal, fd 255
#   still sharing fd 2's open file description, and finishes;
# - an interactive bash (-i, with its fd 255) running a loop of builtins
#   on a terminal does the same.
. "$(dirname "$0")/lib.sh"

# on_tty OUT CMD...: CMD on a new terminal of its own (its controlling
# terminal), in the background; what it writes there goes to OUT.
on_tty() {
	local out=$1
	shift
	# script(1) runs the command with $SHELL, which may be dash (no $'...')
	SHELL=/bin/bash script -qfec "$(printf '%q ' "$PROGS/clean-exec" "$@")" /dev/null </dev/null >"$out" 2>&1 &
	SPID=$!
	STARTED+=("$SPID")
}

# strip OUT...: the lines without the terminal's carriage returns.
strip() { tr -d '\r' <"$1"; }

TICKS=60
on_tty "$T/tty1.out" "$PROGS/ttyfd" "$T/pid" $TICKS 100
wait_line "$T/tty1.out" $'^fd255 3\r?$'
pid=$(cat "$T/pid")
STARTED+=("$pid")
[ "$(readlink "/proc/$pid/fd/3")" = /dev/tty ] || fail "fd 3 is $(readlink "/proc/$pid/fd/3")"
st=0
"$SAVER" --kill -o "$T/refused.ckpt" "$pid" 2>"$T/refused.err" || st=$?
[ $st = 1 ] || fail "saver accepted terminals above fd 2 without --external-fd (status $st)"
[ "$(wc -l <"$T/refused.err")" = 1 ] || fail "not one line: $(cat "$T/refused.err")"
grep -q "pid $pid fd 3: terminal (/dev/tty) leads outside .*--external-fd 3:close|null|inherit|tty" "$T/refused.err" ||
	fail "the refusal does not name fd 3 and the option: $(cat "$T/refused.err")"
[ ! -e "$T/refused.ckpt" ] || fail "an image was left"
n=$(strip "$T/tty1.out" | sed -n 's/^fd255 \([0-9]*\)$/\1/p' | tail -n 1)
wait_line "$T/tty1.out" $'^fd255 '$((n + 2))$'\r?$'
checkpoint "$pid" "$T/img.ckpt" --kill --external-fd 3:tty --external-fd "$pid:10:tty"
wait "$pid" 2>/dev/null || true
for fd in 3 10; do
	grep -qE "^ *fd $fd +extern .*restored as restart-loader's terminal" "$T/info.out" ||
		fail "fd $fd is not saved as the loader's terminal: $(grep ' fd ' "$T/info.out")"
done
grep -qE "^ *fd 255 +stdio " "$T/info.out" || fail "fd 255 does not follow fd 2: $(grep ' fd ' "$T/info.out")"
wait "$SPID" 2>/dev/null || true
strip "$T/tty1.out" >"$T/first.out"
before=$(last_tick "$T/first.out")

# no controlling terminal: refused, with the reason
st=0
setsid -w "$LOADER" "$T/img.ckpt" </dev/null >"$T/notty.out" 2>&1 || st=$?
[ $st = 1 ] || fail "restart-loader without a terminal: status $st ($(cat "$T/notty.out"))"
grep -q "controlling terminal" "$T/notty.out" && grep -q "/dev/tty" "$T/notty.out" ||
	fail "restart-loader without a terminal did not say why: $(cat "$T/notty.out")"
grep -q "^tick" "$T/notty.out" && fail "the process ran without its terminal"

on_tty "$T/tty2.out" "$LOADER" "$T/img.ckpt"
wait_line "$T/tty2.out" $'^fd255 '$((before + 3))$'\r?$'
wait "$SPID" || fail "restored ttyfd (through script) exited with status $?: $(strip "$T/tty2.out" | tail -n 3)"
strip "$T/tty2.out" >"$T/second.out"
grep -q FAIL "$T/second.out" && fail "$(grep FAIL "$T/second.out")"
grep -q '^DONE' "$T/second.out" || fail "ttyfd did not finish: $(tail -n 3 "$T/second.out")"
for fd in 3 10 255; do
	grep -qx "fd$fd $((TICKS - 1))" "$T/second.out" || fail "nothing came through fd $fd after the restore"
done
cat "$T/first.out" "$T/second.out" >"$T/all.out"
assert_ticks_continuous "$T/all.out"

# bash -i: its fd 255 is a dup of its terminal
on_tty "$T/bash1.out" /bin/bash --norc --noprofile -i -c '
echo $$ >'"$T"'/bpid
n=0 i=0
while ((n < 50)); do
	((i++))
	if ((i % 20000 == 0)); then echo "tick $n pid $$"; ((n++)); fi
done
echo "DONE pid $$"'
wait_line "$T/bash1.out" '^tick 3 '
bpid=$(cat "$T/bpid")
STARTED+=("$bpid")
[ -e "/proc/$bpid/fd/255" ] || fail "bash -i has no fd 255: $(ls -l "/proc/$bpid/fd")"
checkpoint_kill "$bpid" "$T/bash.ckpt"
wait "$SPID" 2>/dev/null || true
strip "$T/bash1.out" >"$T/bfirst.out"
before=$(last_tick "$T/bfirst.out")
on_tty "$T/bash2.out" "$LOADER" "$T/bash.ckpt"
wait_line "$T/bash2.out" "^tick $((before + 3)) "
wait "$SPID" || fail "restored bash -i exited with status $?: $(strip "$T/bash2.out" | tail -n 3)"
strip "$T/bash2.out" >"$T/bsecond.out"
grep -q '^DONE' "$T/bsecond.out" || fail "bash -i did not finish: $(tail -n 3 "$T/bsecond.out")"
cat "$T/bfirst.out" "$T/bsecond.out" >"$T/ball.out"
assert_ticks_continuous "$T/ball.out"
exit 0
