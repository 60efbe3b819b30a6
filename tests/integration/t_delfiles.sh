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
# - a deleted file open and mapped shared and private, and one mapped
#   shared only: the mappings are of that very file again (a shared
#   mapping of a deleted file was refused, a private one a copy);
# - a directory removed while open, and a removed working directory:
#   removed directories again, under their names (the saver took them,
#   the loader refused them: "does not exist");
# - a restore while a file has a deleted file's name (open, or mapped)
#   is refused, naming it, and leaves that file as it was: the deleted
#   file comes back under its own name or not at all (it came back
#   under another one, "#INODE", when the name was taken).
# Each mode first runs without a checkpoint: its checks pass.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gate.sh"

gate_mode delfiles holes
grep -qE "^ *fd 3 +deleted .* \(8192 bytes in it\) in 2 extent" "$T/delfiles.holes/info" ||
	fail "the deleted file's holes were saved: $(grep ' fd ' "$T/delfiles.holes/info")"
gate_mode delfiles big
gate_mode delfiles big live
gate_mode delfiles shared --tree
[ "$(grep -cE ' fd [0-9]+ +(deleted|memfd) .*\(the file of obj [0-9]+\)' "$T/delfiles.shared/info")" = 2 ] ||
	fail "the child's descriptions are not of the parent's files: $(grep ' fd ' "$T/delfiles.shared/info")"
gate_mode delfiles linked
gate_mode delfiles exec
gate_mode delfiles mapped
gate_mode delfiles mapped live
grep -qE " objfile-shared .*/m \\(deleted\\)" "$T/delfiles.mapped/info" ||
	fail "the shared mapping is not of the file object: $(grep deleted "$T/delfiles.mapped/info")"
gate_mode delfiles deldir
for mode in holes linked exec deldir; do
	gate_mode_nobody delfiles $mode
done
# refused_name DIR NAME HOW: DIR/img refused while DIR/NAME is taken
refused_name() {
	echo other >"$1/$2"
	if "$LOADER" "$1/img" >"$1/refused.out" 2>&1; then
		fail "a restore while $1/$2 exists was not refused"
	fi
	grep -qF "$1/$2: the process $3 a deleted file of this name, and a file of this name exists now" "$1/refused.out" ||
		fail "the refusal does not name $1/$2: $(cat "$1/refused.out")"
	[ "$(cat "$1/$2")" = other ] || fail "the refused restore changed $1/$2"
	rm "$1/$2"
}
refused_name "$T/delfiles.big" big "had open"
refused_name "$T/delfiles.mapped" m mapped
grep -qE "^ *fd 4 +deldir .*/delfiles.deldir/d$" "$T/delfiles.deldir/info" || fail "fd 4 is not a removed directory: $(grep ' fd ' "$T/delfiles.deldir/info")"
grep -qE "^ *fd 3 +file .*/delfiles.linked/b$" "$T/delfiles.linked/info" || fail "fd 3 is not saved as the file b: $(grep ' fd ' "$T/delfiles.linked/info")"
exit 0
