#!/usr/bin/env bash
# A file mapped shared is restored after its old device and inode numbers
# went to another file, as after a reboot (here: an ext4 file system, which
# gives a deleted file's inode to the next file made), and that other file
# is mapped by a process of another job. The restore must not take that
# process for the checkpointed job still running (it maps another file):
# the file comes back at its path and the counting goes on to the end.
. "$(dirname "$0")/lib.sh"
# the processes first (they map files of it), then the file system
unmount_cleanup() {
	local p
	for p in "${STARTED[@]}"; do kill_tree "$p"; done
	umount -l "$T/mnt" 2>/dev/null
	cleanup
}
trap unmount_cleanup EXIT
truncate -s 64M "$T/fs.img"
mkfs.ext4 -q -F "$T/fs.img" || fail "mkfs.ext4 failed"
mkdir -p "$T/mnt"
mount -o loop "$T/fs.img" "$T/mnt" || fail "cannot mount an ext4 image (loop)"
A=$T/mnt/a.dat
start "$T/prog.out" "$PROGS/shared" 60 100 file "$A"
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
ino=$(stat -c %i "$A")
checkpoint "$pid" "$T/img.ckpt" --tree --kill
for w in $(children_of "$pid") "$pid"; do
	while [ -e "/proc/$w" ]; do sleep 0.05; done
done
rm -f "$A"
start "$T/other.out" "$PROGS/shared" 1000 100 file "$T/mnt/b.dat"	# another job
wait_line "$T/other.out" '^tick 2 '
[ "$(stat -c %i "$T/mnt/b.dat")" = "$ino" ] ||
	fail "setup: ext4 did not give inode $ino again (b.dat has $(stat -c %i "$T/mnt/b.dat"))"
restart "$T/img.ckpt"
before=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((before + 3)) "
wait "$LPID" || fail "restored program exited with status $?: $(tail -n 3 "$T/prog.out")"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "the restored program did not finish"
assert_ticks_continuous "$T/prog.out"
grep -q FAIL "$T/other.out" && fail "the other job was harmed: $(grep FAIL "$T/other.out")"
exit 0
