#!/usr/bin/env bash
# Pages shared copy-on-write by a forked tree stay shared: a parent with
# 64 MiB and 14 workers, two of them with a child of their own, each
# descendant with one page rewritten and one dropped. Two cycles of
# saver --tree --kill and restart: every process still sees its own view
# (it checks every tick, and every word at the end), and the restored
# tree's memory (the sum of every process's Pss) stays near the
# original's, not 17 copies of 64 MiB. The second image is taken live,
# from snapshots, and compressed (the loader decodes the pages it builds
# the regions with).
. "$(dirname "$0")/lib.sh"

# tree_pss PID: the Pss of PID and its descendants, in kB.
tree_pss() {
	local sum=0 p kb c
	for p in "$1" $(descendants "$1"); do
		kb=$(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup")
		sum=$((sum + kb))
	done
	echo "$sum"
}
descendants() {
	local c
	for c in $(children_of "$1"); do echo "$c"; descendants "$c"; done
}
# tree_count PID: PID and its descendants.
tree_count() { echo $(($(descendants "$1" | wc -l) + 1)); }

start "$T/prog.out" "$PROGS/cowtree" 100000 100 64 14
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
[ "$(tree_count "$pid")" = 17 ] || fail "the tree has $(tree_count "$pid") processes, not 17"
pss0=$(tree_pss "$pid")
note "original tree: Pss ${pss0} kB"
# the layout of every process: regions moved into place are the same VMAs
tree_maps() {
	local p
	for p in "$1" $(descendants "$1"); do maps "$p"; done
}
for cycle in 1 2; do
	tree_maps "$pid" >"$T/maps.before"
	all=$(descendants "$pid")
	# the second: live (from snapshots of all 17, the tree running on),
	# compressed, the originals killed only then
	opts=(--tree --kill)
	[ "$cycle" = 1 ] || opts=(--tree --compress --stats)
	checkpoint "$pid" "$T/img.ckpt" "${opts[@]}"
	if [ "$cycle" = 2 ]; then
		grep -q 'snapshot_ms=0.0 ' "$T/saver.err" && fail "cycle 2: no snapshot: $(cat "$T/saver.err")"
		kill -9 "$pid" $all
	fi
	[ "$(grep -c 'anon+cow ' "$T/info.out")" -ge 16 ] && grep -q 'anon+cowsrc ' "$T/info.out" ||
		fail "cycle $cycle: ckpt-info shows no shared pages: $(grep -c 'anon+cow' "$T/info.out")"
	wait "$pid" 2>/dev/null || true
	for p in $all; do
		while [ -e "/proc/$p" ]; do sleep 0.05; done
	done
	before=$(last_tick "$T/prog.out")
	restart "$T/img.ckpt"
	expect_pid "$pid" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 5)) "
	grep -q FAIL "$T/prog.out" && fail "cycle $cycle: $(grep FAIL "$T/prog.out")"
	[ "$(tree_count "$RPID")" = 17 ] ||
		fail "cycle $cycle: the restored tree has $(tree_count "$RPID") processes"
	tree_maps "$RPID" >"$T/maps.after"
	diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
		fail "cycle $cycle: memory layout changed: $(head -n 20 "$T/maps.diff")"
	pss=$(tree_pss "$RPID")
	note "cycle $cycle: restored tree: Pss ${pss} kB"
	[ "$pss" -le $((pss0 * 5 / 4 + 8192)) ] ||
		fail "cycle $cycle: the restored tree takes Pss ${pss} kB, the original ${pss0} kB: its copy-on-write sharing is lost"
	pid=$RPID
	STARTED+=("$LPID")
done
kill -USR1 "$pid"
wait "$LPID" || fail "restored tree exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "the tree did not finish"
assert_ticks_continuous "$T/prog.out"
exit 0
