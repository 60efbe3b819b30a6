#!/usr/bin/env bash
# Shared memory that has a name: POSIX shm (/dev/shm), a file mapped
# shared and writable, and a memfd, mapped only or also still open (the
# descriptor and the mappings must be one object again), and a file of
# /dev/shm mapped, then deleted (python's multiprocessing semaphores): it
# comes back as one object, still a mapping of "PATH (deleted)", with no
# file left at PATH, also when a part of it is mapped nowhere (that part
# is saved too). A parent and two workers, each with a
# mapping of its own, keep counting in the one object after restart; the
# object has the checkpoint's content even when it was deleted (as in a
# fresh container) or overwritten after the checkpoint, and a restore
# while the checkpointed job still runs is refused, not shared with it.
. "$(dirname "$0")/lib.sh"

SHM=ibcr-shmfile-$$
FILE=$T/shared.dat
trap 'rm -f /dev/shm/$SHM /dev/shm/$SHM-del /dev/shm/$SHM-part; cleanup' EXIT

# round KIND PATH DAMAGE: checkpoint mid-run, kill, DAMAGE the object
# (a shell command), restore, and check the counting goes on.
round() {
	local kind=$1 path=$2 damage=$3 pid workers w before
	: >"$T/prog.out"
	start "$T/prog.out" "$PROGS/shared" 50 100 "$kind" "$path"
	pid=$PID
	wait_line "$T/prog.out" '^tick 5 '
	maps "$pid" >"$T/maps.before"
	workers=$(children_of "$pid")
	checkpoint "$pid" "$T/img.ckpt" --tree --kill
	case $kind in
	deleted*)	# a file object of the image: its bytes with it, the regions none
		if ! grep -qE "objfile-shared +0  /dev/shm$path \(deleted\)$" "$T/info.out" ||
			grep -F "/dev/shm$path (deleted)" "$T/info.out" | grep -vqE 'objfile-shared +0 '; then
			fail "$kind: the regions are not mappings of the file object: $(grep -F "/dev/shm$path" "$T/info.out")"
		fi ;;
	*)	[ "$(grep -c 'shmem *[1-9]' "$T/info.out")" = 1 ] ||
			fail "$kind: the object's content is not saved exactly once: $(grep shmem "$T/info.out")" ;;
	esac
	wait "$pid" 2>/dev/null || true
	for w in $workers; do
		while [ -e "/proc/$w" ]; do sleep 0.05; done
	done
	eval "$damage"
	restart "$T/img.ckpt"
	expect_pid "$pid" "$RPID"
	before=$(last_tick "$T/prog.out")
	wait_line "$T/prog.out" "^tick $((before + 3)) "
	maps "$RPID" >"$T/maps.after"
	wait "$LPID" || fail "$kind: restored program exited with status $?"
	grep -q FAIL "$T/prog.out" && fail "$kind: $(grep FAIL "$T/prog.out")"
	grep -q '^DONE' "$T/prog.out" || fail "$kind: program did not finish"
	assert_ticks_continuous "$T/prog.out"
	[ "${kind#deleted}" = "$kind" ] || [ ! -e "/dev/shm$path" ] ||
		fail "$kind: the restore left a file at /dev/shm$path"
	# a memfd no fd holds comes back as shared memory of another name
	[ "$kind" = memfd ] ||
		diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
		fail "$kind: memory layout changed: $(cat "$T/maps.diff")"
}

round posix "/$SHM" "rm /dev/shm/$SHM"
round file "$FILE" "dd if=/dev/urandom of=$FILE bs=64k count=64 conv=notrunc status=none"
round memfd "" ":"
round memfd-open "" ":"
round deleted "/$SHM-del" ":"
round deleted-part "/$SHM-part" ":"


# Restoring a copy while the job still runs would write into its memory.
start "$T/prog.out" "$PROGS/shared" 100 100 posix "/$SHM"
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
checkpoint "$pid" "$T/img.ckpt" --tree
if "$LOADER" --new-pids "$T/img.ckpt" >"$T/refused.out" 2>&1; then
	fail "a restore beside the running original was not refused"
fi
grep -q "/dev/shm/$SHM: mapped by running pid" "$T/refused.out" ||
	fail "refusal does not name the object: $(cat "$T/refused.out")"
exit 0
