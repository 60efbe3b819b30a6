#!/usr/bin/env bash
# restart-loader --detach returns (status 0) once the restored process
# runs, and the process runs on, reparented (the loader is gone); its
# fds 0-2 that led outside are the loader's, as without --detach.
# --pidfile gets its pid; --log gets the loader's own messages (a pid in
# use) while the restored process's stderr stays the caller's; -vv adds
# each step; a restore that fails under --detach still says so (status 1).
. "$(dirname "$0")/lib.sh"

is_root || fail "this test needs root (the original pid)"
# fds 1 and 2 a pipe to a process outside: rebound to the loader's own
start "$T/prog.out" sh -c "\"$PROGS/counter\" 100000 20 2>&1 | cat"
wait_line "$T/prog.out" '^tick 3 '
pid=$(pids_in "$T/prog.out")
"$SAVER" --kill -o "$T/img.ckpt" "$pid" 2>"$T/saver.err" || fail "saver --kill failed: $(cat "$T/saver.err")"

st=0
timeout 60 "$LOADER" --detach --pidfile "$T/pid" --log "$T/log" -vv "$T/img.ckpt" \
	</dev/null >"$T/r.out" 2>"$T/r.err" || st=$?
[ "$st" = 0 ] || fail "--detach: status $st: $(cat "$T/r.err" "$T/log")"
rpid=$(cat "$T/pid") || fail "--pidfile: no $T/pid"
STARTED+=("$rpid")
[ "$rpid" = "$pid" ] || fail "--pidfile says $rpid, the process was $pid"
[ -d "/proc/$rpid" ] || fail "the restored process $rpid is not running"
[ "$(ppid_of "$rpid")" != "$$" ] || fail "the restored process is the test's child?"
loader_gone=1
for c in $(children_of "$$"); do [ "$(cat "/proc/$c/comm" 2>/dev/null)" = restart-loader ] && loader_gone=; done
[ -n "$loader_gone" ] || fail "a restart-loader is still running"
wait_line "$T/r.out" "^tick [0-9]+ pid $rpid\$"
n=$(last_tick "$T/r.out")
wait_line "$T/r.out" "^tick $((n + 3)) pid $rpid\$"
[ "$(readlink "/proc/$rpid/fd/1")" = "$T/r.out" ] || fail "fd 1 is $(readlink "/proc/$rpid/fd/1"), not the loader's"
[ "$(readlink "/proc/$rpid/fd/2")" = "$T/r.err" ] || fail "fd 2 is $(readlink "/proc/$rpid/fd/2"), not the caller's stderr"
grep -q 'trace:' "$T/log" || fail "-vv --log: no steps in the log: $(head -c 300 "$T/log")"
[ ! -s "$T/r.err" ] || fail "the loader wrote on the caller's stderr with --log: $(head -c 300 "$T/r.err")"

# the pid in use now (by the detached one): refused, said in the log;
# with --new-pids a new one, said in the log, once
checkpoint "$rpid" "$T/img2.ckpt"
st=0
timeout 60 "$LOADER" --detach --log "$T/log1" "$T/img2.ckpt" </dev/null >"$T/r1.out" 2>"$T/r1.err" || st=$?
[ "$st" = 1 ] || fail "--detach onto a pid in use: status $st, not 1: $(cat "$T/r1.err" "$T/log1")"
holds -F "pid $rpid (counter) is in use by a process, 'counter'" <"$T/log1" ||
	fail "the log does not say the pid is in use: $(cat "$T/log1")"
st=0
timeout 60 "$LOADER" --detach --new-pids --pidfile "$T/pid2" --log "$T/log2" "$T/img2.ckpt" \
	</dev/null >"$T/r2.out" 2>"$T/r2.err" || st=$?
[ "$st" = 0 ] || fail "second --detach: status $st: $(cat "$T/r2.err" "$T/log2")"
rpid2=$(cat "$T/pid2")
STARTED+=("$rpid2")
[ "$rpid2" != "$rpid" ] || fail "restored with a pid in use?"
[ "$(grep -c "pid $rpid (counter) is in use.*restored as pid $rpid2 (--new-pids)" "$T/log2")" = 1 ] ||
	fail "the log does not say the pid changed, once: $(cat "$T/log2")"
[ ! -s "$T/r2.err" ] || fail "the message went to stderr, not the log: $(cat "$T/r2.err")"
kill -9 "$rpid" "$rpid2"

# a failed restore: status 1, said, nothing running, no pidfile
cp "$T/img.ckpt" "$T/bad.ckpt"
"$PROGS/imgtool" flip "$T/bad.ckpt" PROC >/dev/null || fail "imgtool flip failed"
st=0
timeout 60 "$LOADER" --detach --pidfile "$T/pid3" "$T/bad.ckpt" </dev/null >/dev/null 2>"$T/bad.err" || st=$?
[ "$st" = 1 ] || fail "--detach of a damaged image: status $st, not 1"
[ -s "$T/bad.err" ] || fail "--detach of a damaged image said nothing"
[ ! -e "$T/pid3" ] || fail "a pidfile for a failed restore"
exit 0
