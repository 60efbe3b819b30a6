#!/usr/bin/env bash
# python3's multiprocessing, unmodified: two worker processes forked by
# the parent count under a multiprocessing.Lock into a shared Value. Its
# semaphores are files of /dev/shm mapped shared and deleted at once
# (sem_open, sem_unlink), so the tree holds shared mappings of deleted
# files and no descriptor of them. Two cycles of saver --tree --kill and
# restart: the counting goes on in the one shared Value (the parent
# checks it moves), the lock still excludes (the workers check the count
# they saw), and the parent's mappings still show "/dev/shm/sem.* (deleted)".
# The Value lives in a heap arena, a deleted /dev/shm file that python
# keeps open too: the descriptor and the mapping are one file again.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || fail "$PY is not installed"
start "$T/prog.out" "$PY" -c '
import multiprocessing as mp, os, sys, time
def work(lock, count, stop, bad):
    while not stop.is_set():
        with lock:
            v = count.value
            time.sleep(0.001)
            if count.value != v:
                bad.value = 1
            count.value = v + 1
        time.sleep(0.004)
if __name__ == "__main__":
    mp.set_start_method("fork")
    lock, stop = mp.Lock(), mp.Event()
    count, bad = mp.Value("l", 0, lock=False), mp.Value("i", 0, lock=False)
    ws = [mp.Process(target=work, args=(lock, count, stop, bad)) for _ in range(2)]
    for w in ws: w.start()
    last, still = -1, 0
    for n in range(120):
        c = count.value
        still = still + 1 if c == last else 0
        last = c
        if still >= 20 or bad.value:
            print(f"FAIL tick {n}: count {c} stood still or the lock let two in", flush=True)
            sys.exit(1)
        print(f"tick {n} pid {os.getpid()} count {c}", flush=True)
        time.sleep(0.05)
    stop.set()
    for w in ws:
        w.join()
        if w.exitcode:
            print(f"FAIL worker exit {w.exitcode}", flush=True); sys.exit(1)
    print(f"DONE pid {os.getpid()}", flush=True)
'
# same_arena PID: its fd of the deleted arena file is the file it maps.
same_arena() {
	local fd map ino_fd ino_map
	for fd in /proc/$1/fd/*; do
		[[ "$(readlink "$fd")" == /dev/shm/pym-*" (deleted)" ]] && break
		fd=
	done
	[ -n "$fd" ] || fail "pid $1 has no descriptor of its heap arena"
	map=$(awk '$6 ~ /^\/dev\/shm\/pym-/ { print $1; exit }' "/proc/$1/maps")
	[ -n "$map" ] || fail "pid $1 does not map its heap arena"
	ino_fd=$(stat -L -c %d:%i "$fd")
	ino_map=$(stat -L -c %d:%i "/proc/$1/map_files/$map")
	[ "$ino_fd" = "$ino_map" ] ||
		fail "pid $1: the arena's descriptor ($ino_fd) and mapping ($ino_map) are two files"
}

pid=$PID
wait_line "$T/prog.out" '^tick 5 '
same_arena "$pid"
grep -q '/dev/shm/sem\..* (deleted)' "/proc/$pid/maps" ||
	fail "python's semaphores are not mapped deleted files here: $(grep /dev/shm "/proc/$pid/maps")"
for cycle in 1 2; do
	maps "$pid" >"$T/maps.before"
	workers=$(children_of "$pid")
	checkpoint "$pid" "$T/img.ckpt" --tree --kill
	wait "$pid" 2>/dev/null || true
	for w in $workers; do
		while [ -e "/proc/$w" ]; do sleep 0.05; done
	done
	before=$(last_tick "$T/prog.out")
	restart "$T/img.ckpt"
	expect_pid "$pid" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 5)) "
	maps "$RPID" >"$T/maps.after"
	diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
		fail "cycle $cycle: memory layout changed: $(cat "$T/maps.diff")"
	same_arena "$RPID"
	pid=$RPID
	[ "$cycle" = 2 ] || STARTED+=("$LPID")
done
wait "$LPID" || fail "restored python exited with status $?"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "python did not finish"
assert_ticks_continuous "$T/prog.out"
exit 0
