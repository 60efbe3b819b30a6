#!/usr/bin/env bash
# Zombies come back with the very status wait(2) gave for them: exited
# with a code, killed by SIGTERM and by SIGKILL, dead of SIGSEGV without
# a core dump (tests/progs/zombiesig reaps each after the restore and
# checks it bit for bit). A zombie that dumped core is refused at
# checkpoint (its status cannot be made again without dumping core),
# in one line, and the process runs on. Making a zombie that died by a
# signal once killed restart-loader itself (the signal went to the
# loader's thread: musl's cached TID is stale after the raw clone3).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gate.sh"

mkdir "$T/z" && cd "$T/z"
start "$T/z/out" "$PROGS/zombiesig"
pid=$PID
wait_line "$T/z/out" '^ready '
kids=$(children_of "$pid")
[ "$(echo $kids | wc -w)" = 4 ] || fail "zombies has not 4 children"
checkpoint "$pid" "$T/z/img" --tree --kill
wait "$pid" 2>/dev/null || true
for k in $kids; do	# reaped by init now: their pids free again
	while [ -e "/proc/$k" ]; do sleep 0.05; done
done
[ "$(grep -c "^  zombie, wait status" "$T/info.out")" = 4 ] || fail "the image has not 4 zombies: $(cat "$T/info.out")"
restart "$T/z/img"
expect_pid "$pid" "$RPID"
touch go
st=0
wait "$LPID" || st=$?
[ $st = 0 ] || fail "restart-loader exited with status $st: $(cat "$T/loader.out"; tail -n 3 "$T/z/out")"
grep -q "^DONE pid $RPID" "$T/z/out" || fail "the restored parent did not finish: $(tail -n 3 "$T/z/out")"
[ "$(grep -c '^child .* status ' "$T/z/out")" = 4 ] || fail "not 4 children reaped"

# a zombie that dumped core
mkdir "$T/c" && cd "$T/c"
start "$T/c/out" "$PROGS/zombiesig" core
pid=$PID
wait_line "$T/c/out" '^ready '
z=$(children_of "$pid")
code=$(stat_field "$z" 52)
[ $((code & 0x80)) != 0 ] || fail "could not make a zombie that dumped core here (exit code $code)"
saver_refuses "$T/c/img" "pid $z: .*dumped core" --tree --kill "$pid"
touch go
wait "$pid" || fail "the refused process did not run on: $(tail -n 2 "$T/c/out")"
grep -q "^DONE pid $pid" "$T/c/out" || fail "the refused process did not finish"
exit 0
