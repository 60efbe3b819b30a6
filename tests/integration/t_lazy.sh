#!/usr/bin/env bash
# restart-loader --lazy: the program runs again before its memory is in,
# the loader filling it behind (slowed by IBCR_LAZY_SLOW_MS so that the
# program's own work lands during the fill). The 64 MiB heap checks its
# sum every tick meanwhile; lazyevents moves, drops and unmaps memory,
# forks (a child that reads the memory still to come) and execs during
# the fill; a damaged page is found before it goes in and kills the
# program with the reason; IBCR_NO_UFFD=1 and a user without
# CAP_SYS_PTRACE get the eager fill; an image out of the page cache
# restores, lazily (its fill reading with direct I/O) and not; a tree
# runs on under --lazy (t_lazytree: its memory).
. "$(dirname "$0")/lib.sh"

# lazy_restart IMAGE [ARGS...]: restart IMAGE --lazy --stats -v, slowed.
lazy_restart() {
	local img=$1
	shift
	IBCR_LAZY_SLOW_MS=${SLOW:-10} LOADER_ARGS="--lazy --stats -v $*" \
		LOADER_ERR=$T/loader.err restart "$img"
}
filled() { grep -q '^ibcr-stats: lazy_fill_ms=' "$T/loader.err"; }

# 1. the heap, its sum checked every 20 ms: its first check after the
# resume reads memory still to come (faults served)
start "$T/prog.out" "$PROGS/heap" 100000 20
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
checkpoint_kill "$pid" "$T/heap.ckpt"
: >"$T/loader.err"
lazy_restart "$T/heap.ckpt"
expect_pid "$pid" "$RPID"
before=$(last_tick "$T/prog.out")
wait_line "$T/loader.err" '^ibcr-stats: lazy_fill_ms='
wait_line "$T/prog.out" "^tick $((before + 3)) pid $RPID\$"
grep -q FAIL "$T/prog.out" && fail "heap: $(grep FAIL "$T/prog.out")"
grep -q 'no lazy restore' "$T/loader.err" && fail "heap: not lazy: $(cat "$T/loader.err")"
# it ran on memory not yet there: its reads waited for the loader
faults=$(sed -n 's/^ibcr-stats: lazy_fill_ms=.* faults=\([0-9]*\).*/\1/p' "$T/loader.err")
[ "${faults:-0}" -gt 0 ] || fail "heap: no fault served: $(cat "$T/loader.err")"
kill_tree "$LPID"

# 2. memory changed, a fork and an exec during the fill
start "$T/ev.out" "$PROGS/lazyevents"
pid=$PID
wait_line "$T/ev.out" '^tick 3 '
checkpoint_kill "$pid" "$T/ev.ckpt"
: >"$T/loader.err"
SLOW=30 lazy_restart "$T/ev.ckpt"
kill -USR1 "$RPID"
wait_line "$T/ev.out" '^(EVENTS OK|FAIL)'
grep -q FAIL "$T/ev.out" && fail "lazyevents: $(grep FAIL "$T/ev.out")"
# traced by the loader at the time: the events came while it filled
grep -q '^EVENTS OK traced 1$' "$T/ev.out" ||
	fail "lazyevents: the events did not land during the fill: $(grep EVENTS "$T/ev.out")"
wait_line "$T/ev.out" "^exec tick 3 pid $RPID\$"
wait_line "$T/loader.err" '^ibcr-stats: lazy_fill_ms='
kill_tree "$LPID"

# 3. a damaged page: the heap is killed, with the region named
cp "$T/heap.ckpt" "$T/flip.ckpt"
region=$("$PROGS/imgtool" flip-region "$T/flip.ckpt" 70)
: >"$T/prog.out"; : >"$T/loader.err"
# (run directly: the process may be killed before restart() could see it)
IBCR_LAZY_SLOW_MS=10 timeout 120 "$LOADER" --lazy --stats -v "$T/flip.ckpt" \
	</dev/null >>"$T/prog.out" 2>>"$T/loader.err" && fail "damaged page: the loader exited 0"
grep -q "region $region.*corrupt (checksum mismatch), found after the resume: the restored process was killed" \
	"$T/loader.err" || fail "damaged page: no such message: $(cat "$T/loader.err")"
grep -q "region $region ()" "$T/loader.err" && fail "damaged page: the region has no name: $(cat "$T/loader.err")"
RPID=$(sed -n 's/^restart-loader: pid \([0-9]*\): image .*corrupt.*/\1/p' "$T/loader.err")
[ -n "$RPID" ] && kill -0 "$RPID" 2>/dev/null && fail "damaged page: the restored process $RPID runs on"

