#!/usr/bin/env bash
# restart-loader --lazy of a tree: a parent and three forked children,
# each with 32 MiB of its own and an 8 MiB region shared copy-on-write
# from before the forks (lazytree), run again before their memory is in,
# each process's fill slowed by IBCR_LAZY_SLOW_MS so that it still runs
# when they check every byte themselves; child 1 forks a grandchild
# during its fill (held until that fill ends: it reads what was still to
# come), child 2 execs during its own, child 3 runs /bin/true by vfork
# and exec (a traced process execs while its parent waits for it). The
# shared region is filled before they run, and the loader says so (-v
# names it). A live checkpoint during the fills is refused (the loader
# traces them), one once they are over restores again; a damaged
# page found during the fill kills every process of the tree, naming the
# region and the pid. As nobody (no CAP_SYS_PTRACE) the tree is filled
# before it runs, and the loader says so for every process.
. "$(dirname "$0")/lib.sh"

# lazy_restart IMAGE: restart IMAGE --lazy --stats -v, slowed.
lazy_restart() {
	IBCR_LAZY_SLOW_MS=${SLOW:-60} LOADER_ARGS="--lazy --stats -v" \
		LOADER_ERR=$T/loader.err restart "$1"
}
fills() { grep -c '^ibcr-stats: lazy_fill_ms=' "$T/loader.err" || true; }
# running PID: the process is there and no zombie
running() { [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
# gone PID: waits (up to 10 s: SIGKILL is not instant) until it runs no more
gone() {
	local i
	for ((i = 0; i < 200; i++)); do running "$1" || return 0; sleep 0.05; done
	return 1
}

start "$T/prog.out" "$PROGS/lazytree"
root=$PID
for c in 1 2 3; do wait_line "$T/prog.out" "^child $c pid "; done
for c in 0 1 2 3; do wait_line "$T/prog.out" "^tick 3 idx $c "; done
pids=("$root")
for c in 1 2 3; do
	pids+=("$(sed -n "s/^child $c pid \([0-9]*\)$/\1/p" "$T/prog.out")")
done
checkpoint "$root" "$T/tree.ckpt" --tree --kill
wait "$root" 2>/dev/null || true

# 1. lazily: every process checks its memory during its fill
: >"$T/loader.err"
lazy_restart "$T/tree.ckpt"
expect_pid "$root" "$RPID"
# once every process is back (tick lines after the restore), signalled
: >"$T/prog.out"
for c in 0 1 2 3; do wait_line "$T/prog.out" "^tick [0-9]* idx $c pid ${pids[$c]}\$"; done
# a live checkpoint during the fill is refused (the loader traces the
# tree: the checks below say that it still did after this), harmlessly
"$SAVER" --tree -o "$T/during.ckpt" "$RPID" 2>"$T/saver.err" &&
	fail "a checkpoint during the fill was not refused"
grep -q "pid [0-9]*: cannot attach: already traced by pid [0-9]* (restart-loader)" "$T/saver.err" ||
	fail "the checkpoint during the fill: not said why: $(cat "$T/saver.err")"
kill -USR1 "${pids[@]}"
for c in 0 1 3; do wait_line "$T/prog.out" "^CHECK OK idx $c "; done
wait_line "$T/prog.out" '^GRAND OK '
wait_line "$T/prog.out" "^exec tick 3 pid ${pids[2]}\$"
grep -q FAIL "$T/prog.out" && fail "lazy: $(grep -a FAIL "$T/prog.out")"
grep -q 'no lazy restore' "$T/loader.err" && fail "lazy: not lazy: $(cat "$T/loader.err")"
# every process checked (and the grandchild forked) while its fill ran
for c in 0 1 2 3; do
	grep -aq "^CHECK OK idx $c traced 1$" "$T/prog.out" ||
		fail "idx $c did not check during its fill: $(grep -a "CHECK OK idx $c" "$T/prog.out")"
done
grep -q '^GRAND OK traced 1$' "$T/prog.out" ||
	fail "the grandchild was not forked during the fill: $(grep -a GRAND "$T/prog.out")"
# the shared region: before the run, said so, and named with -v
grep -q "^restart-loader: --lazy: image .*tree.ckpt holds 4 processes: [0-9]* of their regions (.*), shared copy-on-write between them, are filled before they run" \
	"$T/loader.err" || fail "the eager shared regions are not said: $(cat "$T/loader.err")"
grep -q "^restart-loader: pid ${pids[1]}: region 0x[0-9a-f]*-0x[0-9a-f]* (.*): shared copy-on-write with its parent: filled before it runs" \
	"$T/loader.err" || fail "-v names no shared region of child 1: $(cat "$T/loader.err")"
# one fill per process, each over (child 2's ended at its exec)
for ((i = 0; i < 600 && $(fills) < 4; i++)); do sleep 0.05; done
[ "$(fills)" = 4 ] || fail "$(fills) lazy fills of 4 ended: $(cat "$T/loader.err")"
faults=$(sed -n 's/^ibcr-stats: lazy_fill_ms=.* faults=\([0-9]*\).*/\1/p' "$T/loader.err" |
	awk '{ s += $1 } END { print s + 0 }')
[ "$faults" -gt 0 ] || fail "no fault served: $(cat "$T/loader.err")"

# 2. a live checkpoint of the restored tree, the fills over: it runs on,
# and that image restores (lazily again) and checks right
for c in 0 1 3; do
	n=$(sed -n "s/^tick \([0-9]*\) idx $c .*/\1/p" "$T/prog.out" | tail -n 1)
	wait_line "$T/prog.out" "^tick $((n + 2)) idx $c pid ${pids[$c]}\$"
done
checkpoint "$RPID" "$T/live.ckpt" --tree
for c in 0 1 3; do
	n=$(sed -n "s/^tick \([0-9]*\) idx $c .*/\1/p" "$T/prog.out" | tail -n 1)
	wait_line "$T/prog.out" "^tick $((n + 2)) idx $c pid ${pids[$c]}\$"
done
grep -q FAIL "$T/prog.out" && fail "after the live checkpoint: $(grep -a FAIL "$T/prog.out")"
kill_tree "$LPID"
for p in "${pids[@]}"; do gone "$p" || fail "process $p of the tree runs on, killed"; done
: >"$T/loader.err"
SLOW=10 lazy_restart "$T/live.ckpt"
: >"$T/prog.out"
for c in 0 1 3; do wait_line "$T/prog.out" "^tick [0-9]* idx $c pid ${pids[$c]}\$"; done
wait_line "$T/prog.out" "^exec tick [0-9]* pid ${pids[2]}\$"
kill -USR1 "${pids[0]}" "${pids[1]}" "${pids[3]}"
for c in 0 1 3; do wait_line "$T/prog.out" "^CHECK OK idx $c "; done
wait_line "$T/prog.out" '^GRAND OK '
grep -q FAIL "$T/prog.out" && fail "live image: $(grep -a FAIL "$T/prog.out")"
kill_tree "$LPID"

# 3. a damaged page of the parent's: the whole tree is killed
cp "$T/tree.ckpt" "$T/flip.ckpt"
region=$("$PROGS/imgtool" flip-region "$T/flip.ckpt" 70)
for p in "${pids[@]}"; do gone "$p" || fail "process $p of the tree runs on, killed"; done
: >"$T/prog.out"; : >"$T/loader.err"
IBCR_LAZY_SLOW_MS=10 timeout 120 "$LOADER" --lazy --stats -v "$T/flip.ckpt" \
	</dev/null >>"$T/prog.out" 2>>"$T/loader.err" && fail "damaged page: the loader exited 0"
grep -q "^restart-loader: pid $root: image .*: region $region (.*).*corrupt (checksum mismatch), found after the resume: the 4 restored processes of the image were killed" \
	"$T/loader.err" || fail "damaged page: no such message: $(cat "$T/loader.err")"
for p in "${pids[@]}"; do
	gone "$p" || fail "damaged page: process $p of the tree runs on"
done

# 4. as nobody (no CAP_SYS_PTRACE): every process is filled before it
# runs, each says why, and the tree checks right; in a PID namespace of
# its own (--pid-ns), where nobody may have the children's pids back
# (their parents know them), and the signals go to the outer pids
if [ "$(cat /proc/sys/vm/unprivileged_userfaultfd)" = 0 ]; then
	for_nobody
	start "$T/prog.out" "$PROGS/runas" 65534 65534 "$PROGS/lazytree"
	pid=$PID
	for c in 0 1 2 3; do wait_line "$T/prog.out" "^tick 3 idx $c "; done
	root=$(sed -n 's/^tick [0-9]* idx 0 pid \([0-9]*\)$/\1/p' "$T/prog.out" | tail -n 1)
	pids=("$root")
	for c in 1 2 3; do
		pids+=("$(sed -n "s/^child $c pid \([0-9]*\)$/\1/p" "$T/prog.out")")
	done
	checkpoint_as_nobody "$root" "$T/nobody.ckpt" --tree --kill
	wait "$pid" 2>/dev/null || true
	: >"$T/loader.err"
	LOADER=$PROGS/runas LOADER_ARGS="65534 65534 $B/restart-loader --pid-ns --lazy --stats -v" \
		LOADER_ERR=$T/loader.err restart "$T/nobody.ckpt"
	: >"$T/prog.out"
	for c in 0 1 2 3; do wait_line "$T/prog.out" "^tick [0-9]* idx $c pid "; done
	now=() outer=()
	for c in 0 1 2 3; do
		now+=("$(grep -a "^tick [0-9]* idx $c pid " "$T/prog.out" | tail -n 1 | sed 's/.* pid //')")
		[ "${now[c]}" = "${pids[c]}" ] || fail "nobody: idx $c is pid ${now[c]} in its namespace, not ${pids[c]}"
		outer+=("$(grep -lP "^NSpid:\t[0-9]+\t${now[c]}\$" /proc/[0-9]*/status | cut -d/ -f3)")
	done
	kill -USR1 "${outer[@]}"
	for c in 0 1 3; do wait_line "$T/prog.out" "^CHECK OK idx $c traced 0$"; done
	wait_line "$T/prog.out" '^GRAND OK traced 0$'
	wait_line "$T/prog.out" "^exec tick 3 pid ${now[2]}\$"
	grep -q FAIL "$T/prog.out" && fail "nobody: $(grep -a FAIL "$T/prog.out")"
	[ "$(grep -c 'no lazy restore (Operation not permitted)' "$T/loader.err")" = 4 ] ||
		fail "nobody: not said for every process: $(cat "$T/loader.err")"
	grep -q '^ibcr-stats: lazy_fill_ms=' "$T/loader.err" && fail "nobody: a lazy fill ran"
	kill_tree "$LPID"
fi
echo "ok $TEST_NAME"
