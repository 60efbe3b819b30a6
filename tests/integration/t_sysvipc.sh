#!/usr/bin/env bash
# SysV semaphores and message queues come back with their ids, keys,
# values and queued messages. A parent and its child share a semaphore
# set (a mutex and a count of queued messages) and a queue; the child
# sleeps first, so several messages wait in the queue at the checkpoint
# (--stop: the live values must be the saved ones, and the queue still
# full: the saver only copies messages). Restored after ipcrm (created
# again with the same ids), and again while they still exist, meddled
# with (reused, their contents reset), the message sequence goes on
# without loss or duplicate and the shared counter ends right. A set of
# another key at the saved id stops the restore before anything starts.
#
# A set that no process of the image used is left out, unless
# --sysv-ipc=all asks for every object the processes may use. In an IPC
# namespace of its own, so that such a checkpoint (as root: everything)
# by another test on this machine cannot hold ours.
[ -n "${IBCR_OWN_IPC:-}" ] || IBCR_OWN_IPC=1 exec unshare -i bash "$0" "$@"
. "$(dirname "$0")/lib.sh"

N=50
start "$T/prog.out" "$PROGS/sysvipc" "$N" 100 3000
pid=$PID
sem= msq= key= child=
ipc_cleanup() {
	local c
	cleanup
	for c in ${child:-}; do	# orphaned when its parent failed
		[ "$(cat "/proc/$c/comm" 2>/dev/null)" != sysvipc ] || kill -9 "$c"
	done
	if [ -n "$sem" ]; then	# SysV objects outlive their processes
		"$PROGS/sysvipc" rm "$sem" "$msq" 2>/dev/null || true
	fi
	return 0
}
trap ipc_cleanup EXIT
wait_line "$T/prog.out" '^tick 0 '
read -r sem msq key < <(sed -n 's/^tick 0 pid [0-9]* sem \([0-9]*\) msg \([0-9]*\) key \(0x[0-9a-f]*\) .*/\1 \2 \3/p' "$T/prog.out")
[ -n "$key" ] || fail "no ids in the first tick line"
wait_line "$T/prog.out" '^tick 7 '
child=$(children_of "$pid")
[ -n "$child" ] || fail "sysvipc did not start its child"

# ipc_line KIND ID: key and id as /proc/sysvipc (what ipcs reads) shows them
ipc_line() { awk -v id="$2" '$2 == id { print $1, $2 }' "/proc/sysvipc/$1"; }
sem_line=$(ipc_line sem "$sem")
msg_line=$(ipc_line msg "$msq")
[ -n "$sem_line" ] && [ -n "$msg_line" ] || fail "semaphore set $sem or queue $msq not in /proc/sysvipc"

# a set nobody in the image ever used: not theirs to save, unless asked
other=$((sem + 100))
"$PROGS/sysvipc" squat "$other" 0x2c2c2c2c >/dev/null || fail "could not make set $other"
checkpoint "$pid" "$T/all.ckpt" --tree --sysv-ipc=all
grep -q "^sysv sem id $other " "$T/info.out" ||
	fail "--sysv-ipc=all left out set $other: $(grep '^sysv' "$T/info.out")"
checkpoint "$pid" "$T/img.ckpt" --tree --stop
grep -q "^sysv sem id $other " "$T/info.out" &&
	fail "set $other, which no process of the image used, is in the image"
"$PROGS/sysvipc" rm "$other" -1
# stopped: what the objects hold now is what the image must hold
live=$("$PROGS/sysvipc" show "$sem" "$msq")
read -r _ mutex items _ queued _ bytes <<<"$live"
[ "$queued" -ge 3 ] || fail "only $queued messages queued at the checkpoint: $live"
grep -q '^recv' "$T/prog.out" && fail "the child received before the checkpoint: too slow a machine?"
grep -q "^sysv sem id $sem  *key $key .* values $mutex $items\$" "$T/info.out" ||
	fail "the image's semaphore set is not the live one ($live): $(grep '^sysv' "$T/info.out")"
grep -q "^sysv msg id $msq  *key 0x00000000 .* messages $queued ($bytes bytes)\$" "$T/info.out" ||
	fail "the image's queue is not the live one ($live): $(grep '^sysv' "$T/info.out")"
