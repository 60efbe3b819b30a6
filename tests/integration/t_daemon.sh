#!/usr/bin/env bash
# A daemon (a session leader without a controlling terminal, as setsid or
# a double fork leaves it) comes back leading its own session again, not
# in restart-loader's session and process group, where the terminal's
# signals (Ctrl-C, hangup) would reach it. A program that was not a
# session leader still joins the loader's group, the terminal's
# foreground. Both restored from the same shell.
. "$(dirname "$0")/lib.sh"

# ids PID: its session, group and terminal, as ps shows them
ids() { ps -o sid=,pgid=,tty= -p "$1" | awk '{ print $1, $2, $3 }'; }

# A background job of a non-interactive shell is no group leader, so
# setsid(1) does not fork: pid, session and group are one.
start "$T/daemon.out" setsid "$PROGS/counter" 100 50
pid=$PID
wait_line "$T/daemon.out" '^tick 3 '
[ "$(ids "$pid")" = "$pid $pid ?" ] || fail "the daemon is not a session leader: $(ids "$pid")"
checkpoint_kill "$pid" "$T/d.ckpt"
LOADER_OUT=$T/dloader.out restart "$T/d.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/daemon.out" "^tick $(( $(last_tick "$T/daemon.out") + 2 )) "
[ "$(ids "$RPID")" = "$RPID $RPID ?" ] ||
	fail "restored daemon: session, group, tty $(ids "$RPID"), loader's $(ids "$LPID")"
kill "$RPID"

start "$T/fg.out" "$PROGS/counter" 100 50
pid=$PID
wait_line "$T/fg.out" '^tick 3 '
checkpoint_kill "$pid" "$T/f.ckpt"
LOADER_OUT=$T/floader.out restart "$T/f.ckpt"
wait_line "$T/fg.out" "^tick $(( $(last_tick "$T/fg.out") + 2 )) "
loader=$(ps -o ppid= -p "$RPID" | tr -d ' ')
[ "$(ps -o sid=,pgid= -p "$RPID")" = "$(ps -o sid=,pgid= -p "$loader")" ] ||
	fail "a restored program that led no session left the loader's group: $(ids "$RPID"), loader's $(ids "$loader")"
exit 0
