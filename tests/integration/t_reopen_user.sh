#!/usr/bin/env bash
# An ordinary user's process whose stdout is a root-owned file that root
# opened for it (nobody may not open it itself): `saver --kill` run by
# that user refuses, before the kill, naming pid, fd, path and cause, and
# the program runs on; the image root saves instead is refused by that
# user's restart-loader with a message naming pid and fd.
. "$(dirname "$0")/lib.sh"
is_root || fail "this test drops from root to nobody; run it as root"
chmod 755 "$T"
: >"$T/p.out"
chmod 644 "$T/p.out"	# root's: nobody cannot write it
mkdir "$T/nb"
chown 65534:65534 "$T/nb"
# root opens it, nobody runs with it as stdout
"$PROGS/clean-exec" "$PROGS/runas" 65534 65534 "$PROGS/counter" 1000000 50 </dev/null >"$T/p.out" 2>&1 &
PID=$!
STARTED+=("$PID")
wait_line "$T/p.out" '^tick 3 '
pid=$(sed -n 's/^tick 3 pid \([0-9]*\).*/\1/p' "$T/p.out")
[ "$(stat -c %u "/proc/$pid")" = 65534 ] || fail "the program does not run as nobody"

st=0
as_nobody "$SAVER" --kill -o "$T/nb/img" "$pid" 2>"$T/nb/img.err" || st=$?
[ "$st" = 1 ] || fail "saver as nobody accepted it (status $st)"
[ "$(cat "$T/nb/img.err")" = "saver: pid $pid fd 1: $T/p.out could not be reopened for writing by this user (uid 65534) at a restore: Permission denied (checkpoint it as root, who can)" ] ||
	fail "the refusal is not the one line expected: $(cat "$T/nb/img.err")"
[ ! -e "$T/nb/img" ] || fail "an image was left"
now=$(last_tick "$T/p.out")
wait_line "$T/p.out" "^tick $((now + 2)) "

# root may: it saves; the owner's restore then says which descriptor
checkpoint "$pid" "$T/nb/root.ckpt"
chmod 644 "$T/nb/root.ckpt"
LOADER_ARGS=--new-pids restart_refused "$T/nb/root.ckpt" "pid $pid fd 1: reopening $T/p.out: Permission denied" as_nobody
kill -0 "$pid" || fail "the program did not run on"
exit 0