# 4. no userfaultfd (IBCR_NO_UFFD=1): filled before it runs, and says so
: >"$T/prog.out"; : >"$T/loader.err"
IBCR_NO_UFFD=1 lazy_restart "$T/heap.ckpt"
wait_line "$T/prog.out" "^tick $((before + 2)) pid $RPID\$"
grep -q 'no lazy restore' "$T/loader.err" || fail "IBCR_NO_UFFD=1: not said: $(cat "$T/loader.err")"
filled && fail "IBCR_NO_UFFD=1: a lazy fill ran"
kill_tree "$LPID"

# 5. cold: the image out of the page cache, lazily and not
for how in --lazy eager; do
	"$PROGS/imgtool" uncache "$T/heap.ckpt"
	cached=$("$PROGS/imgtool" cached "$T/heap.ckpt")
	[ "$cached" -le $((4 << 20)) ] || fail "cold: $cached bytes still cached"
	: >"$T/prog.out"; : >"$T/loader.err"
	if [ $how = --lazy ]; then
		lazy_restart "$T/heap.ckpt"
	else
		LOADER_ERR=$T/loader.err restart "$T/heap.ckpt"
	fi
	wait_line "$T/prog.out" "^tick $((before + 3)) pid $RPID\$"
	grep -q FAIL "$T/prog.out" && fail "cold $how: $(grep FAIL "$T/prog.out")"
	if [ $how = --lazy ]; then
		# the background fill read the cold heap with direct reads, as
		# the eager fill does, while the heap's sums went on right
		wait_line "$T/loader.err" '^ibcr-stats: lazy_fill_ms='
		direct=$(sed -n 's/^ibcr-stats: lazy_fill_ms=.* direct_kb=\([0-9]*\).*/\1/p' "$T/loader.err")
		[ "${direct:-0}" -ge $((32 << 10)) ] ||
			fail "cold --lazy: ${direct:-no} KiB read direct: $(cat "$T/loader.err")"
		before=$(last_tick "$T/prog.out")
		wait_line "$T/prog.out" "^tick $((before + 2)) pid $RPID\$"
		grep -q FAIL "$T/prog.out" && fail "cold $how, filled: $(grep FAIL "$T/prog.out")"
	fi
	kill_tree "$LPID"
done

# 6. as nobody (no CAP_SYS_PTRACE): kernel faults cannot wait, so eager
if [ "$(cat /proc/sys/vm/unprivileged_userfaultfd)" = 0 ]; then
	for_nobody
	start "$T/prog.out" "$PROGS/runas" 65534 65534 "$PROGS/heap" 100000 20
	pid=$PID
	wait_line "$T/prog.out" '^tick 3 '
	checkpoint_as_nobody "$pid" "$T/nobody.ckpt" --kill
	wait "$pid" 2>/dev/null || true
	: >"$T/loader.err"
	LOADER=$PROGS/runas LOADER_ARGS="65534 65534 $B/restart-loader --new-pids --lazy --stats -v" \
		LOADER_ERR=$T/loader.err restart "$T/nobody.ckpt"
	before=$(last_tick "$T/prog.out")
	wait_line "$T/prog.out" "^tick $((before + 2)) pid $RPID\$"
	grep -q 'no lazy restore (Operation not permitted)' "$T/loader.err" ||
		fail "nobody: not said: $(cat "$T/loader.err")"
	filled && fail "nobody: a lazy fill ran"
fi
# 7. a tree (t_lazytree checks its memory): runs on right under --lazy,
# no longer said to be filled before it runs
start "$T/fam.out" "$PROGS/family" 100000 20
pid=$PID
wait_line "$T/fam.out" '^tick 3 '
checkpoint "$pid" "$T/fam.ckpt" --tree --kill
wait "$pid" 2>/dev/null || true
: >"$T/loader.err"
LOADER_ARGS="--lazy --stats" LOADER_ERR=$T/loader.err restart "$T/fam.ckpt"
expect_pid "$pid" "$RPID"
before=$(last_tick "$T/fam.out")
wait_line "$T/fam.out" "^tick $((before + 3)) pid $RPID "
grep -q FAIL "$T/fam.out" && fail "tree: $(grep FAIL "$T/fam.out")"
grep -q "a lazy restore serves one process" "$T/loader.err" &&
	fail "tree: --lazy still said to be eager: $(cat "$T/loader.err")"
kill_tree "$LPID"
echo "ok $TEST_NAME"
