#!/usr/bin/env bash
# Terminals above fd 2 come back as restart-loader's controlling terminal:
# - tests/progs/ttyfd on a terminal (script(1)) holds fd 3 (/dev/tty),
#   fd 10 (the terminal by name) and fd 255 (a dup of fd 2, as bash's);
#   after saver --kill, restart-loader without a controlling terminal
#   refuses, saying so, and nothing runs; on another terminal it goes on,
#   writing through all three onto the new terminal, fd 255 still sharing
#   fd 2's open file description, and finishes;
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
checkpoint_kill "$pid" "$T/img.ckpt"
for fd in 3 10 255; do
	grep -qE "^ *fd $fd +tty " "$T/info.out" || fail "fd $fd is not saved as a terminal: $(grep ' fd ' "$T/info.out")"
done
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
