#!/usr/bin/env bash
# eventfd, timerfd, signalfd, epoll, inotify, deleted files, O_TMPFILE and
# memfd survive saver --kill, two seconds away and restart-loader
# (tests/progs/fdkinds.c checks each one from inside, to the byte and
# the count). From outside:
# - signals: SIGUSR1 through the signalfd, SIGUSR2 through a handler,
#   before and after: each one reported exactly once;
# - inotify: a file created and one written in the watched directory,
#   before and after: reported once each, with the same watch numbers
#   (wd 1 the directory, wd 3 the file: wd 2 was removed before);
# - timers: a relative one-shot has after the restore the time it had
#   left (the time away does not count), an absolute deadline armed at
#   the first SIGUSR2, just before the checkpoint, fires after the restore
#   on time (the program fails if it is late), the tick timer goes on;
# - the process has the same fds, of the same kinds, the deleted files
#   in the same directory.
# Then all of it again, saved and restored by an unprivileged user.
. "$(dirname "$0")/lib.sh"

TICKS=60 MS=100 ABS_MS=6000 AWAY=3
mkdir "$T/d"
start "$T/prog.out" "$PROGS/fdkinds" "$T/d" $TICKS $MS $ABS_MS
pid=$PID
wait_line "$T/prog.out" '^tick 2 '

kill -USR1 "$pid"
wait_line "$T/prog.out" '^sigfd USR1 #1$' 10
touch "$T/d/w/before"
wait_line "$T/prog.out" '^inotify wd 1 mask 0x100 name before$' 10
echo data >>"$T/d/w/file"
wait_line "$T/prog.out" '^inotify wd 3 mask 0x2 name -$' 10
kill -USR2 "$pid"	# arms the deadline, ABS_MS from now
wait_line "$T/prog.out" '^handler USR2 #1$' 10
n=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((n + 1)) "

links() {
	local fd
	for fd in /proc/$1/fd/*; do
		printf '%s %s\n' "${fd##*/}" "$(readlink "$fd" | sed 's,^\(/.*\)/[^/]* (deleted)$,\1/DELETED,; s/pipe:\[[0-9]*\]/pipe/')"
	done | sort -n
}
links "$pid" >"$T/fds.before"
checkpoint_kill "$pid" "$T/img.ckpt"
for kind in eventfd timerfd sigfd epoll inotify deleted memfd; do
	grep -q "^ *fd [0-9]* *$kind " "$T/info.out" || fail "ckpt-info shows no $kind: $(grep ' fd ' "$T/info.out")"
done
rel_before=$(sed -n 's/^tick .* rel \([0-9]*\) .*/\1/p' "$T/prog.out" | tail -n 1)
before=$(last_tick "$T/prog.out")
sleep $AWAY

restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 1)) "
rel_after=$(sed -n "s/^tick $((before + 1)) .* rel \([0-9]*\) .*/\1/p" "$T/prog.out")
links "$RPID" >"$T/fds.after"
kill -USR1 "$RPID"
wait_line "$T/prog.out" '^sigfd USR1 #2$' 10
kill -USR2 "$RPID"
wait_line "$T/prog.out" '^handler USR2 #2$' 10
touch "$T/d/w/after"
wait_line "$T/prog.out" '^inotify wd 1 mask 0x100 name after$' 10
echo more >>"$T/d/w/file"
wait_line "$T/prog.out" "^tick $(($(last_tick "$T/prog.out") + 2)) "
wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"
[ "$(last_tick "$T/prog.out")" = $((TICKS - 1)) ] || fail "ticks end at $(last_tick "$T/prog.out")"

# exactly once, each
for line in 'sigfd USR1 #1' 'sigfd USR1 #2' 'handler USR2 #1' 'handler USR2 #2' \
	'inotify wd 1 mask 0x100 name before' 'inotify wd 1 mask 0x100 name after'; do
	[ "$(grep -cx "$line" "$T/prog.out")" = 1 ] || fail "'$line' $(grep -cx "$line" "$T/prog.out") times"
done
[ "$(grep -c '^sigfd USR1' "$T/prog.out")" = 2 ] || fail "signalfd reported $(grep -c '^sigfd USR1' "$T/prog.out") signals, not 2"
[ "$(grep -c '^inotify wd 3 mask 0x2 ' "$T/prog.out")" = 2 ] ||
	fail "the watched file's writes were reported $(grep -c '^inotify wd 3 mask 0x2 ' "$T/prog.out") times, not 2"
grep -q '^sigfd total 2 handler total 2$' "$T/prog.out" || fail "signal totals: $(grep total "$T/prog.out")"
grep -qE '^abs fired late_ms [0-9]+$' "$T/prog.out" || fail "the absolute deadline did not fire"
[ "$(grep -n '^abs fired' "$T/prog.out" | cut -d: -f1)" -gt "$(grep -n "^tick $before " "$T/prog.out" | cut -d: -f1)" ] ||
	fail "the deadline fired before the checkpoint (tick $before): too early for the test"

# the relative one-shot lost about one tick across the restore, not the time away
[ $((rel_before - rel_after)) -ge 0 ] && [ $((rel_before - rel_after)) -lt 1500 ] ||
	fail "relative timer: ${rel_before} ms left before, ${rel_after} ms after $AWAY s away"
diff "$T/fds.before" "$T/fds.after" >"$T/fds.diff" || fail "fds changed: $(cat "$T/fds.diff")"

# The same as an unprivileged user: no file handles to find the inotify
# watches' paths by (they are searched for), no chosen pid.
is_root || exit 0
mkdir -p "$T/nobody/d"
chmod 755 "$T"
cat >"$T/nobody/job.sh" <<EOS
cd "$T/nobody"
"$PROGS/clean-exec" "$PROGS/fdkinds" "$T/nobody/d" 30 100 2500 </dev/null >prog.out 2>&1 &
pid=\$!
while ! grep -q '^tick 5 ' prog.out 2>/dev/null; do sleep 0.05; done
"$SAVER" --kill -o img.ckpt \$pid 2>saver.err || exit 10
wait \$pid
"$LOADER" --new-pids img.ckpt 2>loader.err || exit 11
EOS
chown -R 65534:65534 "$T/nobody"
timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups bash "$T/nobody/job.sh" </dev/null 3>&- ||
	fail "unprivileged checkpoint/restart failed (status $?: 10 saver, 11 loader): $(cat "$T"/nobody/*.err 2>/dev/null)"
grep -q FAIL "$T/nobody/prog.out" && fail "unprivileged: $(grep FAIL "$T/nobody/prog.out")"
grep -q '^DONE' "$T/nobody/prog.out" || fail "unprivileged: fdkinds did not finish"
assert_ticks_continuous "$T/nobody/prog.out"
[ "$(pids_in "$T/nobody/prog.out" | wc -l)" = 2 ] || fail "unprivileged: no restore happened"
exit 0
