#!/usr/bin/env bash
# Periodic checkpoints (issue 19): saver --interval 1 --keep 2 makes
# IMAGE.1, IMAGE.2, ... once a second, keeps the newest two, IMAGE links
# to the newest, and at every moment after the first image there is a
# complete one to restore (each is complete before the link moves and an
# older one goes); the process runs on; SIGTERM ends the series after the
# checkpoint under way (status 0); numbering goes on from the highest;
# the series ends by itself when the process exits; the newest image
# restores. --interval with --kill is a usage error.
. "$(dirname "$0")/lib.sh"

start "$T/prog.out" "$PROGS/counter" 100000 20
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
"$SAVER" --interval 1 --keep 2 -o "$T/c.ckpt" "$pid" 2>"$T/series.err" &
spid=$!
STARTED+=("$spid")
for ((i = 0; i < 600; i++)); do [ -e "$T/c.ckpt" ] && break; sleep 0.05; done
[ -L "$T/c.ckpt" ] || fail "no link $T/c.ckpt after 30 s: $(ls "$T"; cat "$T/series.err")"
# from now on the link always leads to a complete image
for ((i = 0; i < 400; i++)); do
	"$INFO" "$T/c.ckpt" >/dev/null 2>"$T/info.err" ||
		fail "the link led to no complete image at one moment: $(cat "$T/info.err"); $(ls "$T")"
	[ -e "$T/c.ckpt.3" ] && break
	sleep 0.02
done
[ -e "$T/c.ckpt.3" ] || fail "no third image after 8 s: $(ls "$T")"
for ((i = 0; i < 100; i++)); do [ ! -e "$T/c.ckpt.1" ] && break; sleep 0.02; done
[ ! -e "$T/c.ckpt.1" ] || fail "c.ckpt.1 kept with --keep 2: $(ls "$T")"
kill -TERM "$spid"
st=0
wait "$spid" || st=$?
[ "$st" = 0 ] || fail "the series ended with status $st after SIGTERM: $(cat "$T/series.err")"
last=$(readlink "$T/c.ckpt")
case $last in c.ckpt.[0-9]*) ;; *) fail "c.ckpt links to '$last'" ;; esac
n=${last#c.ckpt.}
imgs=$(cd "$T" && ls c.ckpt.[0-9]* | sort -t. -k3 -n | tr '\n' ' ')
[ "$imgs" = "c.ckpt.$((n - 1)) c.ckpt.$n " ] || fail "images left: $imgs (newest $last)"
for f in $imgs; do "$INFO" --verify "$T/$f" >/dev/null 2>&1 || fail "$f does not verify"; done
[ -z "$(ls "$T" | grep '\.tmp\.' || true)" ] || fail "temporary files left: $(ls "$T" | grep '\.tmp\.')"
kill -0 "$pid" || fail "the process is gone"
t=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((t + 3)) pid $pid\$"
# one numbered image more: the next number
"$SAVER" --keep 2 -o "$T/c.ckpt" "$pid" 2>"$T/one.err" || fail "saver --keep: $(cat "$T/one.err")"
[ "$(readlink "$T/c.ckpt")" = "c.ckpt.$((n + 1))" ] || fail "the next image is $(readlink "$T/c.ckpt"), not c.ckpt.$((n + 1))"
[ ! -e "$T/c.ckpt.$((n - 1))" ] || fail "c.ckpt.$((n - 1)) kept"

# the series ends by itself when the process exits
"$SAVER" --interval 1 -o "$T/d.ckpt" "$pid" 2>"$T/d.err" &
dpid=$!
STARTED+=("$dpid")
for ((i = 0; i < 600; i++)); do [ -e "$T/d.ckpt" ] && break; sleep 0.05; done
[ -f "$T/d.ckpt" ] || fail "saver --interval without --keep wrote no $T/d.ckpt"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
for ((i = 0; i < 100; i++)); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$dpid" 2>/dev/null && fail "the series goes on 5 s after its process exited"
grep -q "a process exited" "$T/d.err" || fail "the series did not say why it ended: $(cat "$T/d.err")"

# the newest image restores
n=$(last_tick "$T/prog.out")
restart "$T/c.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((n + 2)) "
grep -q FAIL "$T/prog.out" && fail "program found its memory changed: $(grep FAIL "$T/prog.out")"
st=0
"$SAVER" --interval 5 --kill -o "$T/e.ckpt" "$RPID" 2>/dev/null || st=$?
[ "$st" = 2 ] || fail "--interval with --kill: status $st, not 2"
exit 0
