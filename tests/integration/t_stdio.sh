#!/usr/bin/env bash
# Descriptors after saver --kill and restart-loader:
# - stdout was a pipe to another process: the restored output comes out
#   on restart-loader's own stdout, the ticks going on from the pipe's;
# - a file open at an offset is written on at that offset (the file is
#   exactly the expected bytes), an O_APPEND file stays in append mode
#   (its writes land after a line added while the process was gone), an
#   O_DIRECT descriptor keeps O_DIRECT and reads;
# - a descriptor the loader itself inherited (fd 7) does not leak into
#   the restored process, which has exactly the fds it had.
. "$(dirname "$0")/lib.sh"

TICKS=50 OFFSET=1000 SIZE=8192
head -c $SIZE /dev/zero | tr '\0' . >"$T/data"
echo header >"$T/app"

# The program's stdout is a pipe read by cat, stderr a file.
exec {pw}> >(exec cat >"$T/pipe.out")
catpid=$!
(
	for fd in /proc/$BASHPID/fd/*; do
		fd=${fd##*/}
		[ "$fd" -gt 2 ] && [ "$fd" != "$pw" ] && eval "exec $fd>&-"
	done
	exec "$PROGS/stdio" $TICKS 100 "$T/data" $OFFSET "$T/app" </dev/null >&$pw 2>"$T/prog.err" {pw}>&-
) &
pid=$!
STARTED+=("$pid" "$catpid")
exec {pw}>&-	# cat sees EOF once the program is gone
wait_line "$T/pipe.out" '^tick 5 '
# a file system that takes O_DIRECT (the host's; the arm64 guest's tmpfs
# on a 6.1 kernel does not) must give the restored descriptor O_DIRECT too
if [ "$(uname -m)" = x86_64 ]; then
	grep -qx 'direct on' "$T/pipe.out" || fail "no O_DIRECT descriptor: $(grep direct "$T/pipe.out")"
fi
[[ $(readlink "/proc/$pid/fd/1") == pipe:* ]] || fail "stdout of $pid is not a pipe: $(readlink "/proc/$pid/fd/1")"
ls "/proc/$pid/fd" >"$T/fds.before"
maps "$pid" >"$T/maps.before"
checkpoint_kill "$pid" "$T/img.ckpt"
wait "$catpid" || true
before=$(last_tick "$T/pipe.out")
# another writer appends while the process is gone
napp=$(grep -c '^app ' "$T/app")
echo external >>"$T/app"

# restart-loader with an extra descriptor of its own, fd 7
exec 7>"$T/stray"
LOADER_OUT=$T/loader.out LOADER_ERR=$T/loader.err LOADER_KEEP_FD=7 restart "$T/img.ckpt"
exec 7>&-
expect_pid "$pid" "$RPID"
wait_line "$T/loader.out" "^tick $((before + 3)) "
[ "$(readlink "/proc/$RPID/fd/1")" = "$T/loader.out" ] ||
	fail "restored stdout is $(readlink "/proc/$RPID/fd/1"), not the loader's ($T/loader.out)"
ls "/proc/$RPID/fd" >"$T/fds.after"
maps "$RPID" >"$T/maps.after"
wait "$LPID" || fail "restored program exited with status $? ($(cat "$T/loader.err"))"
grep -q FAIL "$T/pipe.out" "$T/loader.out" && fail "program found its files changed: $(cat "$T/pipe.out" "$T/loader.out" | grep FAIL)"
grep -q '^DONE' "$T/loader.out" || fail "program did not finish on the loader's stdout"
[ -s "$T/loader.err" ] && fail "restart-loader said: $(cat "$T/loader.err")"
cat "$T/pipe.out" "$T/loader.out" >"$T/all.out"
assert_ticks_continuous "$T/all.out"
[ "$(last_tick "$T/all.out")" = $((TICKS - 1)) ] || fail "ticks end at $(last_tick "$T/all.out")"

# the data file: its dots with the records from OFFSET on, nothing else
{
	head -c $OFFSET /dev/zero | tr '\0' .
	for ((n = 0; n < TICKS; n++)); do printf 'rec %04d\n' $n; done
	head -c $((SIZE - OFFSET - TICKS * 9)) /dev/zero | tr '\0' .
} >"$T/data.want"
cmp "$T/data" "$T/data.want" >"$T/cmp.out" 2>&1 || fail "data file differs: $(cat "$T/cmp.out")"
# the append file: every write at the end, after the external line
{
	echo header
	for ((n = 0; n < napp; n++)); do echo "app $n"; done
	echo external
	for ((n = napp; n < TICKS; n++)); do echo "app $n"; done
} >"$T/app.want"
diff "$T/app.want" "$T/app" >"$T/app.diff" || fail "append file differs: $(cat "$T/app.diff")"
# last, so that the checks above run even when these fail
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "memory layout changed: $(cat "$T/maps.diff")"
grep -qx 7 "$T/fds.after" && fail "the restored process had the loader's own fd 7 ($T/stray)"
diff "$T/fds.before" "$T/fds.after" >"$T/fds.diff" || fail "open fds changed: $(cat "$T/fds.diff")"
exit 0
