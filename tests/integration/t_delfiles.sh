#!/usr/bin/env bash
# Deleted files and memfds come back as the files they were
# (tests/progs/delfiles checks from inside, after the restore):
# - holes stay holes (SEEK_DATA/SEEK_HOLE, blocks used), mode, owner (as
#   root), access and modification times to the nanosecond;
# - a deleted file of 70 MiB of data (more than the 64 MiB once refused),
#   every page, at its offset; saved live too (the process then stays
#   stopped while the image is written: the file has no snapshot);
# - a deleted file and a memfd opened again by a child through /proc (two
#   open file descriptions, one file): one file after the restore, not a
#   copy each (saved once: the image says so);
# - a deleted file that has a second name: the descriptor is that name;
# - a memfd holding a program: execveat() on it works (ETXTBSY before:
#   the restored descriptor was a reopening, which holds write access);
# - a directory removed while open, and a removed working directory:
#   removed directories again, under their names (the saver took them,
#   the loader refused them: "does not exist").
# Each mode first runs without a checkpoint: its checks pass.
. "$(dirname "$0")/lib.sh"

run_mode() {
	local mode=$1 live=${2:-} d="$T/$1${2:-}" tree=
	[ "$mode" = shared ] && tree=--tree
	mkdir "$d" "$d.plain"
	cd "$d.plain"
	start "$d.plain/out" "$PROGS/delfiles" "$mode"
	wait_line "$d.plain/out" '^ready '
	touch go
	wait "$PID" || fail "$mode without a checkpoint: $(cat "$d.plain/out")"
	cd "$d"
	start "$d/out" "$PROGS/delfiles" "$mode"
	pid=$PID
	wait_line "$d/out" '^ready '
	kids=$(children_of "$pid")
	if [ -n "$live" ]; then
		checkpoint "$pid" "$d/img" $tree
		kill -9 "$pid"
		wait "$pid" 2>/dev/null || true
	else
		checkpoint "$pid" "$d/img" --kill $tree
		wait "$pid" 2>/dev/null || true
	fi
	cp "$T/info.out" "$d/info"
	for k in $kids; do	# killed too (--tree): its pid free again
		while [ -e "/proc/$k" ]; do sleep 0.05; done
	done
	restart "$d/img"
	expect_pid "$pid" "$RPID"
	touch go
	wait "$LPID" || fail "$mode$live: restored program failed (status $?): $(cat "$T/loader.out"; tail -n 3 "$d/out")"
	grep -q "^DONE pid $RPID" "$d/out" || fail "$mode$live: the restored program did not finish: $(tail -n 3 "$d/out")"
	cd "$T"
}

run_mode holes
grep -qE "^ *fd 3 +deleted .* \(8192 bytes in it\) in 2 extent" "$T/holes/info" ||
	fail "the deleted file's holes were saved: $(grep ' fd ' "$T/holes/info")"
run_mode big
run_mode big live
run_mode shared
[ "$(grep -cE ' fd [0-9]+ +(deleted|memfd) .*\(the file of obj [0-9]+\)' "$T/shared/info")" = 2 ] ||
	fail "the child's descriptions are not of the parent's files: $(grep ' fd ' "$T/shared/info")"
run_mode linked
run_mode exec
run_mode deldir
grep -qE "^ *fd 4 +deldir .*/deldir/d$" "$T/deldir/info" || fail "fd 4 is not a removed directory: $(grep ' fd ' "$T/deldir/info")"
grep -qE "^ *fd 3 +file .*/linked/b$" "$T/linked/info" || fail "fd 3 is not saved as the file b: $(grep ' fd ' "$T/linked/info")"
exit 0
