#!/usr/bin/env bash
# File state that cannot be saved faithfully is refused, in one line that
# names the pid, the fd and the cause, with no image left and the process
# running on: an inotify with an unread event, a deleted file that
# still has another name, too far from the process to be found, a memfd that
# is also mapped shared (the mapping and the fd would come back apart), a
# file under /proc/PID of the process itself (another pid's at restore),
# a POSIX message queue (it looks like a regular file "/NAME": it was
# saved as one, and the restore opened another file or none), a fanotify
# group, an aio context (its ring region is named, fd 3 is an eventfd).
# And a deleted file whose directory is gone at restore: restart-loader
# says which, nothing runs; with the directory back, the file comes back
# with its bytes and offset (tests/progs/fdholder checks).
. "$(dirname "$0")/lib.sh"

cd "$T"
problems=()

# refuse KIND REGEX...: saver on fdholder KIND fails as described.
refuse() {
	local kind=$1 st=0 re n
	shift
	mkdir "$T/$kind" && cd "$T/$kind"
	start "$T/$kind.out" "$PROGS/fdholder" "$kind"
	wait_line "$T/$kind.out" '^tick 2 '
	"$SAVER" -o "$T/$kind.img" "$PID" >"$T/$kind.stdout" 2>"$T/$kind.stderr" || st=$?
	[ $st != 0 ] || problems+=("$kind: saver succeeded")
	[ "$(wc -l <"$T/$kind.stderr")" = 1 ] || problems+=("$kind: not one line: $(cat "$T/$kind.stderr")")
	for re in "pid $PID\b" $([ "$kind" = aio ] || echo "fd 3\b") "$@"; do
		grep -qiE -- "$re" "$T/$kind.stderr" || problems+=("$kind: message lacks /$re/: $(cat "$T/$kind.stderr")")
	done
	ls "$T/$kind.img"* >/dev/null 2>&1 && problems+=("$kind: an image was left")
	n=$(last_tick "$T/$kind.out")
	wait_line "$T/$kind.out" "^tick $((n + 2)) " 10
	kill -9 "$PID"
	cd "$T"
}

refuse inotify-unread "inotify" "unread event"
refuse deleted-linked-far "deleted" "other name" "none of them found"
refuse memfd-sealed "memfd" "sealed against writing" "mapped shared"
refuse proc-self "/proc/[0-9]+/stat" "process in the checkpoint"
refuse proc-self-dir "/proc/[0-9]+/fd\b" "process in the checkpoint"
refuse mqueue "POSIX message queue /ibcr-test-[0-9]+.* \(mq_open\)" "not supported"
refuse fanotify "fanotify" "not supported"
refuse aio "aio context \(io_setup\)" "not supported"
[ ${#problems[@]} = 0 ] || fail "$(printf '%s\n' "${problems[@]}")"

# deleted file, its directory gone at restore, then back
mkdir "$T/del" && cd "$T/del"
start "$T/del.out" "$PROGS/fdholder" deleted 40 50
pid=$PID
wait_line "$T/del.out" '^tick 2 '
cd "$T"
checkpoint_kill "$pid" "$T/del.img"
grep -qE "^ *fd 3 +deleted .*$T/del/sub/f \(6 bytes in it\)" "$T/info.out" ||
	fail "the deleted file is not in the image: $(grep ' fd ' "$T/info.out")"
rm -r "$T/del/sub"
st=0
timeout 30 "$LOADER" "$T/del.img" >"$T/gone.out" 2>&1 || st=$?
[ $st = 1 ] || fail "restart-loader with the directory gone: status $st ($(cat "$T/gone.out"))"
grep -q "deleted file $T/del/sub/f: .* in $T/del/sub: No such file" "$T/gone.out" ||
	fail "restart-loader did not say which directory is missing: $(cat "$T/gone.out")"
[ -e "/proc/$pid" ] && fail "a process runs as $pid after the refused restore"
mkdir "$T/del/sub"
before=$(last_tick "$T/del.out")
restart "$T/del.img"
wait_line "$T/del.out" "^tick $((before + 3)) "
[[ "$(readlink "/proc/$RPID/fd/3")" == "$T/del/sub/"*" (deleted)" ]] ||
	fail "fd 3 is $(readlink "/proc/$RPID/fd/3"), not a deleted file in $T/del/sub"
[ -z "$(ls -A "$T/del/sub")" ] || fail "the deleted file has a name: $(ls -A "$T/del/sub")"
wait "$LPID" || fail "restored fdholder exited with status $?: $(tail -n 2 "$T/del.out")"
grep -q FAIL "$T/del.out" && fail "$(grep FAIL "$T/del.out")"
grep -q '^DONE' "$T/del.out" || fail "fdholder did not finish"
assert_ticks_continuous "$T/del.out"
exit 0
