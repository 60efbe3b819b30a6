#!/usr/bin/env bash
# Descriptors above fd 2 that lead outside the image (tests/progs/outside:
# a pipe to a helper process that is not checkpointed):
# - without a word, saver refuses, in one line naming pid, fd and the
#   option --external-fd, and the program runs on, its pipe intact;
# - --external-fd FD:close, FD:null, FD:inherit (restart-loader's own fd
#   FD, here a file the test reads) and PID:FD:null each come back as
#   said (the program checks from inside);
# - a pipe that is also the process's fd 2 follows it: fd FD shares the
#   restarted fd 2 (the loader's stderr), no option needed;
# - an image with FD:inherit restored by a restart-loader without fd FD
#   is refused before anything runs, saying which fd.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gate.sh"

FD=9
# prog MODE: starts outside in its own directory; PID, DIR
prog() {
	DIR="$T/$1.$2" && mkdir "$DIR" && cd "$DIR"
	start "$DIR/out" "$PROGS/outside" "$1" $FD
	wait_line "$DIR/out" '^ready '
	wait_line "$DIR/helper.out" '^before$'
}

# restored MODE: restart, go, the program finished
restored() {
	restart "$DIR/img"
	touch "$DIR/go"
	wait "$LPID" || fail "$1: restored program failed (status $?): $(cat "$T/loader.out"; tail -n 2 "$DIR/out")"
	grep -q "^DONE pid $RPID" "$DIR/out" || fail "$1: the restored program did not finish: $(tail -n 2 "$DIR/out")"
}

prog none 1
pid=$PID
saver_refuses "$DIR/img" "pid $pid fd $FD: pipe \\(pipe:\\[[0-9]+\\]\\) leads to a process outside the checkpoint; saver --external-fd $FD:close\\|null\\|inherit\\|tty" --kill "$pid"
touch go
wait "$pid" || fail "the refused program did not run on: $(tail -n 2 "$DIR/out")"
wait_line "$DIR/helper.out" '^after$' 10	# the helper copies it in its own time

for spec in close null; do
	prog $spec 1
	checkpoint "$PID" "$DIR/img" --kill --external-fd $FD:$spec
	wait "$PID" 2>/dev/null || true
	restored $spec
done
prog null 2
checkpoint "$PID" "$DIR/img" --kill --external-fd "$PID:$FD:null"
wait "$PID" 2>/dev/null || true
restored "PID:FD:null"

prog inherit 1
checkpoint "$PID" "$DIR/img" --kill --external-fd $FD:inherit
wait "$PID" 2>/dev/null || true
grep -qE "^ *fd $FD +extern .*restored as restart-loader's own" "$T/info.out" ||
	fail "fd $FD is not saved as inherited: $(grep ' fd ' "$T/info.out")"
st=0
timeout 30 "$LOADER" "$DIR/img" >"$DIR/noinherit.out" 2>&1 || st=$?
[ $st = 1 ] || fail "restart-loader without fd $FD: status $st ($(cat "$DIR/noinherit.out"))"
grep -q "fd $FD .*restart-loader's own fd $FD .*which it does not have" "$DIR/noinherit.out" ||
	fail "restart-loader without fd $FD did not say so: $(cat "$DIR/noinherit.out")"
grep -q '^checking' "$DIR/out" && fail "the program ran without its fd"
eval "exec $FD>\"\$DIR/inherited.txt\""
LOADER_KEEP_FD=$FD restored inherit
eval "exec $FD>&-"
grep -qx "inherited by $RPID" "$DIR/inherited.txt" || fail "nothing came through the inherited fd: $(cat "$DIR/inherited.txt")"

prog std 1
checkpoint "$PID" "$DIR/img" --kill
wait "$PID" 2>/dev/null || true
grep -qE "^ *fd $FD +stdio " "$T/info.out" || fail "fd $FD does not follow fd 2: $(grep ' fd ' "$T/info.out")"
restored std
grep -qx "via fd $FD" "$T/loader.out" || fail "fd $FD did not write where fd 2 now goes: $(cat "$T/loader.out")"
exit 0
