#!/usr/bin/env bash
# A private mapping of a deleted file comes back as one: tests/progs/delmap
# maps a file twice (read-only page 0, read-write pages 1-3 with page 2
# rewritten), next to an anonymous region, and deletes the file. After
# saver --kill and restart both regions still show "PATH (deleted)" at
# their offsets, apart from the anonymous neighbour (the program checks,
# and /proc/PID/maps is the same), and dropping the rewritten page shows
# the file's own bytes again. A restore while a file has that name is
# refused, naming it, and the image restores once the name is free.
# A program whose executable is deleted comes back with its regions and
# /proc/PID/exe naming "PATH (deleted)" (exe was restart-loader's).
. "$(dirname "$0")/lib.sh"

DAT=$T/dir/mapped.dat
mkdir -p "$T/dir"
# maps without the inode (a file made again is another inode)
maps_named() { awk '{ print $1, $2, $3, $6, $7 }' "/proc/$1/maps"; }

start "$T/prog.out" "$PROGS/delmap" "$DAT" 60 50
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
grep -q "$DAT (deleted)" "/proc/$pid/maps" || fail "the program maps no deleted file"
maps_named "$pid" >"$T/maps.before"
checkpoint_kill "$pid" "$T/img.ckpt"
# both regions map the one file object the image keeps of the file
[ "$(grep -cE " objfile .*$DAT \(deleted\)$" "$T/info.out")" = 2 ] ||
	fail "the regions are not mappings of the file object: $(grep -F "$DAT" "$T/info.out")"

# the name taken: refused, and nothing is left behind
echo other >"$DAT"
if "$LOADER" "$T/img.ckpt" >"$T/refused.out" 2>&1; then
	fail "a restore while $DAT exists was not refused"
fi
grep -q "$DAT: the process mapped a deleted file of this name" "$T/refused.out" ||
	fail "the refusal does not name the file: $(cat "$T/refused.out")"
[ "$(cat "$DAT")" = other ] || fail "the refused restore changed $DAT"
rm "$DAT"

before=$(last_tick "$T/prog.out")
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 3)) "
maps_named "$RPID" >"$T/maps.after"
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "the program did not finish"
[ ! -e "$DAT" ] || fail "the restore left $DAT behind"
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "memory layout changed: $(cat "$T/maps.diff")"

cp "$PROGS/counter" "$T/dir/prog"
start "$T/exe.out" "$T/dir/prog" 60 50
pid=$PID
wait_line "$T/exe.out" '^tick 3 '
rm "$T/dir/prog"
[ "$(readlink "/proc/$pid/exe")" = "$T/dir/prog (deleted)" ] || fail "the executable is not deleted"
maps_named "$pid" >"$T/maps.before"
checkpoint_kill "$pid" "$T/exe.ckpt"
before=$(last_tick "$T/exe.out")
restart "$T/exe.ckpt"
wait_line "$T/exe.out" "^tick $((before + 3)) "
[ "$(readlink "/proc/$RPID/exe")" = "$T/dir/prog (deleted)" ] ||
	fail "/proc/PID/exe is $(readlink "/proc/$RPID/exe"), not $T/dir/prog (deleted)"
maps_named "$RPID" >"$T/maps.after"
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "the deleted executable's layout changed: $(cat "$T/maps.diff")"
wait "$LPID" || fail "the restored program exited with status $?: $(tail -n 2 "$T/exe.out")"
[ ! -e "$T/dir/prog" ] || fail "the restore left $T/dir/prog behind"
exit 0