cp "$T/prog.out" "$T/prog.ckpt"

# gone PID...: waits until none of them exists (init reaps orphans)
gone() {
	local p i
	for p in "$@"; do
		for ((i = 0; i < 200; i++)); do
			[ -e "/proc/$p" ] || break
			sleep 0.05
		done
		[ ! -e "/proc/$p" ] || fail "pid $p is still there"
	done
}
kill -9 "$pid" "$child"
wait "$pid" 2>/dev/null || true
gone "$pid" "$child"

# seq_of WORD: the numbers of the "WORD N" lines run 0..N-1, once each
seq_of() {
	local want=0 n
	while read -r n; do
		[ "$n" = "$want" ] || fail "$1 $n where $1 $want was expected (loss or duplicate)"
		want=$((want + 1))
	done < <(sed -n "s/^$1 \\([0-9]*\\) .*/\\1/p" "$T/prog.out")
	[ "$want" = "$N" ] || fail "$want $1 lines, $N expected"
}

# run_restored WHAT: restores the image and checks the run to its end
run_restored() {
	cat "$T/prog.ckpt" >"$T/prog.out"	# the output as it was at the checkpoint
	restart "$T/img.ckpt"
	expect_pid "$pid" "$RPID"
	[ "$(ipc_line sem "$sem")" = "$sem_line" ] ||
		fail "$1: semaphore set: '$(ipc_line sem "$sem")', was '$sem_line' (key, id)"
	[ "$(ipc_line msg "$msq")" = "$msg_line" ] ||
		fail "$1: queue: '$(ipc_line msg "$msq")', was '$msg_line' (key, id)"
	# a wrong count or message can also leave one side waiting forever
	wait_line "$T/prog.out" '^(DONE|FAIL)' 60
	grep -q FAIL "$T/prog.out" && fail "$1: $(grep FAIL "$T/prog.out")"
	wait "$LPID" || fail "$1: the restored program exited with status $?"
	grep -q "^DONE pid $pid counter $((2 * N))\$" "$T/prog.out" ||
		fail "$1: no DONE with counter $((2 * N)): $(grep DONE "$T/prog.out")"
	assert_ticks_continuous "$T/prog.out"
	seq_of tick
	seq_of recv
	[ -z "$(ipc_line sem "$sem")$(ipc_line msg "$msq")" ] ||
		fail "$1: the program removed its objects, they are still there"
}

# ipcrm, or where there is none (the arm64 guest's busybox) the same calls
if command -v ipcrm >/dev/null; then
	ipcrm -s "$sem" -q "$msq" || fail "ipcrm failed"
else
	"$PROGS/sysvipc" rm "$sem" "$msq"
fi
[ -z "$(ipc_line sem "$sem")$(ipc_line msg "$msq")" ] || fail "ipcrm left them"
run_restored "after ipcrm"

# Again, killed on the way: the objects stay, with other contents; and
# with a stray message and a wrong count, which the restore must undo.
cat "$T/prog.ckpt" >"$T/prog.out"
restart "$T/img.ckpt"
wait_line "$T/prog.out" '^tick 10 '
kill -9 "$RPID" "$child"	# the child has its pid again: no slow search before it ends
wait "$LPID" 2>/dev/null || true
gone "$pid" $child
"$PROGS/sysvipc" meddle "$sem" "$msq" || fail "could not meddle with the objects"
[ "$("$PROGS/sysvipc" show "$sem" "$msq")" != "$live" ] || fail "the meddling changed nothing"
run_restored "reusing them"

# A set of another key at the saved id: refused, naming both, before any
# change (the queue is not made) and before any process starts.
"$PROGS/sysvipc" squat "$sem" 0x1b1b1b1b >/dev/null || fail "could not take id $sem"
msg=$(timeout 60 "$LOADER" "$T/img.ckpt" 2>&1 </dev/null) && fail "restored over another set: $msg"
echo "$msg" | holds "semaphore set $sem (key $key) cannot be restored: id $sem is taken by another semaphore set, key 0x1b1b1b1b" ||
	fail "the refusal does not say why: $msg"
[ -z "$(ipc_line msg "$msq")" ] || fail "the refused restore made queue $msq"
[ ! -e "/proc/$pid" ] || fail "the refused restore started pid $pid"
exit 0
